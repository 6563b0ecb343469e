import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { dueGate } from './collectible.js';
import { dunningLapsed } from './dunning.js';
import { idSchema } from './ids.js';
import { COLLECTIBLE_STATUSES, type BillingRecord, type BillingStatus } from './records.js';
import { formatInstant, instantSchema } from './time.js';

/**
 * Planning of the scheduled collections run (DESIGN 1, 3, 5): which records are due, which the
 * failure ladder holds back, and the message the batch-worker receives for each due record.
 */

/** The processes a collections message can carry (BATCH: an ad-hoc batch sent to the same queue). */
export const collectionProcessSchema = lazySchema(() => z.enum(['SCHEDULED', 'RETRY', 'PAUSE', 'BATCH']));
export type CollectionProcess = z.infer<typeof collectionProcessSchema>;

/** A billing period to attempt. `kind` is absent on messages enqueued before loan retries existed. */
export const billingPeriodMessageSchema = lazySchema(() => z.object({
  kind: z.optional(z.literal('billing_period')),
  user_id: idSchema,
  billing_date: instantSchema,
  subscription_id: idSchema,
  process: collectionProcessSchema,
  enqueued_at: instantSchema,
}));
export type BillingPeriodMessage = z.infer<typeof billingPeriodMessageSchema>;

/** A loan payment in RETRY whose next attempt is due (DESIGN 2.7). */
export const loanPaymentRetryMessageSchema = lazySchema(() => z.object({
  kind: z.literal('loan_payment_retry'),
  user_id: idSchema,
  loan_id: idSchema,
  payment_id: idSchema,
  enqueued_at: instantSchema,
}));
export type LoanPaymentRetryMessage = z.infer<typeof loanPaymentRetryMessageSchema>;

/**
 * The body of one collections-queue message, for the producer (collections-job) and the consumer
 * (batch-worker) alike: a union discriminated by `kind`.
 */
export const collectionMessageSchema = lazySchema(() => z.union([loanPaymentRetryMessageSchema, billingPeriodMessageSchema]));
export type CollectionMessage = z.infer<typeof collectionMessageSchema>;

export function isLoanPaymentRetry(message: CollectionMessage): message is LoanPaymentRetryMessage {
  return message.kind === 'loan_payment_retry';
}

/** The message that retries a due loan payment. */
export function loanRetryMessage(due: { readonly user_id: string; readonly loan_id: string; readonly payment_id: string }, now: Date): LoanPaymentRetryMessage {
  return { kind: 'loan_payment_retry', user_id: due.user_id, loan_id: due.loan_id, payment_id: due.payment_id, enqueued_at: formatInstant(now) };
}

/**
 * The statuses a run collects and the process each one's record gets: first attempts, retries,
 * expiring pauses (pending cancels are PENDING). The run reads them together from the due-index
 * (one partition per shard for every status), keyed on each record's next eligible instant (the
 * billing date, or for FAILED the next automatic attempt, `next_attempt`; later when the ladder
 * holds it), so a record waiting for a later slot, parked, exhausted or held is never read; the
 * record's own status picks its entry here.
 */
export const COLLECTION_SCANS: readonly { readonly status: BillingStatus; readonly process: CollectionProcess; readonly by: 'billing_date' | 'next_attempt' }[] = [
  { status: 'PENDING', process: 'SCHEDULED', by: 'billing_date' },
  { status: 'FAILED', process: 'RETRY', by: 'next_attempt' },
  { status: 'PAUSED', process: 'PAUSE', by: 'billing_date' },
];

export type CollectionDecision =
  | { readonly kind: 'enqueue'; readonly message: BillingPeriodMessage }
  | { readonly kind: 'skip'; readonly reason: 'waiting' | 'parked' | 'not_due' };

/**
 * What the run does with one record the due-index returned. The attempt checks all of this
 * again after its own read; skipping here only saves a message (ADR-119's gate).
 */
export function decideCollection(record: BillingRecord, process: CollectionProcess, now: Date): CollectionDecision {
  if (Date.parse(record.billing_date) > now.getTime()) return { kind: 'skip', reason: 'not_due' };
  if (COLLECTIBLE_STATUSES.has(record.billing_status)) {
    const held = dueGate(record, now, process);
    if (held === 'waiting' || held === 'parked') return { kind: 'skip', reason: held };
    // A dunning cycle whose window is over is sent: its attempt presents nothing and records the exhaustion.
    if (held && !(held === 'exhausted' && dunningLapsed(record, now))) return { kind: 'skip', reason: 'not_due' };
  }
  return {
    kind: 'enqueue',
    message: {
      kind: 'billing_period',
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
  return isLoanPaymentRetry(message) ? `loan-payment:${message.user_id}:${message.loan_id}:${message.payment_id}` : message.subscription_id;
}

