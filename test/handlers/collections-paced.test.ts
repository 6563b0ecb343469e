import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoProcessorBudgetStore } from '../../src/adapters/dynamodb/processor-budget-store.js';
import { shardOf } from '../../src/adapters/dynamodb/sharding.js';
import type { BillingPeriodMessage } from '../../src/domain/collections.js';
import type { ProcessorId } from '../../src/domain/processor-budget.js';
import { formatInstant } from '../../src/domain/time.js';
import { PLANNER_LEASE_KEY, type PacedSummary } from '../../src/handlers/collections-paced.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createTestApp, RecordingQueue, type TestApp } from '../support/app.js';
import { scheduledEvent } from '../support/aws-events.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { HOUR } from '../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));
/** 2 scheduled requests a second per processor over a 12 s interval less the 2 s margin: a quota of 20. */
const BUDGET = { perSecond: { stripe: 2, payments: 2 }, personShare: 0 };

describe('the paced planner (DESIGN 13) on DynamoDB Local', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp({ label: 'paced', now: NOW, statusShardCount: 4, settings: { processorBudget: BUDGET, collectionsIntervalSeconds: 12 } });
  });

  const run = async (queues: Partial<Record<ProcessorId, RecordingQueue>> = {}) =>
    (await createCollectionsJobHandler(app.depsFor('collections-job', { collectionQueues: { ...app.collectionQueues, ...queues } }))(scheduledEvent())) as PacedSummary;

  async function billingDay(perProcessor: number) {
    const cards = Array.from({ length: perProcessor }, () => makeRecord({ billing_date: at(-HOUR), payment_method: 'card' }));
    const pinless = Array.from({ length: perProcessor }, () => makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' }));
    await seedRecords(app, ...cards, ...pinless);
    return { cards, pinless };
  }

  it('plans at most its quota per processor, spread at the budget rate with delays from the run start, shards in turn', async () => {
    const { cards } = await billingDay(30);
    const summary = await run();
    expect(summary.planner).toBe('paced');
    expect(summary.by_processor.stripe).toMatchObject({ quota: 20, enqueued: 20, in_queue: 0, throttled: 0 });
    expect(summary.by_processor.payments).toMatchObject({ quota: 20, enqueued: 20 });
    expect(summary.by_processor.stripe!.deferred).toBeGreaterThan(0);
    expect(summary.enqueued).toBe(40);
    const bodies = app.collectionsQueue.sent.map((m) => ({ body: JSON.parse(m.body) as BillingPeriodMessage, delay: m.delaySeconds ?? 0 }));
    const card = bodies.filter((b) => b.body.processor === 'stripe');
    expect(card).toHaveLength(20);
    // Message i is due at the run's start + i / 2 s: its delay never passes that slot and never decreases
    // (the time the run took before sending is taken off; billing-day.test.ts checks the arithmetic).
    const delays = card.map((b) => b.delay);
    delays.forEach((delay, i) => expect(delay).toBeLessThanOrEqual(Math.floor(i / 2)));
    expect(delays).toEqual([...delays].sort((a, b) => a - b));
    expect(delays.at(-1)).toBeGreaterThan(0);
    // Tied due instants are taken from every shard, not shard 0 first.
    const shards = new Set(card.map((b) => shardOf(b.body.user_id, 4)));
    expect(shards.size).toBe(new Set(cards.map((c) => shardOf(c.user_id, 4))).size);
    expect(app.metrics.backlogs.at(-1)?.backlog.stripe).toBeGreaterThanOrEqual(30);
  });

  it("sends each processor's messages to its own queue", async () => {
    await billingDay(5);
    await run();
    expect(app.collectionQueues.stripe.bodies<BillingPeriodMessage>().map((m) => m.payment_method)).toEqual(Array(5).fill('card'));
    expect(app.collectionQueues.payments.bodies<BillingPeriodMessage>().map((m) => m.payment_method)).toEqual(Array(5).fill('pinless'));
  });

  it("subtracts what is still in that processor's queue from its quota, and only from its", async () => {
    await billingDay(30);
    const queued = (n: number) =>
      new (class extends RecordingQueue {
        async depth(): Promise<number> {
          return n;
        }
      })(app.collectionsQueue);
    const summary = await run({ stripe: queued(16), payments: queued(3) });
    expect(summary.by_processor.stripe).toMatchObject({ in_queue: 16, quota: 4, enqueued: 4 });
    expect(summary.by_processor.payments).toMatchObject({ in_queue: 3, quota: 17, enqueued: 17 });
  });

  it("paces loan payment retries inside the payments quota: they take its first slots and the periods follow", async () => {
    await billingDay(30);
    for (let i = 0; i < 3; i++) {
      const user = `user-${randomUUID()}`;
      await app.deps.payments.create(
        { loc_user_id: user, loc_loan_id: 'loan-p', loc_payment_id: `pay-p${i}`, loc_amount: 700, loc_payment_method: 'ach', loc_account_last_four: '6789', loc_status: 'RETRY', loc_process: 'AUTO', loc_payment_attempts: 1, loc_confirmation_id: `conf-p${i}`, loc_decline_code: 'insufficient_funds', loc_decline_class: 'retry_later', loc_update_reason: 'declined', loc_first_declined_at: at(-24 * HOUR), loc_next_attempt_at: at(-HOUR), loc_created_date: at(-48 * HOUR), loc_last_updated: at(-24 * HOUR), version: 1 },
        { actor: 'test', reason: 'fixture' },
      );
    }
    const summary = await run();
    expect(summary.loan_retries_enqueued).toBe(3);
    expect(summary.by_processor.payments).toMatchObject({ quota: 20, enqueued: 20 });
    expect(summary.by_processor.stripe).toMatchObject({ quota: 20, enqueued: 20 });
    const sent = app.collectionQueues.payments.sent.map((m) => ({ kind: (JSON.parse(m.body) as { kind?: string }).kind, delay: m.delaySeconds ?? 0 }));
    expect(sent.slice(0, 3).map((m) => m.kind)).toEqual(['loan_payment_retry', 'loan_payment_retry', 'loan_payment_retry']);
    // Message i of the payments service is due at the run's start + i / 2 s, loan retries and periods alike.
    sent.forEach((m, i) => expect(m.delay).toBeLessThanOrEqual(Math.floor(i / 2)));
    expect(sent.at(-1)!.delay).toBeGreaterThanOrEqual(Math.floor(19 / 2) - 2);
  });

  it('passes over as many due periods at the head as are still queued: a lagging worker gets no duplicates', async () => {
    await billingDay(30);
    const first = new RecordingQueue();
    await run({ stripe: first });
    const head = first.sent.map((m) => JSON.parse(m.body) as BillingPeriodMessage).filter((b) => b.processor === 'stripe').map((b) => b.user_id);
    // Eight of the card processor's first messages are still in its queue (delayed or in flight) when the next run starts.
    const queue = new (class extends RecordingQueue {
      async depth(): Promise<number> {
        return 8;
      }
    })();
    const summary = await run({ stripe: queue });
    const sent = queue.sent.map((m) => JSON.parse(m.body) as BillingPeriodMessage).filter((b) => b.processor === 'stripe').map((b) => b.user_id);
    expect(summary.by_processor.stripe).toMatchObject({ in_queue: 8, quota: 12, enqueued: 12 });
    expect(sent).toEqual(head.slice(8, 20));
  });

  it('lowers the next quota by the share of a run the workers reported throttled, and raises it back step by step', async () => {
    await billingDay(30);
    const store = new DynamoProcessorBudgetStore(app.db.client, app.db.tables.locks);
    // 3 of a run of 20: the next quota is 15 % lower.
    await store.reportThrottled('stripe', 3);
    const first = await run();
    expect(first.by_processor.stripe).toMatchObject({ throttled: 3, factor: 0.85, quota: 17 });
    expect(first.by_processor.payments).toMatchObject({ throttled: 0, factor: 1, quota: 20 });
    const second = await run();
    expect(second.by_processor.stripe).toMatchObject({ throttled: 0, factor: 0.95, quota: 19 });
    // Most of a run throttled: halved, no further.
    await store.reportThrottled('stripe', 18);
    const third = await run();
    expect(third.by_processor.stripe).toMatchObject({ throttled: 18, factor: 0.475, quota: 9 });
  });

  it('reads from the head every run: what is still due is planned again', async () => {
    await billingDay(5);
    const first = await run();
    expect(first.enqueued).toBe(10);
    app.collectionsQueue.clear();
    const second = await run();
    expect(second.enqueued).toBe(10);
  });

  it('is single-flight: a run that finds the lease held plans nothing and sends nothing', async () => {
    await billingDay(3);
    const held = await app.deps.locks.tryAcquire(
      { key: PLANNER_LEASE_KEY, owner_name: 'other-run', record_version_number: randomUUID(), lease_duration_ms: 60_000, lease_expires_at: Date.now() + 60_000 },
      Date.now(),
    );
    expect(held).toBe(true);
    const summary = await run();
    expect(summary).toMatchObject({ skipped: 'overlapping_run', enqueued: 0 });
    expect(app.collectionsQueue.sent).toHaveLength(0);
  });
});
