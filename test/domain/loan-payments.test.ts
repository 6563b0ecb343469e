import { describe, expect, it } from 'vitest';
import { loanPaymentSchema } from '../../src/domain/loan-payments.js';

describe('loanPaymentSchema', () => {
  const valid = {
    loc_user_id: 'user-1',
    loc_loan_id: 'loan-1',
    loc_payment_id: 'pay-1',
    loc_amount: 5000,
    loc_status: 'PENDING',
    loc_payment_method: 'ach',
    loc_process: 'AUTO',
    loc_payment_attempts: 0,
    loc_created_date: '2026-03-01T00:00:00.000000000Z',
    loc_last_updated: '2026-03-01T00:00:00.000000000Z',
    version: 0,
  };

  it('accepts a valid payment', () => {
    expect(loanPaymentSchema.safeParse(valid).success).toBe(true);
  });

  it('rejects fractional cents and unknown statuses', () => {
    expect(loanPaymentSchema.safeParse({ ...valid, loc_amount: 50.5 }).success).toBe(false);
    expect(loanPaymentSchema.safeParse({ ...valid, loc_status: 'PASTDUE' }).success).toBe(false);
  });
});