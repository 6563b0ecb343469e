import { beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.js';
import { readerAuth } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, instantAt, newUserId, type Caller } from './api-fixtures.js';
import { DAY } from '../support/time.js';

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'api-reads' });
  call = callerFor(app);
});

const SUB = '/v1/subscriptions/{subscriptionId}';

describe('GET /v1/subscriptions/{subscriptionId}', () => {
  it('answers the record with the attribute names of 2.1, amount as dollars and cents', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { amount_cents: 1999, billing_date: instantAt(app, 5 * DAY) }));
    const res = await call('GET', { route: SUB, pathParameters: { subscriptionId: record.subscription_id }, auth: readerAuth });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      user_id: record.user_id,
      billing_date: record.billing_date,
      subscription_id: record.subscription_id,
      amount: '19.99',
      amount_cents: 1999,
      billing_status: 'PENDING',
      term: 'MONTHLY',
      tier: 'plus:v3',
      payment_method: 'pinless',
      account_last_four: '6789',
      payment_attempts: 0,
      process: 'UNKNOWN',
    });
    expect(res.body).not.toHaveProperty('version');
    expect(res.body).not.toHaveProperty('billing_failure');
    expect(res.body).not.toHaveProperty('status_shard');
  });

  it('shows PASTDUE for a PENDING or FAILED record more than 30 days past its billing date, and the stored status otherwise', async () => {
    const [pending] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, -31 * DAY) }));
    const [failed] = await seedRecords(app, billingRecord(app, { billing_status: 'FAILED', billing_date: instantAt(app, -45 * DAY), payment_attempts: 1 }));
    const [recent] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, -29 * DAY) }));
    const [completed] = await seedRecords(app, billingRecord(app, { billing_status: 'COMPLETED', billing_date: instantAt(app, -60 * DAY) }));
    const status = async (id: string) => (await call('GET', { route: SUB, pathParameters: { subscriptionId: id } })).body.billing_status;
    expect(await status(pending.subscription_id)).toBe('PASTDUE');
    expect(await status(failed.subscription_id)).toBe('PASTDUE');
    expect(await status(recent.subscription_id)).toBe('PENDING');
    expect(await status(completed.subscription_id)).toBe('COMPLETED');
  });

  it('carries billing_failure while the saved failure is live, and not once it is voided', async () => {
    const billing_date = instantAt(app, -DAY);
    const [live] = await seedRecords(app, billingRecord(app, {
      billing_date,
      billing_failed_for: `${billing_date}#0`,
      billing_failure_count: 2,
      billing_failed_at: instantAt(app, -60_000),
      billing_next_attempt_at: instantAt(app, 3_600_000),
      billing_last_error: 'The payment processor is unavailable.',
    }));
    const [voided] = await seedRecords(app, billingRecord(app, { billing_date, payment_attempts: 1, billing_status: 'FAILED', billing_failed_for: `${billing_date}#0`, billing_failure_count: 2 }));
    const res = await call('GET', { route: SUB, pathParameters: { subscriptionId: live.subscription_id } });
    expect(res.body.billing_failure).toEqual({
      state: 'retrying',
      count: 2,
      failed_at: live.billing_failed_at,
      next_attempt_at: live.billing_next_attempt_at,
      last_error: 'The payment processor is unavailable.',
    });
    expect(res.body).not.toHaveProperty('billing_failed_for');
    const stale = await call('GET', { route: SUB, pathParameters: { subscriptionId: voided.subscription_id } });
    expect(stale.body).not.toHaveProperty('billing_failure');
  });

  it('answers 404 not_found for an unknown subscription', async () => {
    const res = await call('GET', { route: SUB, pathParameters: { subscriptionId: 'no-such-subscription' } });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it.each([
    ['a slash', 'a/b'],
    ['a hash', 'a#b'],
    ['a space', 'a b'],
    ['257 characters', 'x'.repeat(257)],
    ['a control character', 'a\u0007b'],
    ['nothing', ''],
  ])('refuses a subscription id with %s (400 invalid_path)', async (_what, id) => {
    const res = await call('GET', { route: SUB, pathParameters: { subscriptionId: id } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_path');
    expect(res.body.error.details[0].path).toEqual(['subscriptionId']);
  });
});

describe('GET /v1/users/{userId}/subscriptions', () => {
  it('lists newest first in pages joined by an opaque next token', async () => {
    const user_id = newUserId();
    const records = [0, 1, 2, 3, 4].map((m) => billingRecord(app, { user_id, billing_date: instantAt(app, (m - 2) * 30 * DAY) }));
    await seedRecords(app, ...records);
    const route = '/v1/users/{userId}/subscriptions';
    const first = await call('GET', { route, pathParameters: { userId: user_id }, query: { limit: '2' } });
    expect(first.status).toBe(200);
    expect(first.body.items.map((i: { billing_date: string }) => i.billing_date)).toEqual([records[4]!.billing_date, records[3]!.billing_date]);
    expect(typeof first.body.next).toBe('string');
    const seen = [...first.body.items];
    let next = first.body.next as string | null;
    while (next) {
      const page = await call('GET', { route, pathParameters: { userId: user_id }, query: { limit: '2', next } });
      expect(page.status).toBe(200);
      seen.push(...page.body.items);
      next = page.body.next;
    }
    expect(seen.map((i) => i.subscription_id)).toEqual([...records].reverse().map((r) => r.subscription_id));
  });

  it('answers an empty list with next null for a user without records', async () => {
    const res = await call('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: newUserId() } });
    expect(res.body).toEqual({ items: [], next: null });
  });

  it.each([
    [{ limit: '0' }],
    [{ limit: '101' }],
    [{ limit: 'ten' }],
    [{ limit: '2.5' }],
    [{ limit: '-1' }],
    [{ unknown: 'x' }],
  ])('refuses query %j with 400 invalid_query', async (query) => {
    const res = await call('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: 'u1' }, query });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_query');
  });

  it.each([
    ['not base64 JSON', '!!!'],
    ['another user', Buffer.from(JSON.stringify({ user_id: 'someone-else', billing_date: '2026-01-01T00:00:00.000000000Z' })).toString('base64url')],
    ['an empty key value', Buffer.from(JSON.stringify({ user_id: 'u1', billing_date: '' })).toString('base64url')],
  ])('refuses a page token that is %s with 400 invalid_cursor', async (_what, next) => {
    const res = await call('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: 'u1' }, query: { next } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_cursor');
  });
});

describe('GET /v1/subscriptions/{subscriptionId}/history', () => {
  it('lists the audit rows newest first with data_* and audit fields', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const pay = await call('POST', {
      route: `${SUB}/pay`,
      pathParameters: { subscriptionId: record.subscription_id },
      headers: { 'idempotency-key': 'history-pay-1' },
      body: { reason: 'customer called' },
    });
    expect(pay.status).toBe(200);
    const res = await call('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: record.subscription_id } });
    expect(res.status).toBe(200);
    expect(res.body.next).toBeNull();
    expect(res.body.items).toHaveLength(2);
    const [latest, original] = res.body.items;
    expect(latest).toMatchObject({ billing_status: 'COMPLETED', process: 'MANUAL', actor: 'operator-1', reason: 'customer called', data_payment_method: 'pinless', amount: '19.99' });
    expect(original).toMatchObject({ billing_status: 'PENDING' });
    expect(original).not.toHaveProperty('actor');
  });

  it('answers 404 for an unknown subscription', async () => {
    const res = await call('GET', { route: `${SUB}/history`, pathParameters: { subscriptionId: 'missing' } });
    expect(res.status).toBe(404);
  });
});

describe('GET /v1/subscriptions?billing=failing', () => {
  it('lists only live failures, filtered by state, across PENDING and FAILED, in pages', async () => {
    const due = instantAt(app, -2 * DAY);
    const failure = (count: number, next: string | undefined) => ({
      billing_failed_for: `${due}#0`,
      billing_failure_count: count,
      billing_failed_at: instantAt(app, -DAY),
      ...(next ? { billing_next_attempt_at: next } : {}),
      billing_last_error: 'The payment processor is unavailable.',
    });
    const retrying = billingRecord(app, { billing_date: due, ...failure(1, instantAt(app, 15 * 60_000)) });
    const parked = billingRecord(app, { billing_date: due, ...failure(8, undefined) });
    const parkedFailed = billingRecord(app, {
      billing_date: due,
      billing_status: 'FAILED',
      payment_attempts: 1,
      ...failure(8, undefined),
      billing_failed_for: `${due}#1`,
    });
    const healthy = billingRecord(app, { billing_date: due });
    const voided = billingRecord(app, { billing_date: due, billing_status: 'FAILED', payment_attempts: 2, ...failure(3, undefined) });
    const completed = billingRecord(app, { billing_date: due, billing_status: 'COMPLETED', ...failure(3, undefined) });
    await seedRecords(app, retrying, parked, parkedFailed, healthy, voided, completed);

    // Other tests in this file saved failures too: look only at this test's records.
    const mine = new Set([retrying, parked, parkedFailed, healthy, voided, completed].map((r) => r.subscription_id));
    const all = await collect({ billing: 'failing' });
    const ids = (list: { subscription_id: string }[]) => list.map((i) => i.subscription_id).filter((id) => mine.has(id)).sort();
    expect(ids(all)).toEqual([retrying, parked, parkedFailed].map((r) => r.subscription_id).sort());
    expect(all.find((i) => i.subscription_id === retrying.subscription_id)!.billing_failure).toMatchObject({ state: 'retrying', count: 1 });

    const parkedOnly = await collect({ billing: 'failing', state: 'parked' });
    expect(ids(parkedOnly)).toEqual([parked, parkedFailed].map((r) => r.subscription_id).sort());
    const retryingOnly = await collect({ billing: 'failing', state: 'retrying', limit: '1' });
    expect(ids(retryingOnly)).toEqual([retrying.subscription_id]);
  });

  async function collect(query: Record<string, string>): Promise<{ subscription_id: string; billing_failure?: unknown }[]> {
    const items = [];
    let next: string | null = null;
    do {
      const res = await call('GET', { route: '/v1/subscriptions', query: { ...query, ...(next ? { next } : {}) } });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(Number(query.limit ?? 20));
      items.push(...res.body.items);
      next = res.body.next;
    } while (next);
    return items;
  }

  it.each([
    [{}],
    [{ billing: 'healthy' }],
    [{ billing: 'failing', state: 'waiting' }],
    [{ billing: 'failing', next: 'bm90LWpzb24' }],
  ])('refuses %j with 400', async (query) => {
    const res = await call('GET', { route: '/v1/subscriptions', query });
    expect(res.status).toBe(400);
  });
});

describe('authentication and routing', () => {
  const get = (options: Parameters<Caller>[1]) => call('GET', { route: SUB, pathParameters: { subscriptionId: 'any' }, ...options });

  it('answers 401 without an authorizer context', async () => {
    const res = await get({ auth: null });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('unauthorized');
  });

  it('answers 401 for a token without a subject', async () => {
    expect((await get({ auth: { scopes: ['billing:read'] } })).status).toBe(401);
  });

  it('answers 403 without the route scope', async () => {
    const res = await get({ auth: { sub: 'x', scopes: ['billing:write'] } });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
  });

  it('takes scopes from the space-separated scope claim', async () => {
    const res = await get({ auth: { sub: 'x', scopeClaim: 'openid billing:read' } });
    expect(res.status).toBe(404); // authorized; the subscription does not exist
  });

  it('routes a $default event by method and raw path, decoding path segments', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const res = await call('GET', { path: `/v1/subscriptions/${encodeURIComponent(record.subscription_id)}`, defaultRoute: true });
    expect(res.status).toBe(200);
    expect(res.body.subscription_id).toBe(record.subscription_id);
    const slash = await call('GET', { path: '/v1/subscriptions/a%2Fb', defaultRoute: true });
    expect(slash.status).toBe(400);
  });

  it('answers 404 not_found for an unknown route and 405 for a wrong method', async () => {
    const unknown = await call('GET', { path: '/v1/nothing-here', defaultRoute: true });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    const wrong = await call('DELETE', { path: '/v1/subscriptions/abc', defaultRoute: true });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('GET');
  });
});
