import { describe, expect, it } from 'vitest';
import { PaymentSimulator } from '../../../src/adapters/processor/simulator.js';
import { ProcessorError } from '../../../src/domain/errors.js';
import type { PaymentRequest } from '../../../src/domain/ports/processor.js';
import { ManualClock } from '../../support/fakes.js';

const request = (overrides: Partial<PaymentRequest> = {}): PaymentRequest => ({
  idempotency_key: 'sub-1:1',
  user_id: 'u1',
  amount_cents: 1999,
  rail: 'card',
  reference: { kind: 'subscription', user_id: 'u1', billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: 'sub-1' },
  ...overrides,
});

describe('the local payment simulator', () => {
  it('answers a repeated idempotency key with the first result and never records a second charge', async () => {
    const sim = new PaymentSimulator(new ManualClock());
    const first = await sim.submit(request());
    expect(await sim.submit(request())).toEqual(first);
    expect(sim.charges()).toHaveLength(1);
  });

  it('follows per-user outcomes over the default: decline is not a charge, error throws and may be retried', async () => {
    const sim = new PaymentSimulator(new ManualClock());
    sim.configure({ default: 'approve', users: { u1: 'decline', u2: 'error' } });
    expect(await sim.submit(request())).toMatchObject({ outcome: 'declined' });
    await expect(sim.submit(request({ user_id: 'u2', idempotency_key: 'sub-2:1' }))).rejects.toBeInstanceOf(ProcessorError);
    sim.configure({ default: 'approve' });
    expect(await sim.submit(request({ user_id: 'u2', idempotency_key: 'sub-2:1' }))).toMatchObject({ outcome: 'approved' });
    expect(sim.charges().map((c) => c.user_id)).toEqual(['u2']);
  });

  it('declines with Stripe decline codes and the advice Stripe sends; plain decline is generic_decline', async () => {
    const sim = new PaymentSimulator(new ManualClock());
    sim.configure({ users: { u1: 'decline', u2: 'decline:lost_card', u3: 'decline:expired_card', u4: 'decline:some_new_code' } });
    const as = (user: string) => sim.submit(request({ user_id: user, idempotency_key: `${user}:1` }));
    expect(await as('u1')).toMatchObject({ outcome: 'declined', decline_code: 'generic_decline', advice_code: 'try_again_later', card_network: 'visa' });
    expect(await as('u2')).toMatchObject({ decline_code: 'lost_card', advice_code: 'do_not_try_again', network_decline_code: '41' });
    expect(await as('u3')).toMatchObject({ decline_code: 'expired_card', advice_code: 'confirm_card_data' });
    expect(await as('u4')).toEqual({ outcome: 'declined', decline_code: 'some_new_code', card_network: 'visa', message: 'The payment was declined by the bank.' });
    expect(() => sim.configure({ users: { u5: 'decline:Lost Card' as 'decline' } })).toThrow();
    expect(sim.charges()).toHaveLength(0);
  });

  it('hands out ACH outcomes once their settle delay has passed, each once', async () => {
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    const sim = new PaymentSimulator(clock);
    sim.configure({ default: 'approve', users: { u3: 'ach_return:R01' }, ach_settle_delay_ms: 60_000 });
    await sim.submit(request({ rail: 'ach' }));
    await sim.submit(request({ rail: 'ach', user_id: 'u3', idempotency_key: 'sub-3:1' }));
    expect(sim.takeDueAchOutcomes(clock.now().getTime())).toEqual([]);
    clock.advance(60_000);
    const due = sim.takeDueAchOutcomes(clock.now().getTime());
    expect(due.map((o) => [o.charge.user_id, o.type, o.return_code])).toEqual([
      ['u1', 'settled', undefined],
      ['u3', 'returned', 'R01'],
    ]);
    expect(sim.takeDueAchOutcomes(clock.now().getTime())).toEqual([]);
  });

  it('finds the subscription of a card payment by its confirmation id, as Stripe finds a PaymentIntent', async () => {
    const sim = new PaymentSimulator(new ManualClock());
    const result = await sim.submit(request());
    expect(result.outcome).toBe('approved');
    const id = result.outcome === 'approved' ? result.confirmation_id : '';
    expect(await sim.findReference(id)).toEqual({ user_id: 'u1', billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: 'sub-1' });
    expect(await sim.findReference('pi_unknown')).toBeUndefined();
  });

  it('refuses unknown outcome names', () => {
    const sim = new PaymentSimulator(new ManualClock());
    expect(() => sim.configure({ default: 'maybe' as never })).toThrow();
    expect(() => sim.configure({ users: { u1: 'ach_return:X1' } })).toThrow();
  });

  it('knows the refunds made at it, and no others', async () => {
    const sim = new PaymentSimulator(new ManualClock());
    const refund = sim.refund({ transaction_id: 'pi_1', amount_cents: 1500 });
    expect(refund).toMatchObject({ transaction_id: 'pi_1', amount_cents: 1500, status: 'succeeded' });
    expect(await sim.findRefund({ refund_id: refund.refund_id, rail: 'card' })).toEqual(refund);
    expect(await sim.findRefund({ refund_id: 're_other', rail: 'card' })).toBeUndefined();
  });
});
