import { loanRetryMessage, messageIdOf, type BillingPeriodMessage, type CollectionMessage, type CollectionProcess } from '../collections.js';
import { COLLECTION_SCANS, decideCollection } from '../due-work.js';
import type { BillingStore } from '../ports/billing-store.js';
import type { Clock } from '../ports/clock.js';
import type { PaymentsStore } from '../ports/loan-payments.js';
import type { BillingRecord, BillingStatus, PaymentMethod } from '../records.js';
import { formatInstant } from '../time.js';

export interface CollectionsSummary {
  enqueued: number;
  skipped_waiting: number;
  skipped_parked: number;
  /** Of `enqueued`: loan payments in RETRY whose next attempt is due (DESIGN 2.7). */
  loan_retries_enqueued: number;
  truncated: boolean;
  /** Due periods left in the due-index because their processor's circuit is open (DESIGN 15). */
  skipped_outage?: number;
  /** The services whose circuit was open when the run read them. */
  processor_outage?: readonly string[];
}

export interface FailingCounts {
  retrying: number;
  parked: number;
}

export interface PlanCollectionsOptions {
  /** Records per page (of the due billing records, and of the due loan payments). */
  readonly pageSize?: number;
  /** Asked before each page is read; false stops the run cleanly (the summary says truncated). */
  readonly shouldContinue: () => boolean;
  /** Sends one page's messages; it is always awaited in full before the run stops. */
  readonly send: (messages: readonly CollectionMessage[]) => Promise<void>;
  /** A payment on this rail would meet an open circuit (DESIGN 15): its periods wait in the due-index, uncounted. */
  readonly railBlocked?: (rail: PaymentMethod) => boolean;
}

export interface CollectionsPlan {
  readonly summary: CollectionsSummary;
  /** Live billing failures (the counters the writes keep), read alongside the streams; complete even when truncated. */
  readonly failing: FailingCounts;
}

/** The process of a due record by its own status (the collections' statuses, `COLLECTION_SCANS`). */
const PROCESS_OF: ReadonlyMap<BillingStatus, CollectionProcess> = new Map(COLLECTION_SCANS.map((scan) => [scan.status, scan.process]));

/**
 * A due-index record's collection message, or undefined when it is not collectible now (a skip is
 * counted). The index is eventually consistent and holds every status: the item's own status decides.
 */
export function dueMessageOf(record: BillingRecord, now: Date, summary: Pick<CollectionsSummary, 'skipped_waiting' | 'skipped_parked'>): BillingPeriodMessage | undefined {
  const process = PROCESS_OF.get(record.billing_status);
  if (process === undefined) return undefined;
  const decision = decideCollection(record, process, now);
  if (decision.kind === 'skip') {
    if (decision.reason === 'waiting') summary.skipped_waiting += 1;
    if (decision.reason === 'parked') summary.skipped_parked += 1;
    return undefined;
  }
  return decision.message;
}

/**
 * Pages through the due billing records and the due loan retries side by side and sends one message
 * per due item. The deadline is asked before each page; a page in hand is always sent in full.
 */
export async function planCollections(
  deps: {
    readonly billing: Pick<BillingStore, 'streamDue' | 'countFailing'>;
    readonly payments: Pick<PaymentsStore, 'streamDueRetries'>;
    readonly clock: Clock;
  },
  options: PlanCollectionsOptions,
): Promise<CollectionsPlan> {
  const now = deps.clock.now();
  const dueAtOrBefore = formatInstant(now);
  const summary: CollectionsSummary = { enqueued: 0, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false };
  const failing: FailingCounts = { retrying: 0, parked: 0 };
  const queued = new Set<string>();
  const pages = options.pageSize !== undefined ? { pageSize: options.pageSize } : {};
  // Once one stream stops (deadline or error), the other stops at its next page too.
  let stopped = false;
  const shouldContinue = (): boolean => !stopped && options.shouldContinue();
  /** One message per id per run, across both streams. */
  const fresh = (message: CollectionMessage): boolean => {
    const id = messageIdOf(message);
    if (queued.has(id)) return false;
    queued.add(id);
    return true;
  };

  // Read alongside the streams, so a run with nothing due is one round of requests.
  const counting = deps.billing.countFailing();
  counting.catch(() => undefined);

  const billing = drain(deps.billing.streamDue(dueAtOrBefore, pages), shouldContinue, async (records) => {
    const messages: CollectionMessage[] = [];
    for (const record of records) {
      const message = dueMessageOf(record, now, summary);
      if (message === undefined) continue;
      // A pause run presents nothing: only a payment waits for its processor.
      if (message.process !== 'PAUSE' && options.railBlocked?.(record.payment_method)) {
        summary.skipped_outage = (summary.skipped_outage ?? 0) + 1;
        continue;
      }
      if (fresh(message)) messages.push(message);
    }
    if (messages.length > 0) await options.send(messages);
    summary.enqueued += messages.length;
  });
  const loans = drain(deps.payments.streamDueRetries(dueAtOrBefore, pages), shouldContinue, async (due) => {
    const messages = due.map((d) => loanRetryMessage(d, now)).filter(fresh);
    if (messages.length > 0) await options.send(messages);
    summary.enqueued += messages.length;
    summary.loan_retries_enqueued += messages.length;
  });
  const outcomes = await Promise.allSettled(
    [billing, loans].map((run) =>
      run.then(
        (ended) => {
          if (!ended) stopped = true;
          return ended;
        },
        (error: unknown) => {
          stopped = true;
          throw error;
        },
      ),
    ),
  );
  for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
  const counted = await counting;
  failing.retrying = counted.retrying;
  failing.parked = counted.parked;
  if (outcomes.some((outcome) => outcome.status === 'fulfilled' && !outcome.value)) summary.truncated = true;
  return { summary, failing };
}

/** Hands `pages` to `handle` one at a time while `shouldContinue`; true when the stream ended. Always closes it. */
async function drain<T>(pages: AsyncIterable<readonly T[]>, shouldContinue: () => boolean, handle: (page: readonly T[]) => Promise<void>): Promise<boolean> {
  const iterator = pages[Symbol.asyncIterator]();
  let ended = false;
  try {
    while (shouldContinue()) {
      const next = await iterator.next();
      if (next.done) {
        ended = true;
        return true;
      }
      await handle(next.value);
    }
    return false;
  } finally {
    if (!ended) await iterator.return?.();
  }
}
