import * as z from 'zod';
import { dueGate } from './collectible.js';
import { idSchema } from './ids.js';
import { COLLECTIBLE_STATUSES, type BillingRecord, type BillingStatus } from './records.js';
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
  user_id: idSchema,
  billing_date: instantSchema,
  subscription_id: idSchema,
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
  if (COLLECTIBLE_STATUSES.has(record.billing_status)) {
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

