import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { centsSchema } from './money.js';
import { DECIDED_BY } from './instruments/holds.js';
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
  /** RETRY only; GSI2 orders RETRY payments by it. */
  loc_next_attempt_at: f.optionalInstant,
  /** The retry waits count from it. */
  loc_first_declined_at: f.optionalInstant,
  loc_decline_code: f.optionalString,
  loc_decline_class: z.optional(declineClassSchema),
  /** Kept for the account's holds (DESIGN 3.1). */
  loc_return_code: f.optionalString,
  /** The instrument the last payment request named (DESIGN 3.2). */
  loc_instrument_id: f.optionalText,
  /** R01/R09 re-presentments granted to this entry and its original date: every later write keeps them (NACHA `RETRY PYMT`). */
  loc_ach_represented: f.optionalCount,
  loc_ach_original_entry_date: f.optionalInstant,
  /** Processor errors (not declines) of the automatic retries. */
  loc_error_count: f.optionalCount,
  version: f.count,
})));
export type LoanPayment = z.infer<typeof loanPaymentSchema>;

/** An append-only audit row: the payment as a change left it, who (`actor`) and why (`reason`). */
export const loanPaymentHistoryRowSchema = lazySchema(() => withFields((f) => z.extend(loanPaymentSchema, {
  actor: f.text,
  reason: f.optionalString,
  /** The named rule of a refusal or stop this change records (DESIGN 3.2). */
  decided_by: z.optional(z.enum(DECIDED_BY)),
  recorded_at: instant,
})));
export type LoanPaymentHistoryRow = z.infer<typeof loanPaymentHistoryRowSchema>;
