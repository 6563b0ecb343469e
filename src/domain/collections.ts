import * as z from 'zod';
import { dueGate } from './attempt.js';
import { failureState } from './ladder.js';
import type { BillingStore, Clock } from './ports.js';
import type { BillingRecord, BillingStatus } from './records.js';
import { formatInstant, instantSchema } from './time.js';

/**
 * Planning of the scheduled collections run (DESIGN 1, 3, 5): which records are due, which the
 * failure ladder holds back, and the message the batch-worker receives for each due record.
 */

/** The processes a collections message can carry (BATCH: an ad-hoc batch sent to the same queue). */
export const collectionProcessSchema = z.enum(['SCHEDULED', 'RETRY', 'PAUSE', 'BATCH']);
export type CollectionProcess = z.infer<typeof collectionProcessSchema>;

/** The body of one collections-queue message. */
export const collectionMessageSchema = z.object({
  user_id: z.string().min(1).max(256),
  billing_date: instantSchema,
  subscription_id: z.string().min(1).max(256),
  process: collectionProcessSchema,
  enqueued_at: instantSchema,
});
export type CollectionMessage = z.infer<typeof collectionMessageSchema>;

/** The scans of one run, in order: first attempts, daily retries, expiring pauses (pending cancels are PENDING). */
export const COLLECTION_SCANS: readonly { readonly status: BillingStatus; readonly process: CollectionProcess }[] = [
  { status: 'PENDING', process: 'SCHEDULED' },
  { status: 'FAILED', process: 'RETRY' },
  { status: 'PAUSED', process: 'PAUSE' },
];

export type CollectionDecision =
  | { readonly kind: 'enqueue'; readonly message: CollectionMessage }
  | { readonly kind: 'skip'; readonly reason: 'waiting' | 'parked' | 'not_due' };

/**
 * What the run does with one record the status index returned. The attempt checks all of this
 * again after its own read; skipping here only saves a message (ADR-119's gate).
 */
export function decideCollection(record: BillingRecord, process: CollectionProcess, now: Date): CollectionDecision {
  if (Date.parse(record.billing_date) > now.getTime()) return { kind: 'skip', reason: 'not_due' };
  if (record.billing_status === 'PENDING' || record.billing_status === 'FAILED') {
    const held = dueGate(record, now, process);
    if (held === 'waiting' || held === 'parked') return { kind: 'skip', reason: held };
    if (held) return { kind: 'skip', reason: 'not_due' };
  }
  return {
    kind: 'enqueue',
    message: {
      user_id: record.user_id,
      billing_date: record.billing_date,
      subscription_id: record.subscription_id,
      process,
      enqueued_at: formatInstant(now),
    },
  };
}

/** SQS message ids must be unique within a batch; one record yields at most one message per run. */
export function messageIdOf(message: CollectionMessage): string {
  return message.subscription_id;
}

export interface CollectionsSummary {
  enqueued: number;
  skipped_waiting: number;
  skipped_parked: number;
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
  /** Live billing failures seen on every PENDING/FAILED record scanned; a lower bound when truncated. */
  readonly failing: FailingCounts;
}

/**
 * Pages through the due records of every scan, sends one message per record that is due and not
 * held by the ladder, and counts live failures for the gauge. A page in hand is always sent in
 * full before the deadline check stops the run.
 */
export async function planCollections(
  deps: { readonly billing: Pick<BillingStore, 'listByStatus'>; readonly clock: Clock },
  options: PlanCollectionsOptions,
): Promise<CollectionsPlan> {
  const now = deps.clock.now();
  const dueAtOrBefore = formatInstant(now);
  const summary: CollectionsSummary = { enqueued: 0, skipped_waiting: 0, skipped_parked: 0, truncated: false };
  const failing: FailingCounts = { retrying: 0, parked: 0 };
  const queued = new Set<string>();

  for (const scan of COLLECTION_SCANS) {
    let cursor: string | null = null;
    do {
      if (!options.shouldContinue()) {
        summary.truncated = true;
        return { summary, failing };
      }
      const page = await deps.billing.listByStatus(scan.status, dueAtOrBefore, {
        ...(options.pageSize !== undefined ? { limit: options.pageSize } : {}),
        cursor,
      });
      const messages: CollectionMessage[] = [];
      for (const record of page.items) {
        // The index is eventually consistent: trust the item's own status, not the scan's.
        if (record.billing_status !== scan.status) continue;
        const state = failureState(record);
        if (state !== 'healthy') failing[state] += 1;
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
  return { summary, failing };
}
