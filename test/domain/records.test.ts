import { describe, expect, it } from 'vitest';
import { BILLING_STATUSES, billingRecordSchema, historyRowSchema, keyOf, type BillingRecord } from '../../src/domain/records.js';

const BILLING_DATE = '2026-03-01T00:00:00.000000000Z';

function validRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    user_id: 'user-1',
    billing_date: BILLING_DATE,
    subscription_id: '6f1c2f7e-0b7b-4c1e-9a57-1c1f0e2d3a4b',
    amount_cents: 1999,
    billing_status: 'PENDING',
    last_run_date: '2026-02-01T00:00:00.000000000Z',
    created_date: '2026-02-01T00:00:00.000000000Z',
    process: 'SCHEDULED',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: 'ach',
    payment_attempts: 0,
    version: 1,
    ...overrides,
  };
}

describe('billingRecordSchema', () => {
  it('accepts a valid record', () => {
    const parsed: BillingRecord = billingRecordSchema.parse(validRecord({ friday_billing: 5, billing_anchor_day: 31 }));
    expect(parsed.amount_cents).toBe(1999);
  });

  it('accepts a record with a saved failure', () => {
    const parsed = billingRecordSchema.parse(
      validRecord({
        billing_failed_for: `${BILLING_DATE}#0`,
        billing_failure_count: 2,
        billing_failed_at: '2026-03-01T00:00:00.000000000Z',
        billing_next_attempt_at: '2026-03-01T01:00:00.000000000Z',
        billing_last_error: 'The payment processor is unavailable.',
      }),
    );
    expect(parsed.billing_failure_count).toBe(2);
  });

  it.each([19.99, 0.5, -1, -1999, Number.NaN, Number.POSITIVE_INFINITY, '1999', '19.99'])(
    'rejects amount_cents %j',
    (amount) => {
      expect(billingRecordSchema.safeParse(validRecord({ amount_cents: amount })).success).toBe(false);
    },
  );

  it('accepts zero cents', () => {
    expect(billingRecordSchema.safeParse(validRecord({ amount_cents: 0 })).success).toBe(true);
  });

  it.each(['PASTDUE', 'pending', 'PAID', '', 'RETRY'])('rejects the billing_status %j', (status) => {
    expect(billingRecordSchema.safeParse(validRecord({ billing_status: status })).success).toBe(false);
  });

  it.each(BILLING_STATUSES)('accepts the stored status %s', (status) => {
    expect(billingRecordSchema.safeParse(validRecord({ billing_status: status })).success).toBe(true);
  });

  it.each([
    ['term', 'WEEKLY'],
    ['payment_method', 'cash'],
    ['process', 'CRON'],
    ['friday_billing', 0],
    ['friday_billing', 6],
    ['billing_anchor_day', 32],
    ['payment_attempts', -1],
    ['payment_attempts', 1.5],
    ['version', -1],
    ['billing_failure_count', -1],
    ['user_id', ''],
    ['updated_event', 'SOMETHING'],
  ])('rejects %s = %j', (field, value) => {
    expect(billingRecordSchema.safeParse(validRecord({ [field]: value })).success).toBe(false);
  });

  it.each(['user_id', 'billing_date', 'subscription_id', 'amount_cents', 'billing_status', 'payment_attempts', 'version'])(
    'requires %s',
    (field) => {
      const record = validRecord();
      delete record[field];
      expect(billingRecordSchema.safeParse(record).success).toBe(false);
    },
  );

  it('lets a history row carry decision context and audit fields', () => {
    const row = historyRowSchema.parse(
      validRecord({ data_available_balance_cents: 0, data_balance_source: 'available', data_blocklisted: false, actor: 'op-1' }),
    );
    expect(row.data_available_balance_cents).toBe(0);
    expect(row.data_blocklisted).toBe(false);
  });
});

describe('keyOf', () => {
  it('keeps only the table key', () => {
    expect(keyOf({ user_id: 'u', billing_date: BILLING_DATE, extra: 1 } as never)).toEqual({ user_id: 'u', billing_date: BILLING_DATE });
  });
});
