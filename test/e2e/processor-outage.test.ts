import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargesFor, newMember, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * Our outages are ours (docs/design.md, security), black-box through `npm start`: the simulator's
 * revoked key is a refused client on every call; the run reports the outage and no period moves.
 */

let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await startLocalRuntime({ args: ['--no-schedule'] });
}, 100_000);

afterAll(async () => {
  if (runtime) expect(await runtime.stop(), runtime.output()).toBe(0);
}, 30_000);

async function periodsOf(userId: string): Promise<unknown[]> {
  const { status, body } = await runtime.api('GET', `/v1/users/${userId}/subscriptions`);
  expect(status).toBe(200);
  return body.items;
}

describe('the simulated payments service under npm start checks who is calling', () => {
  const basic = (secret: string) => `Basic ${Buffer.from(`billing-local:${secret}`).toString('base64')}`;
  const payment = { idempotency_key: 'unauth-1:1', user_id: 'unauth-1', amount_cents: 1999, rail: 'ach' };

  it('refuses a payment without a token or with a wrong client secret, and takes one with the local client token', async () => {
    const unauthenticated = await runtime.call('POST', '/local/payments-service/payments', payment);
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body).toMatchObject({ error: { code: 'invalid_token' } });
    const form = (authorization: string) => ({ authorization, 'content-type': 'application/x-www-form-urlencoded' });
    const wrong = await runtime.call('POST', '/local/payments-service/oauth/token', 'grant_type=client_credentials', form(basic('wrong')));
    expect(wrong).toEqual({ status: 401, body: { error: 'invalid_client' } });
    expect(await chargesFor(runtime, 'unauth-1')).toEqual([]);

    const issued = await runtime.call('POST', '/local/payments-service/oauth/token', 'grant_type=client_credentials', form(basic('local-services-client-secret')));
    expect(issued.status).toBe(200);
    const paid = await runtime.call('POST', '/local/payments-service/payments', payment, { authorization: `Bearer ${issued.body.access_token}` });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(await chargesFor(runtime, 'unauth-1')).toHaveLength(1);
  });
});

describe('a revoked processor key under npm start', () => {
  it('leaves every period unchanged, charges nothing, and the run reports the outage', async () => {
    const users = { card: 'outage-card', ach: 'outage-ach', pinless: 'outage-pinless' } as const;
    for (const [rail, user] of Object.entries(users)) await newMember(runtime, user, rail as 'card' | 'ach' | 'pinless');
    const before = await Promise.all(Object.values(users).map(periodsOf));
    expect((await runtime.call('PUT', '/local/processor', { default: 'approve', auth: 'revoked' })).status).toBe(200);

    const first = await runtime.call('POST', '/local/collections/run');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.processor_outage).toContain('accounts');
    expect(first.body.outcomes.failed_counted).toBe(0);
    expect(first.body.outcomes.retry_later).toBe(0);

    // Days later, the key still revoked: the planner leaves the work in the due-index.
    expect((await runtime.call('POST', '/local/clock', { advance: 'P2D' })).status).toBe(200);
    const second = await runtime.call('POST', '/local/collections/run');
    expect(second.body.processor_outage, JSON.stringify(second.body)).toContain('accounts');
    expect(second.body.skipped_outage).toBeGreaterThanOrEqual(3);
    expect(second.body.enqueued).toBe(0);

    expect(await Promise.all(Object.values(users).map(periodsOf))).toEqual(before);
    for (const user of Object.values(users)) expect(await chargesFor(runtime, user)).toEqual([]);
    expect(runtime.output()).toMatch(/processor outage/);
  });
});
