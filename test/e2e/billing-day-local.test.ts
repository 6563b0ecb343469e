import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulatedNow, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * The billing day through `npm start` with budgets set (DESIGN 13, issue "billing day"): a backlog
 * of periods due at one instant, half card and half pinless, the simulator throttling each
 * processor at its budget, and the local scheduler's paced runs draining it. Black-box: only HTTP.
 */

const PERIODS = 200;
const BUDGET = 5;
const INTERVAL_S = 20;
/** Stop waiting for the drain this long after the first run (at E = 4/s per processor it needs about 35 s; a loaded machine, more). */
const DRAIN_DEADLINE_MS = 120_000;

let runtime: LocalRuntime;

beforeAll(async () => {
  runtime = await startLocalRuntime({
    env: { STRIPE_BUDGET_PER_SECOND: String(BUDGET), PAYMENTS_BUDGET_PER_SECOND: String(BUDGET), COLLECTIONS_INTERVAL_MS: String(INTERVAL_S * 1000) },
  });
}, 100_000);

afterAll(async () => {
  if (runtime) expect(await runtime.stop(), runtime.output()).toBe(0);
}, 30_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pool<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    for (let i = next++; i < items.length; i = next++) await work(items[i]!);
  }));
}

const userOf = (i: number) => `day-${i % 2 === 0 ? 'card' : 'pinless'}-${i}`;

/** A NEW membership whose first period falls due at `due`. */
async function join(i: number, due: string): Promise<void> {
  const rail = i % 2 === 0 ? 'card' : 'pinless';
  const answer = await runtime.call('POST', '/local/memberships', {
    event_id: `evt-day-${i}`,
    type: 'NEW',
    user_id: userOf(i),
    occurred_at: await simulatedNow(runtime),
    plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: rail, ...(rail === 'pinless' ? { account_last_four: '6789' } : {}), first_billing_date: due },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.status).toBe('applied');
}

interface Charge {
  readonly user_id: string;
  readonly reference: { kind: string; user_id?: string; billing_date?: string };
}

async function charges(): Promise<Charge[]> {
  return (await runtime.call<{ items: Charge[] }>('GET', '/local/processor/charges')).body.items;
}

interface QueueStats {
  sent: number;
  visible: number;
  delayed: number;
  in_flight: number;
  dead_letters: number;
}

const held = (q: QueueStats) => q.visible + q.delayed + q.in_flight;

async function queues(): Promise<{ collectionsStripe: QueueStats; collectionsPayments: QueueStats }> {
  const answer = await runtime.call('GET', '/local/queues');
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.queues;
}

describe('a billing day under npm start with budgets set', () => {
  it('presents every period once at the budget: nothing throttled beyond the goal, nothing counted, about one message per period', async () => {
    // Due tomorrow, so no scheduled run sees a partial backlog while the members join.
    const due = new Date(Date.parse(await simulatedNow(runtime)) + 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    await pool(Array.from({ length: PERIODS }, (_, i) => i), 24, (i) => join(i, due));
    const throttle = { default: 'approve', rate_limit_per_second: { stripe: BUDGET, payments: BUDGET }, latency_ms: { p50: 120, p99: 380 } };
    expect((await runtime.call('PUT', '/local/processor', throttle)).status).toBe(200);
    expect((await runtime.call('POST', '/local/clock', { now: due })).status).toBe(200);

    // The run answers the planner's summary at once: its messages are delayed to the budget's pace.
    const first = await runtime.call('POST', '/local/collections/run');
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ planner: 'paced', delivered: 0 });
    const planned = first.body.by_processor;
    expect(planned.stripe.enqueued).toBeGreaterThan(0);
    expect(planned.payments.enqueued).toBeGreaterThan(0);
    expect(planned.stripe.deferred + planned.payments.deferred, 'the backlog is more than one run').toBeGreaterThan(0);
    expect((await charges()).length, 'answered before the drain').toBeLessThan(first.body.enqueued);

    // The scheduler's runs take the rest.
    const started = Date.now();
    let done = false;
    while (Date.now() - started < DRAIN_DEADLINE_MS) {
      await sleep(1_000);
      const q = await queues();
      if ((await charges()).length >= PERIODS && held(q.collectionsStripe) + held(q.collectionsPayments) === 0) {
        done = true;
        break;
      }
    }
    const all = await charges();
    expect(done, `${all.length}/${PERIODS} charged within ${DRAIN_DEADLINE_MS / 1000} s\n${runtime.output().slice(-4000)}`).toBe(true);

    // Exactly one charge per period, from the simulator's own list.
    const perPeriod = new Map<string, number>();
    for (const c of all) if (c.reference.kind === 'subscription') perPeriod.set(c.user_id, (perPeriod.get(c.user_id) ?? 0) + 1);
    for (let i = 0; i < PERIODS; i++) expect(perPeriod.get(userOf(i)), userOf(i)).toBe(1);
    expect(all).toHaveLength(PERIODS);

    const stats = (await runtime.call('GET', '/local/processor/stats')).body;
    expect(stats.throttled / stats.requests, JSON.stringify(stats)).toBeLessThanOrEqual(0.001);
    expect(stats.by_processor.stripe.max_per_second).toBeLessThanOrEqual(BUDGET);
    expect(stats.by_processor.payments.max_per_second).toBeLessThanOrEqual(BUDGET);

    const q = await queues();
    const sent = q.collectionsStripe.sent + q.collectionsPayments.sent;
    expect(sent / PERIODS, JSON.stringify(q)).toBeLessThanOrEqual(1.02);
    expect(q.collectionsStripe.dead_letters + q.collectionsPayments.dead_letters).toBe(0);

    // Nothing counted on the ladder, no dunning move: every period completed.
    for (const billing of ['failing', 'dunning'] as const) {
      const listed = await runtime.api('GET', `/v1/subscriptions?billing=${billing}`);
      expect(listed.status, JSON.stringify(listed.body)).toBe(200);
      expect(listed.body.items).toEqual([]);
    }
    await pool(Array.from({ length: PERIODS }, (_, i) => i), 8, async (i) => {
      const { body } = await runtime.api('GET', `/v1/users/${userOf(i)}/subscriptions`);
      const period = body.items.find((r: { billing_date: string }) => Date.parse(r.billing_date) === Date.parse(due));
      expect(period, userOf(i)).toMatchObject({ billing_status: 'COMPLETED' });
      expect(period.billing_failure).toBeUndefined();
      expect(period.dunning).toBeUndefined();
    });
  }, 240_000);
});
