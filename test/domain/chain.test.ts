import { describe, expect, it } from 'vitest';
import { applyBillingEvent, applyIntentChange, firstBillingRecord, successorRecord, type WritableAttributes } from '../../src/domain/billing-record.js';
import { chainPeriodAt, isPeriodAt, nextFreeInstant, sameChain } from '../../src/domain/chain.js';
import { intentOf } from '../../src/domain/intent.js';
import { makeRecord } from '../support/billing-fixtures.js';

const now = new Date('2026-11-05T00:00:00Z');
let n = 0;
const ids = { newId: () => `id-${++n}` };

describe('chain identity (F10): one home no writer can drop', () => {
  it('a new chain’s first period names the chain by its own subscription id', () => {
    const first = firstBillingRecord(
      { user_id: 'u1', amount_cents: 1999, term: 'MONTHLY', tier: 'plus:v3', payment_method: 'pinless', first_billing_date: '2026-12-11T12:00:00.000000000Z', friday_billing: 2 },
      now,
      ids,
    );
    expect(first.chain_id).toBe(first.subscription_id);
  });

  it('every successor inherits it, through a pause as through a plain next period; a legacy chain stays legacy', () => {
    const period = makeRecord({ chain_id: 'chain-1' });
    const next = successorRecord(period, now, ids, period.last_run_date)!;
    expect(next.subscription_id).not.toBe('chain-1');
    expect(next.chain_id).toBe('chain-1');
    const paused = successorRecord(makeRecord({ chain_id: 'chain-1', billing_status: 'PAUSED', paused_months: 2 }), now, ids, period.last_run_date)!;
    expect(paused.chain_id).toBe('chain-1');
    expect(successorRecord(makeRecord(), now, ids, period.last_run_date)!.chain_id).toBeUndefined();
  });

  it('no writer’s set can change or drop it, and an intent change carries it', () => {
    const period = makeRecord({ chain_id: 'chain-1' });
    const set = { chain_id: 'chain-2', payment_error: 'x' } as unknown as WritableAttributes;
    expect(applyBillingEvent(period, 'DECLINED', now, { set }).chain_id).toBe('chain-1');
    expect(applyBillingEvent(period, 'DECLINED', now, { set: { chain_id: undefined } as unknown as WritableAttributes }).chain_id).toBe('chain-1');
    expect(applyIntentChange(period, 'WAIVED', now, intentOf(period)).chain_id).toBe('chain-1');
  });

  it('tells chains apart; two legacy records count as one chain (the old rule)', () => {
    expect(sameChain({ chain_id: 'a' }, { chain_id: 'a' })).toBe(true);
    expect(sameChain({ chain_id: 'a' }, { chain_id: 'b' })).toBe(false);
    expect(sameChain({}, { chain_id: 'a' })).toBe(false);
    expect(sameChain({}, {})).toBe(true);
  });

  it('the next free instant is one nanosecond later: the due instant is the same to the millisecond', () => {
    const date = '2027-12-10T12:00:00.000000000Z';
    expect(nextFreeInstant(date)).toBe('2027-12-10T12:00:00.000000001Z');
    expect(isPeriodAt({ billing_date: nextFreeInstant(nextFreeInstant(date)) }, date)).toBe(true);
    expect(isPeriodAt({ billing_date: '2027-12-10T12:00:00.001000000Z' }, date)).toBe(false);
  });

  it('finds a chain’s period at a date among another chain’s records there', () => {
    const date = '2027-12-10T12:00:00.000000000Z';
    const old = { billing_date: date, chain_id: 'old' };
    const mine = { billing_date: nextFreeInstant(date), chain_id: 'new' };
    expect(chainPeriodAt([old, mine], { chain_id: 'new' }, date)).toBe(mine);
    expect(chainPeriodAt([old], { chain_id: 'new' }, date)).toBeUndefined();
  });
});
