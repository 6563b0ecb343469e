import type { MoneyMovement } from '../money-movements.js';
import type { Clock } from '../ports/clock.js';
import type { MoneyMovementStore } from '../ports/money-movements.js';
import type { ProcessorReport } from '../ports/processor-report.js';
import type { ReconciliationEvents, ReconciliationRun, ReconciliationStore } from '../ports/reconciliation.js';
import { matchDay, type MatchResult, type ProcessorMovement } from '../reconciliation/match.js';
import type { PaymentMethod } from '../records.js';
import { formatInstant } from '../time.js';

export interface ReconcileDeps {
  readonly clock: Clock;
  readonly movements: Pick<MoneyMovementStore, 'listDay'>;
  /** The processor's report for each rail. */
  readonly reports: Readonly<Record<PaymentMethod, ProcessorReport>>;
  readonly reconciliation: ReconciliationStore;
  readonly events: ReconciliationEvents;
}

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` shifted by whole days. */
export function shiftDay(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** Both sides of one rail's day and its neighbours: the matcher's window. */
async function window(deps: ReconcileDeps, rail: PaymentMethod, day: string): Promise<{ ours: MoneyMovement[]; theirs: ProcessorMovement[] }> {
  const days = [shiftDay(day, -1), day, shiftDay(day, 1)];
  const ours = (await Promise.all(days.map((d) => deps.movements.listDay(rail, d)))).flat();
  const theirs: ProcessorMovement[] = [];
  const from = `${days[0]}T00:00:00Z`;
  const to = `${shiftDay(day, 2)}T00:00:00Z`;
  let cursor: string | null = null;
  do {
    const page = await deps.reports[rail].page(rail, from, to, cursor);
    theirs.push(...page.items);
    cursor = page.next;
  } while (cursor !== null);
  return { ours, theirs };
}

/**
 * Reconciles one rail's UTC day: reads our movements and the processor's report, matches them, and
 * upserts the run and its exceptions (a resolution stays); events go out for new exceptions only.
 */
export async function reconcileDay(deps: ReconcileDeps, rail: PaymentMethod, day: string): Promise<{ run: ReconciliationRun; result: MatchResult; created: readonly string[] }> {
  const { ours, theirs } = await window(deps, rail, day);
  const result = matchDay(rail, day, ours, theirs);
  const at = formatInstant(deps.clock.now());
  const { exceptions, ...totals } = result;
  const run: ReconciliationRun = { ...totals, date: day, rail, status: 'completed', completed_at: at, exception_ids: exceptions.map((e) => e.exception_id) };
  const { created } = await deps.reconciliation.saveRun(run, exceptions, at);
  const fresh = new Set(created);
  for (const exception of exceptions) {
    if (fresh.has(exception.exception_id) && !exception.known) await deps.events.exception({ ...exception, date: day, first_seen_at: at, last_seen_at: at });
  }
  await deps.events.completed(run);
  return { run, result, created };
}
