import { loanRepresentmentFlags } from './ach-outcomes.js';
import type { PaymentRequest } from './ports/processor.js';
import type { LoanPayment } from './loan-payments.js';
import type { Instrument } from './instruments/instrument.js';
import { debitMovement, loanRecordKey, type MoneyMovement } from './money-movements.js';

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

/**
 * The debit an attempt's write records (DESIGN 14): an accepted presentment, the attempt count moved
 * by one; `accepted` when an outcome for it already says so (a lost submission recorded by its outcome).
 */
export function loanDebitMovements(read: LoanPayment, after: LoanPayment, presentedAt: Date, accepted = after.loc_status === 'COMPLETED' || after.loc_status === 'ACHSENT'): MoneyMovement[] {
  const presented = after.loc_payment_attempts === read.loc_payment_attempts + 1 && accepted;
  if (!presented || after.loc_confirmation_id === undefined) return [];
  return [
    debitMovement({
      rail: read.loc_payment_method,
      transaction_id: after.loc_confirmation_id,
      amount_cents: read.loc_amount,
      presented_at: presentedAt,
      user_id: read.loc_user_id,
      record_key: loanRecordKey(read),
      idempotency_key: loanAttemptKey(read),
    }),
  ];
}
