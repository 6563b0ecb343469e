import { loanRepresentmentFlags } from './ach-outcomes.js';
import type { PaymentRequest } from './ports/processor.js';
import type { LoanPayment } from './loan-payments.js';
import type { Instrument } from './instruments/instrument.js';

// Apart from loan-retries.ts: ach-outcomes.ts reads that policy and this reads its flags (one module would be a cycle).

export function loanAttemptKey(read: LoanPayment): string {
  return `${read.loc_payment_id}:${read.loc_payment_attempts + 1}`;
}

/** What every path presents for the payment's next attempt. */
export function loanAttemptRequest(read: LoanPayment, instrument?: Instrument): PaymentRequest {
  return {
    ...(instrument ? { instrument_id: instrument.instrument_id } : {}),
    idempotency_key: loanAttemptKey(read),
    user_id: read.loc_user_id,
    amount_cents: read.loc_amount,
    rail: read.loc_payment_method,
    account_last_four: read.loc_account_last_four,
    reference: { kind: 'loan_payment', user_id: read.loc_user_id, loan_id: read.loc_loan_id, payment_id: read.loc_payment_id },
    ...loanRepresentmentFlags(read),
  };
}
