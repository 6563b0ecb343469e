import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedEventSchema } from '../../src/domain/published-events.js';
import { LADDER_WAITS, newMember, periodOf, simulatedNow, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * Events out through `npm start` (docs/design.md section 11), black-box: the history stream of
 * DynamoDB Local, polled like Lambda's event source mapping, feeds the events-publisher, which puts
 * on the local bus; GET /local/events lists what was published and LOCAL_EVENTS_WEBHOOK_URL
 * receives each event.
 */

let runtime: LocalRuntime;
let hook: Server;
const received: any[] = [];

beforeAll(async () => {
  hook = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(text));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  runtime = await startLocalRuntime({ env: { LOCAL_EVENTS_WEBHOOK_URL: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/billing-events` } });
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  await new Promise<void>((r) => (hook ? hook.close(() => r()) : r()));
});

/** The user's events once `done` holds for them (the poller runs on its own), oldest first. */
async function eventsOf(userId: string, done: (events: any[]) => boolean, timeoutMs = 20_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await runtime.call('GET', `/local/events?user_id=${encodeURIComponent(userId)}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    if (done(answer.body.items)) return answer.body.items;
    if (Date.now() > deadline) throw new Error(`events of ${userId} not as expected in time: ${JSON.stringify(answer.body.items.map((e: any) => e['detail-type']))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const has = (...types: string[]) => (events: any[]) => types.every((t) => events.some((e) => e['detail-type'] === t));

/** The shape of docs/design.md, events out: the envelope a rule target receives, and a detail the shared schema accepts. */
function expectDesignShape(event: any, userId: string) {
  expect(event).toMatchObject({ version: '0', id: expect.any(String), source: 'billing', account: expect.any(String), region: expect.any(String), time: expect.any(String), resources: [] });
  expect(publishedEventSchema.safeParse({ source: event.source, 'detail-type': event['detail-type'], detail: event.detail }).success).toBe(true);
  expect(Object.keys(event.detail)).toEqual(expect.arrayContaining(['event_id', 'user_id', 'subscription_id', 'billing_date', 'billing_status', 'amount_cents', 'occurred_at']));
  expect(event.detail).toMatchObject({ user_id: userId, amount_cents: 1999 });
}

describe('events out through the local runtime', () => {
  it('a collection, a dunning exhaustion, an ACH return, a parked subscription and a waive each show up in GET /local/events', async () => {
    expect(
      (
        await runtime.call('PUT', '/local/processor', {
          default: 'approve',
          users: { 'ev-park': 'error', 'ev-lost': 'decline:lost_card', 'ev-return': 'ach_return:R01' },
        })
      ).status,
    ).toBe(200);
    const due = await newMember(runtime, 'ev-collect', 'pinless');
    await newMember(runtime, 'ev-lost', 'pinless');
    await newMember(runtime, 'ev-return', 'ach');
    await newMember(runtime, 'ev-park', 'pinless');
    const now = await simulatedNow(runtime);
    const later = new Date(Date.parse(now) + 7 * 86_400_000).toISOString();
    const joined = await runtime.call('POST', '/local/memberships', {
      event_id: 'evt-new-ev-waive',
      type: 'NEW',
      user_id: 'ev-waive',
      occurred_at: now,
      plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'pinless', account_last_four: '6789', first_billing_date: later },
    });
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);

    // One collections run: collected, declined for good, submitted and returned (the pump delivers the R01 after the run), first failure.
    expect((await runtime.call('POST', '/local/collections/run')).status).toBe(200);

    const collected = await eventsOf('ev-collect', has('billing.period.collected'));
    expect(collected.map((e) => e['detail-type'])).toEqual(['billing.period.collected']);
    expectDesignShape(collected[0], 'ev-collect');
    const period = await periodOf(runtime, 'ev-collect', due);
    expect(collected[0].detail).toMatchObject({ subscription_id: period.subscription_id, billing_date: due, billing_status: 'COMPLETED', process: 'SCHEDULED', payment_method: 'pinless' });

    // A lost card is a do_not_retry decline: it also holds the card itself (billing.instrument.held).
    const lost = await eventsOf('ev-lost', has('billing.instrument.held'));
    expect(lost.map((e) => e['detail-type'])).toEqual(['billing.period.declined', 'billing.dunning.exhausted', 'billing.instrument.held']);
    for (const e of lost) expectDesignShape(e, 'ev-lost');
    expect(lost[1].detail).toMatchObject({ decline_code: 'lost_card', decline_class: 'do_not_retry', billing_status: 'FAILED' });
    expect(lost[2].detail).toMatchObject({ hold_code: 'payment_method_required' });

    const returned = await eventsOf('ev-return', has('billing.ach.returned'));
    expect(returned.map((e) => e['detail-type'])).toEqual(['billing.period.submitted', 'billing.ach.returned']);
    for (const e of returned) expectDesignShape(e, 'ev-return');
    expect(returned[1].detail).toMatchObject({ return_code: 'R01', represent: true, unauthorized: false, billing_status: 'FAILED' });

    // Seven more counted failures, each after its ladder wait: the eighth parks.
    for (const wait of LADDER_WAITS) {
      expect((await runtime.call('POST', '/local/clock', { advance: wait })).status).toBe(200);
      expect((await runtime.call('POST', '/local/collections/run')).status).toBe(200);
    }
    const parked = await eventsOf('ev-park', has('billing.failure.parked'));
    expect(parked.map((e) => e['detail-type'])).toEqual(['billing.failure.parked']);
    expectDesignShape(parked[0], 'ev-park');
    expect(parked[0].detail).toMatchObject({ billing_status: 'PENDING', failure: { count: 8, last_error: 'The payment processor is unavailable.' } });

    const waiving = (await runtime.api('GET', '/v1/users/ev-waive/subscriptions')).body.items[0];
    const waived = await runtime.api('POST', `/v1/subscriptions/${waiving.subscription_id}/waive`, { reason: 'goodwill credit' });
    expect(waived.status, JSON.stringify(waived.body)).toBe(200);
    const waiveEvents = await eventsOf('ev-waive', has('billing.period.waived'));
    expect(waiveEvents.map((e) => e['detail-type'])).toEqual(['billing.period.waived']);
    expectDesignShape(waiveEvents[0], 'ev-waive');
    expect(waiveEvents[0].detail).toMatchObject({ billing_status: 'WAIVED', actor: 'local-operator', reason: 'goodwill credit' });

    // Every event went to the webhook too, as listed, and no event id was published for two different things.
    const all = (await runtime.call('GET', '/local/events')).body.items;
    const byId = new Map<string, string>();
    for (const e of all) {
      const seen = byId.get(e.detail.event_id);
      if (seen) expect(seen).toBe(JSON.stringify(e.detail));
      byId.set(e.detail.event_id, JSON.stringify(e.detail));
    }
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(all.length);
    expect(received).toEqual(all);
    // Nothing was unpublishable, failed to put, or fell off the stream (the processor errors of ev-park log at error by design).
    expect(runtime.output()).not.toMatch(/history row not publishable|event not published|given up on|history stream/);
  }, 180_000);

  it('filters by detail_type and refuses a query it does not know', async () => {
    const only = await runtime.call('GET', '/local/events?detail_type=billing.period.waived');
    expect(only.status).toBe(200);
    expect(only.body.items.every((e: any) => e['detail-type'] === 'billing.period.waived')).toBe(true);
    expect((await runtime.call('GET', '/local/events?detail_type=billing.period.lost')).status).toBe(400);
    expect((await runtime.call('GET', '/local/events?user_id=a&user_id=b')).status).toBe(400);
    expect((await runtime.call('GET', '/local/events?colour=blue')).status).toBe(400);
    expect((await runtime.call('POST', '/local/events')).status).toBe(405);
  });
});
