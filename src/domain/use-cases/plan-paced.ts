import { messageIdOf, type CollectionMessage } from '../collections.js';
import { delaySecondsOf } from '../billing-day.js';
import type { BillingStore } from '../ports/billing-store.js';
import type { Clock } from '../ports/clock.js';
import type { ProcessorId } from '../processor-budget.js';
import { formatInstant } from '../time.js';
import { dueMessageOf, type CollectionsSummary, type FailingCounts } from './plan-collections.js';

/** One processor's share of a paced run (DESIGN 13). */
export interface ProcessorQuota {
  readonly processor: ProcessorId;
  /** Messages this run may send for it. */
  readonly quota: number;
  /** Scheduled requests per second: the spacing of its messages. */
  readonly rate: number;
  /**
   * Its messages still queued: the due periods at the head are passed over this many times, since
   * the last run planned the head and those are most likely theirs (sending them again is a duplicate).
   */
  readonly queued?: number;
  /** Slots of the run already given to other messages of this processor (the loan retries): its first message takes the next. */
  readonly firstSlot?: number;
}

export interface ProcessorPlan {
  quota: number;
  enqueued: number;
  /** Due periods read and left for a later run (the quota was reached): a lower bound of what waits. */
  deferred: number;
  /** True when the run stopped at the quota with due work still unread. */
  more: boolean;
}

export interface PacedMessage {
  readonly message: CollectionMessage;
  readonly delaySeconds: number;
}

export interface PacedPlanOptions {
  readonly quotas: readonly ProcessorQuota[];
  /** Wall-clock ms since the run started: each message's delay counts from the start. */
  readonly elapsedMs: () => number;
  readonly pageSize?: number;
  readonly shouldContinue: () => boolean;
  readonly send: (processor: ProcessorId, messages: readonly PacedMessage[]) => Promise<void>;
}

/**
 * The paced planner: per processor, reads its due-index partitions oldest first (shards in turn),
 * sends at most its quota, message i delayed to `runStart + i / rate`. Every run reads from the
 * head, so a period left (locked, throttled, deferred) is planned again next run.
 */
export async function planPaced(
  deps: { readonly billing: Pick<BillingStore, 'streamDue' | 'countFailing'>; readonly clock: Clock },
  options: PacedPlanOptions,
): Promise<{ summary: CollectionsSummary; byProcessor: Partial<Record<ProcessorId, ProcessorPlan>>; failing: FailingCounts }> {
  const now = deps.clock.now();
  const summary: CollectionsSummary = { enqueued: 0, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false };
  const counting = deps.billing.countFailing();
  counting.catch(() => undefined);
  const byProcessor: Partial<Record<ProcessorId, ProcessorPlan>> = {};
  await Promise.all(
    options.quotas.map(async (q) => {
      const plan: ProcessorPlan = { quota: q.quota, enqueued: 0, deferred: 0, more: false };
      byProcessor[q.processor] = plan;
      if (q.quota <= 0) {
        plan.more = true;
        return;
      }
      const ended = await planOne(deps, q, plan, summary, now, options);
      if (!ended && !plan.more) summary.truncated = true;
    }),
  );
  const counted = await counting;
  return { summary, byProcessor, failing: { retrying: counted.retrying, parked: counted.parked } };
}

/** One processor's stream; true when it ended or reached its quota, false when the deadline stopped it. */
async function planOne(
  deps: { readonly billing: Pick<BillingStore, 'streamDue'> },
  q: ProcessorQuota,
  plan: ProcessorPlan,
  summary: CollectionsSummary,
  now: Date,
  options: PacedPlanOptions,
): Promise<boolean> {
  const seen = new Set<string>();
  let passed = 0;
  const pages = deps.billing.streamDue(formatInstant(now), { processor: q.processor, ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}) });
  const iterator = pages[Symbol.asyncIterator]();
  let ended = false;
  try {
    while (options.shouldContinue()) {
      const next = await iterator.next();
      if (next.done) {
        ended = true;
        return true;
      }
      const batch: PacedMessage[] = [];
      for (const record of next.value) {
        const message = dueMessageOf(record, now, summary);
        if (message === undefined) continue;
        const id = messageIdOf(message);
        if (seen.has(id)) continue;
        seen.add(id);
        if (passed < (q.queued ?? 0)) {
          passed += 1;
          continue;
        }
        if (plan.enqueued + batch.length >= plan.quota) {
          plan.deferred += 1;
          plan.more = true;
          continue;
        }
        const index = (q.firstSlot ?? 0) + plan.enqueued + batch.length;
        batch.push({ message, delaySeconds: delaySecondsOf(index, q.rate, options.elapsedMs()) });
      }
      if (batch.length > 0) await options.send(q.processor, batch);
      plan.enqueued += batch.length;
      summary.enqueued += batch.length;
      if (plan.more) return true;
    }
    return false;
  } finally {
    if (!ended) await iterator.return?.();
  }
}
