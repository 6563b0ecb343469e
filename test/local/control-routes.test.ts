import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/local/clock.js';
import { controlRoutes, type LocalControl } from '../../src/local/control-routes.js';
import { PaymentSimulator } from '../../src/adapters/processor/simulator.js';

describe('local control routes', () => {
  it('answer a failing part with a generic 500 and a reference, the error only in the log', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
    const control = {
      clock: new SimulatedClock(new Date('2027-03-01T00:00:00Z')),
      logger,
      health: () => ({ ready: true, parts: {} }),
      runCollections: async () => {
        throw new Error('ResourceNotFoundException: table billing-activity-local-secret-name not found');
      },
      afterClockChange: async () => undefined,
    } as unknown as LocalControl;
    const answer = await controlRoutes(control)({ method: 'POST', url: '/local/collections/run', headers: {}, body: '' }, '/local/collections/run');
    expect(answer!.status).toBe(500);
    const body = JSON.parse(answer!.body) as { error: { code: string; message: string; details: { reference: string } } };
    expect(body.error.code).toBe('internal_error');
    expect(answer!.body).not.toContain('billing-activity');
    const logged = lines.map((l) => JSON.parse(l) as { reference?: string; err?: { message: string } }).find((l) => l.reference === body.error.details.reference);
    expect(logged?.err?.message).toContain('billing-activity-local-secret-name');
  });

  it('GET /local/processor/presentments serves the processor`s log, one user`s on ?user_id=, a repeated key marked resend', async () => {
    const clock = new SimulatedClock(new Date('2027-03-01T00:00:00Z'));
    const simulator = new PaymentSimulator(clock);
    simulator.configure({ users: { u2: 'ach_return:R10' } });
    const reference = (user: string) => ({ kind: 'subscription' as const, user_id: user, billing_date: '2027-03-01T00:00:00.000Z', subscription_id: `s-${user}` });
    await simulator.submit({ idempotency_key: 'u1:1', user_id: 'u1', amount_cents: 500, rail: 'pinless', reference: reference('u1'), instrument_id: 'pinless:fp1' });
    await simulator.submit({ idempotency_key: 'u2:1', user_id: 'u2', amount_cents: 500, rail: 'ach', reference: reference('u2'), instrument_id: 'ach:a:b' });
    await simulator.submit({ idempotency_key: 'u2:1', user_id: 'u2', amount_cents: 500, rail: 'ach', reference: reference('u2'), instrument_id: 'ach:a:b' });
    simulator.takeDueAchOutcomes(clock.now().getTime());
    const control = { clock, simulator, logger: pino({ level: 'silent' }), health: () => ({ ready: true, parts: {} }) } as unknown as LocalControl;
    const get = async (url: string) => controlRoutes(control)({ method: 'GET', url, headers: {}, body: '' }, '/local/processor/presentments');
    const answer = await get('/local/processor/presentments?user_id=u2');
    expect(answer!.status).toBe(200);
    const { items } = JSON.parse(answer!.body) as { items: Record<string, unknown>[] };
    expect(items).toEqual([
      expect.objectContaining({ seq: 1, idempotency_key: 'u2:1', instrument_id: 'ach:a:b', at: expect.stringMatching(/^2027-03-01T00:00:00/), resend: false, reinitiated: false, bank: { type: 'returned', return_code: 'R10', at: expect.stringMatching(/^2027-03-01T00:00:00/) } }),
      expect.objectContaining({ seq: 2, idempotency_key: 'u2:1', resend: true }),
    ]);
    expect(JSON.parse((await get('/local/processor/presentments'))!.body).items).toHaveLength(3);
    expect((await get('/local/processor/presentments?user_id=a&user_id=b'))!.status).toBe(400);
  });

  it('GET /local/events filters by a reconciliation event type as well as a period event type (regression: billing.reconciliation.* was refused with 400)', async () => {
    const events = [
      { 'detail-type': 'billing.period.collected', detail: { user_id: 'u1' } },
      { 'detail-type': 'billing.reconciliation.completed', detail: { rail: 'ach' } },
      { 'detail-type': 'billing.reconciliation.exception', detail: { user_id: 'u1', code: 'missing_at_processor' } },
    ];
    const control = {
      clock: new SimulatedClock(new Date('2027-03-01T00:00:00Z')),
      logger: pino({ level: 'silent' }),
      health: () => ({ ready: true, parts: {} }),
      listEvents: (filter: { userId?: string; detailType?: string }) => events.filter((e) => (filter.detailType === undefined || e['detail-type'] === filter.detailType) && (filter.userId === undefined || e.detail.user_id === filter.userId)),
    } as unknown as LocalControl;
    const get = async (query: string) => controlRoutes(control)({ method: 'GET', url: `/local/events${query}`, headers: {}, body: '' }, '/local/events');
    for (const type of ['billing.reconciliation.completed', 'billing.reconciliation.exception', 'billing.period.collected']) {
      const answer = await get(`?detail_type=${type}`);
      expect(answer!.status, answer!.body).toBe(200);
      expect((JSON.parse(answer!.body) as { items: { 'detail-type': string }[] }).items.map((e) => e['detail-type'])).toEqual([type]);
    }
    expect((await get('?detail_type=billing.reconciliation.unknown'))!.status).toBe(400);
  });
});
