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
