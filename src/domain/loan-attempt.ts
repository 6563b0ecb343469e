import { loanRepresentmentFlags } from './ach-outcomes.js';
import type { PaymentRequest } from './ports.js';
import type { LoanPayment } from './loan-payments.js';

/*
 * The payment request of a loan payment's next attempt, apart from the retry policy (loan-retries.ts):
 * the ACH outcomes read that policy, and this reads their re-presentment flags, so one module would
 * be an import cycle.
 */

/** The key of the payment's next attempt: `{loc_payment_id}:{loc_payment_attempts + 1}` (DESIGN 2.7). */
export function loanAttemptKey(read: LoanPayment): string {
  return `${read.loc_payment_id}:${read.loc_payment_attempts + 1}`;
}

/** What every path presents for the payment's next attempt (creation, its repair, the automatic retry). */
export function loanAttemptRequest(read: LoanPayment): PaymentRequest {
  return {
    idempotency_key: loanAttemptKey(read),
    user_id: read.loc_user_id,
    amount_cents: read.loc_amount,
    rail: read.loc_payment_method,
    account_last_four: read.loc_account_last_four,
    reference: { kind: 'loan_payment', user_id: read.loc_user_id, loan_id: read.loc_loan_id, payment_id: read.loc_payment_id },
    // A re-presented R01/R09 entry says so (NACHA: reinitiated, RETRY PYMT).
    ...loanRepresentmentFlags(read),
  };
}
