import { beforeAll, describe, expect, it } from 'vitest';
import { TransientError } from '../../src/domain/errors.js';
import type { PaymentProcessor, PaymentRequest } from '../../src/domain/ports/processor.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { readerAuth } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, holdLock, instantAt, type Caller } from './api-fixtures.js';
import { DAY } from '../support/time.js';

let app: TestApp;
let call: Caller;
/** Users whose payments fail with a transient processor error (not saved as a billing failure). */
const transientUsers = new Set<string>();

beforeAll(async () => {
  const processor: PaymentProcessor = {
    submit: async (request: PaymentRequest) => {
      if (transientUsers.has(request.user_id)) throw new TransientError('processor connection reset');
      return app.simulator.submit(request);
    },
  };
  app = await createTestApp({ label: 'api-actions', processor });
  call = callerFor(app);
});

const SUB = '/v1/subscriptions/{subscriptionId}';
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const historyOf = async (id: string) => (await call('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: id } })).body.items;

describe('POST /v1/subscriptions/{subscriptionId}/pay', () => {
  const pay = (id: string, options: Parameters<Caller>[1] = {}) =>
    call('POST', { route: `${SUB}/pay`, pathParameters: { subscriptionId: id }, ...options });

  it('collects a due pinless period once for one Idempotency-Key and replays the answer', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const first = await pay(record.subscription_id, { headers: { 'Idempotency-Key': 'pay-once-1' } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ outcome: 'collected', replayed: false, subscription: { billing_status: 'COMPLETED', process: 'MANUAL', payment_attempts: 1 } });
    const again = await pay(record.subscription_id, { headers: { 'Idempotency-Key': 'pay-once-1' } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ outcome: 'collected', replayed: true });
    expect(again.body.subscription).toEqual(first.body.subscription);
    expect(chargesOf(record.user_id)).toHaveLength(1);
    expect(chargesOf(record.user_id)[0]!.idempotency_key).toBe(`${record.subscription_id}:1`);
  });

  it('answers submitted for ACH and declined for a decline', async () => {
    const [ach] = await seedRecords(app, billingRecord(app, { payment_method: 'ach' }));
    const submitted = await pay(ach.subscription_id, { headers: { 'idempotency-key': 'ach-1' } });
    expect(submitted.body).toMatchObject({ outcome: 'submitted', subscription: { billing_status: 'ACHSENT' } });

    const [declining] = await seedRecords(app, billingRecord(app));
    app.simulator.configure({ users: { [declining.user_id]: 'decline' } });
    const declined = await pay(declining.subscription_id, { headers: { 'idempotency-key': 'decline-1' } });
    app.simulator.configure({});
    expect(declined.body).toMatchObject({ outcome: 'declined', subscription: { billing_status: 'FAILED', payment_error: 'The payment was declined by the bank.' } });
  });

  it('answers not_due for a period already collected, under a new key', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_status: 'COMPLETED', payment_attempts: 1 }));
    const res = await pay(record.subscription_id, { headers: { 'idempotency-key': 'late-1' } });
    expect(res.body).toMatchObject({ outcome: 'not_due', not_due_reason: 'status', replayed: false });
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it('answers failed with billing_failure when the processor errors', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    const res = await pay(record.subscription_id, { headers: { 'idempotency-key': 'err-1' } });
    app.simulator.configure({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'failed', billing_failure: { state: 'retrying', count: 1, last_error: 'The payment processor is unavailable.' } });
  });

  it('writes actor and reason into the history row', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    await pay(record.subscription_id, { headers: { 'idempotency-key': 'audit-1' }, body: { reason: 'customer asked on the phone' }, auth: { sub: 'agent-7', scopes: ['billing:write'] } });
    const [latest] = await historyOf(record.subscription_id);
    expect(latest).toMatchObject({ actor: 'agent-7', reason: 'customer asked on the phone', process: 'MANUAL' });
  });

  it('answers 409 locked while another invocation bills the user', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    await holdLock(app, record.user_id);
    const res = await pay(record.subscription_id, { headers: { 'idempotency-key': 'locked-1' } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('locked');
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it.each([
    ['no Idempotency-Key', {}, 'idempotency_key_required'],
    ['an empty Idempotency-Key', { 'idempotency-key': '' }, 'invalid_idempotency_key'],
    ['a non-ASCII Idempotency-Key', { 'idempotency-key': 'clé' }, 'invalid_idempotency_key'],
    ['a 256-character Idempotency-Key', { 'idempotency-key': 'k'.repeat(256) }, 'invalid_idempotency_key'],
  ])('answers 400 for %s', async (_what, headers, code) => {
    const res = await pay('any-subscription', { headers });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
  });

  it.each([
    ['malformed JSON', '{"reason":', 'invalid_json'],
    ['a non-object body', '[1,2]', 'invalid_body'],
    ['a non-string reason', { reason: 5 }, 'invalid_body'],
    ['an unknown field', { amount: '1.00' }, 'invalid_body'],
  ])('answers 400 for %s', async (_what, body, code) => {
    const res = await pay('any-subscription', { headers: { 'idempotency-key': 'k1' }, body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
  });

  it('needs billing:write (403) and answers 404 for an unknown subscription', async () => {
    expect((await pay('x', { headers: { 'idempotency-key': 'k' }, auth: readerAuth })).status).toBe(403);
    expect((await pay('no-such', { headers: { 'idempotency-key': 'k' } })).status).toBe(404);
  });
});

describe('POST /v1/subscriptions/{subscriptionId}/retry-billing', () => {
  const retry = (id: string, options: Parameters<Caller>[1] = {}) =>
    call('POST', { route: `${SUB}/retry-billing`, pathParameters: { subscriptionId: id }, ...options });

  const parked = (app: TestApp) => {
    const billing_date = instantAt(app, -3 * DAY);
    return seedRecords(app, billingRecord(app, {
      billing_date,
      billing_failed_for: `${billing_date}#0`,
      billing_failure_count: 8,
      billing_failed_at: instantAt(app, -DAY),
      billing_last_error: 'The payment processor is unavailable.',
    })).then(([record]) => record);
  };

  it('billed: clears a parked failure, collects, and answers exactly outcome, still_due and subscription', async () => {
    const record = await parked(app);
    const res = await retry(record.subscription_id, { body: { reason: 'processor is back' } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['outcome', 'still_due', 'subscription']);
    expect(res.body).toMatchObject({ outcome: 'billed', still_due: false, subscription: { billing_status: 'COMPLETED', process: 'OPERATOR_RETRY' } });
    expect(res.body.subscription).not.toHaveProperty('billing_failure');
    const history = await historyOf(record.subscription_id);
    expect(history[0]).toMatchObject({ billing_status: 'COMPLETED', actor: 'operator-1', reason: 'processor is back' });
    expect(history[1]).toMatchObject({ updated_event: 'BILLING_RETRY_REQUESTED', actor: 'operator-1', reason: 'processor is back' });
    expect(history[1]).not.toHaveProperty('billing_failure');
  });

  it('failed: the processor errors again and the failure restarts at count 1', async () => {
    const record = await parked(app);
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    const res = await retry(record.subscription_id);
    app.simulator.configure({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'failed', still_due: false, billing_failure: { state: 'retrying', count: 1 } });
    expect(res.body.subscription.billing_failure).toMatchObject({ count: 1 });
  });

  it('still_due: a transient error leaves the period due with nothing saved', async () => {
    const record = await parked(app);
    transientUsers.add(record.user_id);
    const res = await retry(record.subscription_id);
    transientUsers.delete(record.user_id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ outcome: 'still_due', still_due: true, subscription: { billing_status: 'PENDING' } });
    expect(res.body).not.toHaveProperty('billing_failure');
    expect(res.body.subscription).not.toHaveProperty('billing_failure');
  });

  it('answers 409 locked and changes nothing while the lock is held', async () => {
    const record = await parked(app);
    await holdLock(app, record.user_id);
    const res = await retry(record.subscription_id);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('locked');
    const after = await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id } });
    expect(after.body.billing_failure).toMatchObject({ state: 'parked', count: 8 });
  });

  it('answers 409 illegal_transition for a completed period', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_status: 'COMPLETED', payment_attempts: 1 }));
    const res = await retry(record.subscription_id);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('illegal_transition');
  });

  it('needs billing:operate (403)', async () => {
    const res = await retry('x', { auth: { sub: 'u', scopes: ['billing:read', 'billing:write'] } });
    expect(res.status).toBe(403);
  });
});

describe('POST /v1/subscriptions/{subscriptionId}/waive', () => {
  const waive = (id: string, options: Parameters<Caller>[1] = {}) =>
    call('POST', { route: `${SUB}/waive`, pathParameters: { subscriptionId: id }, ...options });

  it('writes the period off and audits actor and reason', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const res = await waive(record.subscription_id, { body: { reason: 'goodwill credit' }, auth: { sub: 'ops-9', scopes: ['billing:operate'] } });
    expect(res.status).toBe(200);
    expect(res.body.subscription).toMatchObject({ billing_status: 'WAIVED', updated_event: 'WAIVED' });
    const [latest] = await historyOf(record.subscription_id);
    expect(latest).toMatchObject({ billing_status: 'WAIVED', actor: 'ops-9', reason: 'goodwill credit' });
  });

  it.each([
    ['no body', undefined],
    ['an empty object', {}],
    ['an empty reason', { reason: '' }],
    ['a blank reason', { reason: '   ' }],
    ['a numeric reason', { reason: 42 }],
  ])('requires a reason: 400 for %s', async (_what, body) => {
    const [record] = await seedRecords(app, billingRecord(app));
    const res = await waive(record.subscription_id, body === undefined ? {} : { body });
    expect(res.status).toBe(400);
    const after = await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id } });
    expect(after.body.billing_status).toBe('PENDING');
  });

  it('answers 409 illegal_transition for a completed period', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_status: 'COMPLETED' }));
    const res = await waive(record.subscription_id, { body: { reason: 'too late' } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('illegal_transition');
  });
});

describe('PUT /v1/subscriptions/{subscriptionId}/billing-date', () => {
  const move = (id: string, body: unknown, options: Parameters<Caller>[1] = {}) =>
    call('PUT', { route: `${SUB}/billing-date`, pathParameters: { subscriptionId: id }, body, ...options });

  it('moves a future period: deletes the old item and puts the new one, same subscription id, audited', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, 10 * DAY) }));
    const res = await move(record.subscription_id, { billing_date: '2026-12-20T00:00:00+02:00', reason: 'payday moved' });
    expect(res.status).toBe(200);
    expect(res.body.subscription).toMatchObject({ subscription_id: record.subscription_id, billing_date: '2026-12-19T22:00:00.000000000Z', updated_event: 'DUE_DATE_CHANGED' });
    expect(await app.deps.billing.get(record)).toBeUndefined();
    expect(await app.deps.billing.get({ user_id: record.user_id, billing_date: '2026-12-19T22:00:00.000000000Z' })).toBeDefined();
    const read = await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id } });
    expect(read.body.billing_date).toBe('2026-12-19T22:00:00.000000000Z');
    const history = await historyOf(record.subscription_id);
    expect(history.slice(0, 2).every((row: { actor?: string; reason?: string }) => row.actor === 'operator-1' && row.reason === 'payday moved')).toBe(true);
  });

  it('answers 409 unbilled_period for a due, unbilled period', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const res = await move(record.subscription_id, { billing_date: instantAt(app, 10 * DAY) });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('unbilled_period');
  });

  it('answers 409 illegal_transition for a completed future period', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_status: 'COMPLETED', billing_date: instantAt(app, 2 * DAY) }));
    const res = await move(record.subscription_id, { billing_date: instantAt(app, 10 * DAY) });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('illegal_transition');
  });

  it.each([
    ['an impossible date', { billing_date: '2026-02-30T00:00:00Z' }],
    ['a date without time', { billing_date: '2026-12-20' }],
    ['a number', { billing_date: 1766188800 }],
    ['no billing_date', {}],
    ['a date in the past', { billing_date: '2020-01-01T00:00:00Z' }],
  ])('answers 400 for %s', async (_what, body) => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, 10 * DAY) }));
    const res = await move(record.subscription_id, body);
    expect(res.status).toBe(400);
  });
});
