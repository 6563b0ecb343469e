import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { idSchema } from './ids.js';
import { PROCESSOR_IDS, processorOfRail, type ProcessorId } from './processor-budget.js';
import { formatInstant, instantSchema } from './time.js';
import { paymentMethodSchema } from './records.js';

/** The collections queue's messages, one schema for the collections-job and the batch-worker (due-work.ts decides what is due). */

/** BATCH: an ad-hoc batch sent to the same queue. */
export const collectionProcessSchema = lazySchema(() => z.enum(['SCHEDULED', 'RETRY', 'PAUSE', 'BATCH']));
export type CollectionProcess = z.infer<typeof collectionProcessSchema>;

/** `kind` is absent on messages enqueued before loan retries existed. */
export const billingPeriodMessageSchema = lazySchema(() => z.object({
  kind: z.optional(z.literal('billing_period')),
  user_id: idSchema,
  billing_date: instantSchema,
  subscription_id: idSchema,
  process: collectionProcessSchema,
  /** The period's rail, so a worker drops the message unread while its processor's circuit is open (DESIGN 15); absent on older messages. */
  payment_method: z.optional(paymentMethodSchema),
  enqueued_at: instantSchema,
  /** The processor of the period's rail (DESIGN 13): the worker leases its batch's tokens by it. Absent on older and ad-hoc messages. */
  processor: z.optional(z.enum(PROCESSOR_IDS)),
}));
export type BillingPeriodMessage = z.infer<typeof billingPeriodMessageSchema>;

export const loanPaymentRetryMessageSchema = lazySchema(() => z.object({
  kind: z.literal('loan_payment_retry'),
  user_id: idSchema,
  loan_id: idSchema,
  payment_id: idSchema,
  enqueued_at: instantSchema,
}));
export type LoanPaymentRetryMessage = z.infer<typeof loanPaymentRetryMessageSchema>;

export const collectionMessageSchema = lazySchema(() => z.union([loanPaymentRetryMessageSchema, billingPeriodMessageSchema]));
export type CollectionMessage = z.infer<typeof collectionMessageSchema>;

export function isLoanPaymentRetry(message: CollectionMessage): message is LoanPaymentRetryMessage {
  return message.kind === 'loan_payment_retry';
}

export function loanRetryMessage(due: { readonly user_id: string; readonly loan_id: string; readonly payment_id: string }, now: Date): LoanPaymentRetryMessage {
  return { kind: 'loan_payment_retry', user_id: due.user_id, loan_id: due.loan_id, payment_id: due.payment_id, enqueued_at: formatInstant(now) };
}

/** SQS message ids must be unique within a batch; one record yields at most one message per run. */
export function messageIdOf(message: CollectionMessage): string {
  return isLoanPaymentRetry(message) ? `loan-payment:${message.user_id}:${message.loan_id}:${message.payment_id}` : message.subscription_id;
}


/**
 * The processor whose queue a message goes to (DESIGN 13). A loan payment is debited on the ACH or
 * pinless rail, both the payments service's; a period without its rail written is an older card one.
 */
export function processorOfMessage(message: CollectionMessage): ProcessorId {
  if (isLoanPaymentRetry(message)) return processorOfRail('ach');
  return message.processor ?? processorOfRail(message.payment_method ?? 'card');
}
