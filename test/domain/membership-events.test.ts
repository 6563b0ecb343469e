import { describe, expect, it } from 'vitest';
import { membershipEventSchema } from '../../src/domain/membership-events.js';

const plan = { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'pinless', first_billing_date: '2026-12-15T00:00:00Z' };

describe('membership event schema', () => {
  const base = { event_id: 'e1', user_id: 'u1', occurred_at: '2026-12-01T12:00:00+02:00' };

  it('converts the plan amount to exact cents and normalises instants', () => {
    const parsed = membershipEventSchema.parse({ ...base, type: 'NEW', plan: { ...plan, amount: '1234567.89' } });
    expect(parsed).toMatchObject({ occurred_at: '2026-12-01T10:00:00.000000000Z', plan: { amount: 123456789, first_billing_date: '2026-12-15T00:00:00.000000000Z' } });
  });

  it.each([
    ['three decimals', { ...base, type: 'NEW', plan: { ...plan, amount: '19.999' } }],
    ['a number amount', { ...base, type: 'NEW', plan: { ...plan, amount: 19.99 } }],
    ['a zero amount', { ...base, type: 'NEW', plan: { ...plan, amount: '0.00' } }],
    ['an unknown term', { ...base, type: 'NEW', plan: { ...plan, term: 'WEEKLY' } }],
    ['friday_billing 6', { ...base, type: 'NEW', plan: { ...plan, friday_billing: 6 } }],
    ['pause of 0 months', { ...base, type: 'PAUSE', months: 0 }],
    ['pause of 13 months', { ...base, type: 'PAUSE', months: 13 }],
    ['pause without months', { ...base, type: 'PAUSE' }],
    ['an unknown type', { ...base, type: 'UPGRADE' }],
    ['an impossible date', { ...base, type: 'BAN', occurred_at: '2026-02-30T00:00:00Z' }],
    ['no user', { ...base, type: 'BAN', user_id: '' }],
  ])('rejects %s', (_label, input) => {
    expect(membershipEventSchema.safeParse(input).success).toBe(false);
  });
});
