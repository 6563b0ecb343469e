import type { BillingLedger, BillingTransaction } from './ports/billing-ledger.js';
import type { Process } from './records.js';

/**
 * Who wrote an audit row (DESIGN 12): a person (the JWT `sub`), a scheduled system path, or the
 * outside event that caused the write, named by its source and id.
 */
export const SYSTEM_ACTORS = {
  collections: 'system:collections',
  pauseRun: 'system:pause-run',
  reconciliation: 'system:reconciliation',
} as const;

export type EventSource = 'stripe' | 'ach' | 'membership' | 'balance';

export function eventActor(source: EventSource, eventId: string): string {
  return `${source}:${eventId}`;
}

/** A scheduled run's actor: the pause run advances PAUSED periods, every other process collects. */
export function scheduledActor(process: Process): string {
  return process === 'PAUSE' ? SYSTEM_ACTORS.pauseRun : SYSTEM_ACTORS.collections;
}

/**
 * The ledger as one entry point writes through it: every audit row that names no actor gets
 * `actor`, so the successor, failure and outcome rows a use case writes name who caused them too.
 * A row that names its actor (a person's action inside a run) keeps it.
 */
export function actedBy<L extends BillingLedger>(ledger: L, actor: string): L {
  const stamp = <R extends { actor?: string | undefined }>(row: R): R => (row.actor === undefined ? { ...row, actor } : row);
  const stampTx = (tx: BillingTransaction): BillingTransaction => ({
    ...tx,
    history: tx.history.map(stamp),
    ...(tx.createIfAbsent ? { createIfAbsent: { ...tx.createIfAbsent, history: stamp(tx.createIfAbsent.history) } } : {}),
  });
  const overrides: Partial<BillingLedger> = {
    commit: (tx) => ledger.commit(stampTx(tx)),
    addAll: (records, history) => ledger.addAll(records, history.map(stamp)),
    recordBillingFailure: (read, after, history) => ledger.recordBillingFailure(read, after, stamp(history)),
  };
  return new Proxy(ledger, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof BillingLedger];
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
