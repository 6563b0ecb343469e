import { COLLECTION_SCANS, decideCollection, loanRetryMessage, messageIdOf, type CollectionMessage } from '../collections.js';
import type { BillingStore, Clock, Page, PageRequest, PaymentsStore } from '../ports.js';
import type { BillingRecord } from '../records.js';
import { formatInstant } from '../time.js';

export interface CollectionsSummary {
  enqueued: number;
  skipped_waiting: number;
  skipped_parked: number;
  /** Of `enqueued`: loan payments in RETRY whose next attempt is due (DESIGN 2.7). */
  loan_retries_enqueued: number;
  truncated: boolean;
}

export interface FailingCounts {
  retrying: number;
  parked: number;
}

export interface PlanCollectionsOptions {
  /** Records per page of one status scan. */
  readonly pageSize?: number;
  /** Asked before each page is read; false stops the run cleanly (the summary says truncated). */
  readonly shouldContinue: () => boolean;
  /** Sends one page's messages; it is always awaited in full before the run stops. */
  readonly send: (messages: readonly CollectionMessage[]) => Promise<void>;
}

export interface CollectionsPlan {
  readonly summary: CollectionsSummary;
  /** Live billing failures, read from the sparse failing index after the scans; a lower bound when truncated. */
  readonly failing: FailingCounts;
}

/**
 * Pages through the due records of every scan (the sparse due-index, keyed on each open record's
 * next eligible instant: billing date, daily retry, ladder or dunning next attempt; parked,
 * exhausted and held records are not in it, so the run's reads grow with due work only), then the
 * due RETRY loan payments, sends one message per record that is due and not held, then counts live
 * failures for the gauge from the failing index. A page in hand is always sent in full before the
 * deadline check stops the run.
 */
export async function planCollections(
  deps: {
    readonly billing: Pick<BillingStore, 'listDue' | 'countFailing'>;
    readonly payments: Pick<PaymentsStore, 'listDueRetries'>;
    readonly clock: Clock;
  },
  options: PlanCollectionsOptions,
): Promise<CollectionsPlan> {
  const now = deps.clock.now();
  const dueAtOrBefore = formatInstant(now);
  const summary: CollectionsSummary = { enqueued: 0, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false };
  const failing: FailingCounts = { retrying: 0, parked: 0 };
  const queued = new Set<string>();

  for (const scan of COLLECTION_SCANS) {
    let cursor: string | null = null;
    do {
      if (!options.shouldContinue()) {
        summary.truncated = true;
        return { summary, failing };
      }
      const request: PageRequest = { ...(options.pageSize !== undefined ? { limit: options.pageSize } : {}), cursor };
      // The due-index holds each open record at its next eligible instant: only due work is read.
      const page: Page<BillingRecord> = await deps.billing.listDue(scan.status, dueAtOrBefore, request);
      const messages: CollectionMessage[] = [];
      for (const record of page.items) {
        // The index is eventually consistent: trust the item's own status, not the scan's.
        if (record.billing_status !== scan.status) continue;
        const decision = decideCollection(record, scan.process, now);
        if (decision.kind === 'skip') {
          if (decision.reason === 'waiting') summary.skipped_waiting += 1;
          if (decision.reason === 'parked') summary.skipped_parked += 1;
          continue;
        }
        const id = messageIdOf(decision.message);
        if (queued.has(id)) continue;
        queued.add(id);
        messages.push(decision.message);
      }
      if (messages.length > 0) await options.send(messages);
      summary.enqueued += messages.length;
      cursor = page.next;
    } while (cursor !== null);
  }

  // Loan payments in RETRY, due by their next attempt (GSI2, every shard): only due ones are read.
  let cursor: string | null = null;
  do {
    if (!options.shouldContinue()) {
      summary.truncated = true;
      return { summary, failing };
    }
    const page = await deps.payments.listDueRetries(dueAtOrBefore, { ...(options.pageSize !== undefined ? { limit: options.pageSize } : {}), cursor });
    const messages: CollectionMessage[] = [];
    for (const due of page.items) {
      const message = loanRetryMessage(due, now);
      const id = messageIdOf(message);
      if (queued.has(id)) continue;
      queued.add(id);
      messages.push(message);
    }
    if (messages.length > 0) await options.send(messages);
    summary.enqueued += messages.length;
    summary.loan_retries_enqueued += messages.length;
    cursor = page.next;
  } while (cursor !== null);

  // Live billing failures for the gauge: COUNT queries on the sparse failing index (the failures
  // themselves are not returned, so waiting and parked records are not transferred or decoded).
  if (!options.shouldContinue()) return { summary: { ...summary, truncated: true }, failing };
  const counted = await deps.billing.countFailing();
  failing.retrying = counted.retrying;
  failing.parked = counted.parked;
  return { summary, failing };
}
