import { describe, expect, it } from 'vitest';
import { ACH_RETURN_MESSAGES, achEventSchema, decideLoanPaymentOutcome, decideSubscriptionOutcome, type AchEvent } from '../../src/domain/ach-outcomes.js';
import type { BillingRecord } from '../../src/domain/records.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import { DAY } from '../support/time.js';

const SUBMITTED_AT = '2026-11-01T00:00:00.000000000Z';
const now = new Date('2026-11-04T00:00:00.000Z');

function record(overrides: Partial<BillingRecord> = {}): BillingRecord {
  return {
    user_id: 'u1',
    billing_date: SUBMITTED_AT,
    subscription_id: 'sub-1',
    amount_cents: 1999,
    billing_status: 'ACHSENT',
    transaction_id: 'conf-1',
    last_run_date: SUBMITTED_AT,
    created_date: SUBMITTED_AT,
    process: 'SCHEDULED',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: 'ach',
    payment_attempts: 1,
    first_attempt_date: SUBMITTED_AT,
    last_attempt_date: SUBMITTED_AT,
    version: 3,
    ...overrides,
  };
}

function event(type: AchEvent['type'], overrides: Partial<AchEvent> = {}): AchEvent {
  return {
    event_id: 'evt-1',
    type,
    confirmation_id: 'conf-1',
    amount_cents: 1999,
    occurred_at: formatInstant(now),
    reference: { kind: 'subscription', user_id: 'u1', billing_date: SUBMITTED_AT },
    ...(type === 'returned' ? { return_code: 'R01' } : {}),
    ...overrides,
  };
}

function payment(overrides: Partial<LoanPayment> = {}): LoanPayment {
  return {
    loc_user_id: 'u1',
    loc_loan_id: 'loan-1',
    loc_payment_id: 'pay-1',
    loc_amount: 5000,
    loc_status: 'ACHSENT',
    loc_payment_method: 'ach',
    loc_process: 'AUTO',
    loc_confirmation_id: 'conf-1',
    loc_payment_attempts: 1,
    loc_created_date: SUBMITTED_AT,
    loc_last_updated: SUBMITTED_AT,
    version: 2,
    ...overrides,
  };
}

const applied = <T>(decision: { kind: string; after?: T }): T => {
  expect(decision.kind).toBe('apply');
  return decision.after as T;
};

describe('achEventSchema', () => {
  const valid = { ...event('returned'), occurred_at: '2026-11-04T00:00:00Z', reference: { kind: 'subscription', user_id: 'u1', billing_date: '2026-11-01T00:00:00Z' } };

  it('accepts a returned event and normalises its instants', () => {
    const parsed = achEventSchema.parse(valid);
    expect(parsed.occurred_at).toBe('2026-11-04T00:00:00.000000000Z');
    expect(parsed.reference).toEqual({ kind: 'subscription', user_id: 'u1', billing_date: SUBMITTED_AT });
  });

  it('requires a return code on a return', () => {
    const { return_code: _drop, ...withoutCode } = valid;
    expect(achEventSchema.safeParse(withoutCode).success).toBe(false);
  });

  it.each([
    ['a malformed return code', { return_code: 'R1' }],
    ['a negative amount', { amount_cents: -1 }],
    ['a fractional amount', { amount_cents: 19.99 }],
    ['an unknown type', { type: 'reversed' }],
    ['an impossible date', { occurred_at: '2026-02-30T00:00:00Z' }],
    ['an unknown reference kind', { reference: { kind: 'invoice', user_id: 'u1' } }],
  ])('refuses %s', (_label, change) => {
    expect(achEventSchema.safeParse({ ...valid, ...change }).success).toBe(false);
  });
});

describe('decideSubscriptionOutcome', () => {
  it('settles an ACHSENT record', () => {
    const after = applied<BillingRecord>(decideSubscriptionOutcome(record(), event('settled'), now));
    expect(after).toMatchObject({ billing_status: 'COMPLETED', updated_event: 'ACH_SETTLED', version: 4, payment_error: '' });
    expect(after.completed_date).toBe(formatInstant(now));
  });

  it('ignores an outcome for another attempt (confirmation mismatch)', () => {
    expect(decideSubscriptionOutcome(record({ transaction_id: 'conf-2' }), event('settled'), now)).toEqual({ kind: 'ignore', reason: 'confirmation_mismatch' });
  });

  it('treats a second settlement as a replay', () => {
    expect(decideSubscriptionOutcome(record({ billing_status: 'COMPLETED' }), event('settled'), now)).toEqual({ kind: 'ignore', reason: 'already_applied' });
  });

  it('grants the first re-presentment after R01 and remembers the original entry', () => {
    const after = applied<BillingRecord>(decideSubscriptionOutcome(record(), event('returned', { return_code: 'R01' }), now));
    expect(after).toMatchObject({
      billing_status: 'FAILED',
      updated_event: 'ACH_RETURNED',
      ach_represented: 1,
      ach_original_entry_date: SUBMITTED_AT,
      payment_error: ACH_RETURN_MESSAGES.represent,
    });
    expect(after.ach_blocked).toBeUndefined();
  });

  it('grants the second re-presentment after R09', () => {
    const after = applied<BillingRecord>(
      decideSubscriptionOutcome(record({ ach_represented: 1, ach_original_entry_date: SUBMITTED_AT }), event('returned', { return_code: 'R09' }), now),
    );
    expect(after).toMatchObject({ ach_represented: 2 });
    expect(after.ach_blocked).toBeUndefined();
  });

  it('blocks ACH on the third R01 return', () => {
    const decision = decideSubscriptionOutcome(record({ ach_represented: 2, ach_original_entry_date: SUBMITTED_AT }), event('returned'), now);
    expect(decision).toMatchObject({ kind: 'apply', effect: 'blocked' });
    expect(applied<BillingRecord>(decision)).toMatchObject({ billing_status: 'FAILED', ach_blocked: true, ach_represented: 2 });
  });

  it('blocks ACH when the 180-day window since the original entry has passed', () => {
    const late = new Date(Date.parse(SUBMITTED_AT) + 181 * DAY);
    const decision = decideSubscriptionOutcome(record({ ach_represented: 1, ach_original_entry_date: SUBMITTED_AT }), event('returned'), late);
    expect(applied<BillingRecord>(decision)).toMatchObject({ ach_blocked: true, ach_represented: 1 });
  });

  it.each(['R02', 'R03', 'R04'])('an account error (%s) stops ACH retries', (code) => {
    const after = applied<BillingRecord>(decideSubscriptionOutcome(record(), event('returned', { return_code: code }), now));
    expect(after).toMatchObject({ billing_status: 'FAILED', updated_event: 'ACH_RETURNED', ach_blocked: true, payment_error: ACH_RETURN_MESSAGES.account_error });
  });

  it.each(['R05', 'R07', 'R08', 'R10', 'R11', 'R29', 'R51'])('an unauthorized return (%s) has chargeback semantics', (code) => {
    const after = applied<BillingRecord>(decideSubscriptionOutcome(record(), event('returned', { return_code: code }), now));
    expect(after).toMatchObject({ billing_status: 'FAILED', updated_event: 'ACH_CHARGEBACK', ach_unauthorized: true });
  });

  it('refunds a COMPLETED record and treats a second refund as a replay', () => {
    const after = applied<BillingRecord>(decideSubscriptionOutcome(record({ billing_status: 'COMPLETED' }), event('refunded'), now));
    expect(after).toMatchObject({ billing_status: 'REFUNDED', updated_event: 'REFUNDED' });
    expect(decideSubscriptionOutcome(after, event('refunded'), now)).toEqual({ kind: 'ignore', reason: 'already_applied' });
  });

  it('does not refund a record that never settled', () => {
    expect(decideSubscriptionOutcome(record(), event('refunded'), now)).toEqual({ kind: 'ignore', reason: 'status' });
  });

  it.each(['ACHSENT', 'COMPLETED'] as const)('a chargeback moves %s to FAILED with ach_unauthorized', (status) => {
    const after = applied<BillingRecord>(decideSubscriptionOutcome(record({ billing_status: status }), event('chargeback'), now));
    expect(after).toMatchObject({ billing_status: 'FAILED', updated_event: 'ACH_CHARGEBACK', ach_unauthorized: true });
    expect(decideSubscriptionOutcome(after, event('chargeback'), now)).toEqual({ kind: 'ignore', reason: 'already_applied' });
  });
});

describe('decideLoanPaymentOutcome', () => {
  const loanRef = { kind: 'loan_payment' as const, user_id: 'u1', loan_id: 'loan-1', payment_id: 'pay-1' };
  const loanEvent = (type: AchEvent['type'], overrides: Partial<AchEvent> = {}) => event(type, { reference: loanRef, amount_cents: 5000, ...overrides });

  it('settles and applies the payment to its intended installment', () => {
    const after = applied<LoanPayment>(decideLoanPaymentOutcome(payment({ loc_intended_installment_id: 'inst-1' }), loanEvent('settled'), now));
    expect(after).toMatchObject({ loc_status: 'COMPLETED', loc_update_reason: 'ach_settled', version: 3 });
    expect(after.loc_applications).toEqual([{ payment_id: 'pay-1', installment_id: 'inst-1', amount: 5000, payment_date: formatInstant(now) }]);
  });

  it('schedules a retry after R01 while re-presentments remain', () => {
    expect(applied<LoanPayment>(decideLoanPaymentOutcome(payment({ loc_payment_attempts: 2 }), loanEvent('returned'), now))).toMatchObject({
      loc_status: 'RETRY',
      loc_update_reason: 'ach_returned:R01',
    });
  });

  it('returns for good on the third R01', () => {
    expect(applied<LoanPayment>(decideLoanPaymentOutcome(payment({ loc_payment_attempts: 3 }), loanEvent('returned'), now))).toMatchObject({ loc_status: 'RETURNED' });
  });

  it.each(['R08', 'R51'])('a stopped or unauthorized loan debit (%s) is CHARGED_BACK, not RETURNED as an account error', (code) => {
    expect(applied<LoanPayment>(decideLoanPaymentOutcome(payment(), loanEvent('returned', { return_code: code }), now)).loc_status).toBe('CHARGED_BACK');
  });

  it('an account error is RETURNED, an unauthorized return CHARGED_BACK', () => {
    expect(applied<LoanPayment>(decideLoanPaymentOutcome(payment(), loanEvent('returned', { return_code: 'R03' }), now)).loc_status).toBe('RETURNED');
    expect(applied<LoanPayment>(decideLoanPaymentOutcome(payment(), loanEvent('returned', { return_code: 'R10' }), now)).loc_status).toBe('CHARGED_BACK');
  });

  it('charges back a completed payment; a replay is a no-op', () => {
    const after = applied<LoanPayment>(decideLoanPaymentOutcome(payment({ loc_status: 'COMPLETED' }), loanEvent('chargeback'), now));
    expect(after.loc_status).toBe('CHARGED_BACK');
    expect(decideLoanPaymentOutcome(after, loanEvent('chargeback'), now)).toEqual({ kind: 'ignore', reason: 'already_applied' });
  });

  it('has no refund for loan payments', () => {
    expect(decideLoanPaymentOutcome(payment({ loc_status: 'COMPLETED' }), loanEvent('refunded'), now)).toEqual({ kind: 'ignore', reason: 'unsupported' });
  });

  it('ignores an outcome for another confirmation', () => {
    expect(decideLoanPaymentOutcome(payment({ loc_confirmation_id: 'other' }), loanEvent('settled'), now)).toEqual({ kind: 'ignore', reason: 'confirmation_mismatch' });
  });

  // An ACH payment that owes attempt n + 1's debit and will not send that key again (PENDING: its request died; FAILED:
  // it ended while that attempt's answer was lost): an entry the audit rows never show can only be that attempt's.
  const unrecorded = (overrides: Partial<LoanPayment> = {}) => {
    const { loc_confirmation_id: _c, ...rest } = payment({ loc_status: 'PENDING', loc_process: 'MANUAL', loc_payment_attempts: 0, version: 0, ...overrides });
    return rest as LoanPayment;
  };
  const unlessRecorded = (decision: ReturnType<typeof decideLoanPaymentOutcome>) => {
    expect(decision.kind).toBe('unless_recorded');
    return decision.kind === 'unless_recorded' ? decision : undefined;
  };

  it('an outcome for a PENDING ACH payment with no submission recorded records attempt 1 under its confirmation and applies, in one write, unless the audit rows show the entry', () => {
    const settled = unlessRecorded(decideLoanPaymentOutcome(unrecorded(), loanEvent('settled', { confirmation_id: 'conf-9' }), now));
    expect(settled?.confirmation_id).toBe('conf-9');
    expect(applied<LoanPayment>(settled!.otherwise as never)).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 1, loc_confirmation_id: 'conf-9', loc_update_reason: 'ach_settled', version: 1 });
    const returned = unlessRecorded(decideLoanPaymentOutcome(unrecorded(), loanEvent('returned', { confirmation_id: 'conf-9', return_code: 'R10' }), now));
    expect(applied<LoanPayment>(returned!.otherwise as never)).toMatchObject({ loc_status: 'CHARGED_BACK', loc_payment_attempts: 1, loc_return_code: 'R10' });
  });

  it('an outcome of another entry for a FAILED ACH payment records attempt n + 1 (a hold or exhausted errors ended it while that debit\'s answer was lost)', () => {
    const failed = payment({ loc_status: 'FAILED', loc_update_reason: 'hold:ach_authorization_required', loc_payment_attempts: 1, loc_confirmation_id: 'conf-1' });
    const decision = unlessRecorded(decideLoanPaymentOutcome(failed, loanEvent('settled', { confirmation_id: 'conf-2' }), now));
    expect(applied<LoanPayment>(decision!.otherwise as never)).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 2, loc_confirmation_id: 'conf-2', version: failed.version + 1 });
    // Its own entry's late outcome changes nothing on a FAILED payment.
    expect(decideLoanPaymentOutcome(failed, loanEvent('settled', { confirmation_id: 'conf-1' }), now)).toEqual({ kind: 'ignore', reason: 'status' });
  });

  it('records no submission for a payment that is not ACH or has one recorded: it waits for the repair attempt (409)', () => {
    expect(decideLoanPaymentOutcome(unrecorded({ loc_payment_method: 'pinless' }), loanEvent('settled', { confirmation_id: 'conf-9' }), now)).toEqual({ kind: 'not_yet_recorded' });
    expect(decideLoanPaymentOutcome(payment({ loc_status: 'RETRY', loc_confirmation_id: 'conf-1' }), loanEvent('settled', { confirmation_id: 'conf-9' }), now)).toMatchObject({ kind: 'unless_recorded' });
  });
});
