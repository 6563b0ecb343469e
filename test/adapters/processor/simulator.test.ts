import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileSimulatorJournal } from '../../../src/adapters/processor/journal.js';
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
    // A card the request did not name is the customer's default, resolved and answered as the Stripe adapter does.
    expect(await as('u4')).toEqual({ outcome: 'declined', decline_code: 'some_new_code', card_network: 'visa', message: 'The payment was declined by the bank.', resolved_card: { customer: expect.stringMatching(/^cus_sim_/), payment_method: expect.stringMatching(/^pm_sim_/), fingerprint: expect.any(String), brand: 'visa' } });
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

describe('the payment simulator across a restart (its journal in the data directory)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sim-journal-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const journalFile = () => join(dir, `journal-${++n}.jsonl`);

  it('keeps every pending ACH outcome and answers a repeated key as before, without a second charge', async () => {
    const file = journalFile();
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    const before = new PaymentSimulator(clock, new FileSimulatorJournal(file));
    before.configure({ users: { u3: 'ach_return:R01', u4: 'decline:insufficient_funds' }, ach_settle_delay_ms: 60_000 });
    const settled = await before.submit(request({ rail: 'ach', instrument_id: 'ach-acct-1' }));
    const returned = await before.submit(request({ rail: 'ach', user_id: 'u3', idempotency_key: 'sub-3:1' }));
    const declined = await before.submit(request({ user_id: 'u4', idempotency_key: 'sub-4:1' }));

    // A new process on the same file, with default settings (a restart forgets PUT /local/processor).
    const after = new PaymentSimulator(clock, new FileSimulatorJournal(file));
    expect(await after.submit(request({ rail: 'ach', instrument_id: 'ach-acct-1' }))).toEqual(settled);
    expect(settled).toMatchObject({ instrument_id: 'ach-acct-1' });
    expect(await after.submit(request({ rail: 'ach', user_id: 'u3', idempotency_key: 'sub-3:1' }))).toEqual(returned);
    expect(await after.submit(request({ user_id: 'u4', idempotency_key: 'sub-4:1' }))).toEqual(declined);
    expect(after.charges()).toHaveLength(2);
    clock.advance(60_000);
    expect(after.takeDueAchOutcomes(clock.now().getTime()).map((o) => [o.charge.user_id, o.type, o.return_code])).toEqual([
      ['u1', 'settled', undefined],
      ['u3', 'returned', 'R01'],
    ]);
  });

  it('knows after a restart the refunds made before it, so a refunded_retry resolution still finds them', async () => {
    const file = journalFile();
    const before = new PaymentSimulator(new ManualClock(), new FileSimulatorJournal(file));
    const refund = before.refund({ transaction_id: 'pi_1', amount_cents: 1500 });

    const after = new PaymentSimulator(new ManualClock(), new FileSimulatorJournal(file));
    expect(await after.findRefund({ refund_id: refund.refund_id, rail: 'card' })).toEqual(refund);
    expect(await after.findRefund({ refund_id: 're_other', rail: 'card' })).toBeUndefined();
  });

  it('hands out again after a restart an outcome taken but never acknowledged, and never one the receiver accepted', async () => {
    const file = journalFile();
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    const before = new PaymentSimulator(clock, new FileSimulatorJournal(file));
    await before.submit(request({ rail: 'ach' }));
    await before.submit(request({ rail: 'ach', user_id: 'u2', idempotency_key: 'sub-2:1' }));
    const taken = before.takeDueAchOutcomes(clock.now().getTime());
    expect(taken).toHaveLength(2);
    before.acknowledge(taken[0]!.charge.confirmation_id);

    const after = new PaymentSimulator(clock, new FileSimulatorJournal(file));
    expect(after.takeDueAchOutcomes(clock.now().getTime()).map((o) => o.charge.user_id)).toEqual(['u2']);
  });

  it('skips the torn last line of a killed write, and the next entry starts a line of its own', async () => {
    const file = journalFile();
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    await new PaymentSimulator(clock, new FileSimulatorJournal(file)).submit(request({ rail: 'ach' }));
    appendFileSync(file, '{"charge":{"idempotency_key":"sub-9');
    const after = new PaymentSimulator(clock, new FileSimulatorJournal(file));
    expect(after.charges().map((c) => c.user_id)).toEqual(['u1']);
    await after.submit(request({ rail: 'ach', user_id: 'u2', idempotency_key: 'sub-2:1' }));
    expect(new PaymentSimulator(clock, new FileSimulatorJournal(file)).charges().map((c) => c.user_id)).toEqual(['u1', 'u2']);
    expect(readFileSync(file, 'utf8').split('\n').filter((line) => line.startsWith('{"charge"'))).toHaveLength(3);
  });
});
