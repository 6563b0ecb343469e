import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { centsSchema } from './money.js';
import { declineClassSchema } from './records.js';
import { instant, withFields } from './schema-fields.js';

/** Loan payments (DESIGN 2.7): a payment of a user's loan, apart from the billing periods of subscriptions. */

export const LOAN_PAYMENT_STATUSES = [
  'PENDING',
  'ACHSENT',
  'COMPLETED',
  'RETRY',
  'SKIPPED',
  'FAILED',
  'CHARGED_BACK',
  'RETURNED',
] as const;
export const loanPaymentStatusSchema = lazySchema(() => z.enum(LOAN_PAYMENT_STATUSES));
export type LoanPaymentStatus = z.infer<typeof loanPaymentStatusSchema>;
export const loanPaymentProcessSchema = lazySchema(() => z.enum(['MANUAL', 'AUTO', 'RETRY']));
export type LoanPaymentProcess = z.infer<typeof loanPaymentProcessSchema>;

export const loanPaymentApplicationSchema = lazySchema(() => z.object({
  payment_id: z.string(),
  installment_id: z.string(),
  amount: centsSchema,
  payment_date: instant,
}));

export const loanPaymentSchema = lazySchema(() => withFields((f) => z.object({
  loc_user_id: f.text,
  loc_loan_id: f.text,
  loc_payment_id: f.text,
  loc_amount: centsSchema,
  loc_status: loanPaymentStatusSchema,
  loc_payment_method: z.enum(['ach', 'pinless']),
  loc_process: loanPaymentProcessSchema,
  loc_confirmation_id: f.optionalString,
  loc_account_last_four: f.optionalString,
  loc_intended_installment_id: f.optionalString,
  loc_payment_attempts: f.count,
  loc_applications: z.optional(z.array(loanPaymentApplicationSchema)),
  loc_update_reason: f.optionalString,
  loc_created_date: instant,
  loc_last_updated: instant,
  /** RETRY only: when the next automatic attempt is due (DESIGN 2.7); GSI2 orders RETRY payments by it. */
  loc_next_attempt_at: f.optionalInstant,
  /** The first decline of this payment: the retry waits of DESIGN 5b count from it. */
  loc_first_declined_at: f.optionalInstant,
  /** The last decline's processor code and its dunning class (DESIGN 5b). */
  loc_decline_code: f.optionalString,
  loc_decline_class: z.optional(declineClassSchema),
  /** The NACHA code of the last ACH return of this payment (DESIGN 4, 3.1 holds). */
  loc_return_code: f.optionalString,
  /** Counted processor errors (not declines) of the automatic retries: each moves the next attempt by the 5b wait. */
  loc_error_count: f.optionalCount,
  /** Optimistic-concurrency counter, as on billing records. */
  version: f.count,
})));
export type LoanPayment = z.infer<typeof loanPaymentSchema>;

/**
 * One audit row of a loan payment (DESIGN 2.7): the payment as a change left it, who made the change
 * (`actor`: the JWT `sub`, or `system:<function>`) and why (`reason`; `loc_update_reason` is the
 * payment's own). Written in the same transaction as the change, never overwritten.
 */
export const loanPaymentHistoryRowSchema = lazySchema(() => withFields((f) => z.extend(loanPaymentSchema, {
  actor: f.text,
  reason: f.optionalString,
  recorded_at: instant,
})));
export type LoanPaymentHistoryRow = z.infer<typeof loanPaymentHistoryRowSchema>;
