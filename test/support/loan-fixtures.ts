import { randomUUID } from 'node:crypto';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import type { TestApp } from './app.js';
import { DAY } from './time.js';

/** A loan payment of a fresh user and loan, stamped by the app's clock; overrides say what the test is about. */
export function loanPayment(app: TestApp, overrides: Partial<LoanPayment> = {}): LoanPayment {
  const now = formatInstant(app.clock.now());
  return {
    loc_user_id: `user-${randomUUID()}`,
    loc_loan_id: `loan-${randomUUID().slice(0, 8)}`,
    loc_payment_id: `pay_${randomUUID().replaceAll('-', '')}`,
    loc_amount: 5000,
    loc_status: 'PENDING',
    loc_payment_method: 'ach',
    loc_process: 'AUTO',
    loc_payment_attempts: 1,
    loc_created_date: now,
    loc_last_updated: now,
    version: 1,
    ...overrides,
  };
}

/** A pinless payment declined once (attempt 1), its first retry due now. */
export function retryingLoanPayment(app: TestApp, overrides: Partial<LoanPayment> = {}): LoanPayment {
  const dayAgo = formatInstant(new Date(app.clock.now().getTime() - DAY));
  return loanPayment(app, {
    loc_amount: 4200,
    loc_status: 'RETRY',
    loc_payment_method: 'pinless',
    loc_account_last_four: '4242',
    loc_decline_code: 'insufficient_funds',
    loc_decline_class: 'retry_later',
    loc_update_reason: 'The payment was declined by the bank.',
    loc_first_declined_at: dayAgo,
    loc_next_attempt_at: formatInstant(app.clock.now()),
    loc_created_date: dayAgo,
    loc_last_updated: dayAgo,
    ...overrides,
  });
}

/** Writes a loan payment as its producer would, with a seed audit row, and answers it. */
export async function seedLoanPayment(app: TestApp, payment: LoanPayment, reason = 'fixture'): Promise<LoanPayment> {
  await app.deps.payments.create(payment, { actor: 'test:seed', reason });
  return payment;
}
