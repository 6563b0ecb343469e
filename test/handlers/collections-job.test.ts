import { beforeEach, describe, expect, it } from 'vitest';
import type { BillingPeriodMessage as CollectionMessage } from '../../src/domain/collections.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import type { QueueMessage } from '../../src/runtime/deps.js';
import { formatInstant } from '../../src/domain/time.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { recordsOf, seedRecords } from '../support/seed.js';
import { HOUR } from '../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));

function liveFailure(billingDate: string, attempts: number, nextAttemptAt?: string) {
  return {
    billing_failed_for: `${billingDate}#${attempts}`,
    billing_failure_count: nextAttemptAt ? 2 : 8,
    billing_failed_at: at(-HOUR),
    ...(nextAttemptAt ? { billing_next_attempt_at: nextAttemptAt } : {}),
    billing_last_error: 'The payment processor is unavailable.',
  };
}

describe('collections-job', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp({ label: 'cjob', now: NOW });
  });

  it('enqueues due PENDING, FAILED past the daily wait and expiring PAUSED records with their process, and nothing else', async () => {
    const pending = makeRecord({ billing_date: at(-HOUR) });
    const cancelRequested = makeRecord({ billing_date: at(-2 * HOUR), updated_event: 'CANCEL_REQUESTED' });
    const failedRetry = makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-25 * HOUR) });
    const failedTooSoon = makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-23 * HOUR) });
    const paused = makeRecord({ billing_status: 'PAUSED', billing_date: at(-HOUR), paused_months: 1 });
    const future = makeRecord({ billing_date: at(HOUR) });
    const pausedFuture = makeRecord({ billing_status: 'PAUSED', billing_date: at(HOUR), paused_months: 2 });
    const completed = makeRecord({ billing_status: 'COMPLETED', billing_date: at(-HOUR) });
    await seedRecords(app, pending, cancelRequested, failedRetry, failedTooSoon, paused, future, pausedFuture, completed);

    const summary = await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW), lambdaContext());

    expect(summary).toEqual({ enqueued: 4, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false });
    const bodies = app.collectionsQueue.bodies<CollectionMessage>();
    const byId = new Map(bodies.map((b) => [b.subscription_id, b]));
    expect(byId.get(pending.subscription_id)?.process).toBe('SCHEDULED');
    expect(byId.get(cancelRequested.subscription_id)?.process).toBe('SCHEDULED');
    expect(byId.get(failedRetry.subscription_id)?.process).toBe('RETRY');
    expect(byId.get(paused.subscription_id)?.process).toBe('PAUSE');
    expect(byId.size).toBe(4);
    expect(byId.get(pending.subscription_id)).toEqual({
      kind: 'billing_period',
      user_id: pending.user_id,
      billing_date: pending.billing_date,
      subscription_id: pending.subscription_id,
      process: 'SCHEDULED',
      payment_method: pending.payment_method,
      enqueued_at: at(0),
      processor: 'payments',
    });
    expect(app.collectionsQueue.sent.map((m) => m.id).sort()).toEqual(bodies.map((b) => b.subscription_id).sort());
  });

  it("sends each due record to its processor's queue (DESIGN 13): card to stripe's, ACH and pinless to the payments service's", async () => {
    const card = makeRecord({ billing_date: at(-HOUR), payment_method: 'card' });
    const ach = makeRecord({ billing_date: at(-HOUR), payment_method: 'ach' });
    const pinless = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, card, ach, pinless);

    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW));

    expect(app.collectionQueues.stripe.bodies<CollectionMessage>().map((b) => b.subscription_id)).toEqual([card.subscription_id]);
    expect(app.collectionQueues.payments.bodies<CollectionMessage>().map((b) => b.subscription_id).sort()).toEqual([ach.subscription_id, pinless.subscription_id].sort());
  });

  it('skips records waiting or parked on the failure ladder and reports them in the gauge', async () => {
    const d = at(-48 * HOUR);
    const waiting = makeRecord({ billing_date: d, ...liveFailure(d, 0, at(HOUR)) });
    const retryNow = makeRecord({ billing_date: d, ...liveFailure(d, 0, at(-60_000)) });
    const parked = makeRecord({ billing_date: d, ...liveFailure(d, 0) });
    const parkedFailed = makeRecord({ billing_status: 'FAILED', billing_date: d, payment_attempts: 1, last_attempt_date: at(-30 * HOUR), ...liveFailure(d, 1) });
    // Saved for earlier work (the attempt count moved on): void, so healthy and due.
    const stale = makeRecord({ billing_status: 'FAILED', billing_date: d, payment_attempts: 2, last_attempt_date: at(-30 * HOUR), ...liveFailure(d, 1) });
    // Failing but inside the daily retry wait: not enqueued, still counted.
    const failingTooSoon = makeRecord({ billing_status: 'FAILED', billing_date: d, payment_attempts: 1, last_attempt_date: at(-HOUR), ...liveFailure(d, 1, at(-60_000)) });
    await seedRecords(app, waiting, retryNow, parked, parkedFailed, stale, failingTooSoon);

    const summary = await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW));

    // Waiting and parked records are not even read (the due-index keys them at their ladder slot, or not at all).
    expect(summary).toEqual({ enqueued: 2, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false });
    expect(app.collectionsQueue.bodies<CollectionMessage>().map((b) => b.subscription_id).sort()).toEqual(
      [retryNow.subscription_id, stale.subscription_id].sort(),
    );
    expect(app.metrics.gauges).toEqual([{ retrying: 3, parked: 2 }]);
  });

  it('emits a zero gauge when nothing is failing', async () => {
    await seedRecords(app, makeRecord({ billing_date: at(-HOUR) }));
    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW));
    expect(app.metrics.gauges).toEqual([{ retrying: 0, parked: 0 }]);
  });

  it('sends at most ten messages per SendMessageBatch call', async () => {
    const calls: QueueMessage[][] = [];
    const recording = { sendBatch: async (m: readonly QueueMessage[]) => void calls.push([...m]) };
    const deps = { ...app.depsFor('collections-job'), collectionQueues: { stripe: recording, payments: recording } };
    await seedRecords(app, ...Array.from({ length: 23 }, (_, i) => makeRecord({ billing_date: at(-HOUR - i) })));

    const summary = await createCollectionsJobHandler(deps, { pageSize: 100 })(scheduledEvent(NOW));

    expect(summary.enqueued).toBe(23);
    expect(calls.every((c) => c.length >= 1 && c.length <= 10)).toBe(true);
    expect(calls.flat()).toHaveLength(23);
    expect(new Set(calls.flat().map((m) => m.id)).size).toBe(23);
  });

  it('stops before the deadline after sending the whole page in hand, and says truncated', async () => {
    await seedRecords(app, ...Array.from({ length: 12 }, (_, i) => makeRecord({ billing_date: at(-HOUR - i) })));
    let checks = 0;
    // Plenty of time for the first page; the second check finds the deadline inside the safety margin.
    const context = lambdaContext({ remainingMs: () => (checks++ === 0 ? 200_000 : 20_000) });

    const summary = await createCollectionsJobHandler(app.depsFor('collections-job'), { pageSize: 5 })(scheduledEvent(NOW), context);

    expect(summary.truncated).toBe(true);
    // One page (at most pageSize; a sharded page may be shorter) was read, sent whole, then the job stopped.
    expect(summary.enqueued).toBeGreaterThan(0);
    expect(summary.enqueued).toBeLessThanOrEqual(5);
    expect(app.collectionsQueue.sent).toHaveLength(summary.enqueued);
    expect(app.metrics.gauges).toHaveLength(1);
  });

  it('honours an explicit deadline option and enqueues nothing once it has passed', async () => {
    await seedRecords(app, makeRecord({ billing_date: at(-HOUR) }));
    const summary = await createCollectionsJobHandler(app.depsFor('collections-job'), { deadlineMs: Date.now() - 1 })(scheduledEvent(NOW));
    expect(summary).toEqual({ enqueued: 0, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: true });
    expect(app.collectionsQueue.sent).toHaveLength(0);
  });

  it('pages through everything when the deadline is far away', async () => {
    await seedRecords(app, ...Array.from({ length: 12 }, (_, i) => makeRecord({ billing_date: at(-HOUR - i) })));
    const summary = await createCollectionsJobHandler(app.depsFor('collections-job'), { pageSize: 5, deadlineMs: Date.now() + 600_000 })(scheduledEvent(NOW));
    expect(summary).toMatchObject({ enqueued: 12, truncated: false });
  });

  it('fails the run when the queue cannot take the messages', async () => {
    await seedRecords(app, makeRecord({ billing_date: at(-HOUR) }));
    app.collectionsQueue.failNext = 1;
    await expect(createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW))).rejects.toThrow('queue unavailable');
  });

  it('feeds the batch-worker: the enqueued records are collected, a pending cancel is completed, a pause advances', async () => {
    const pinless = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    const cancel = makeRecord({ billing_date: at(-HOUR), updated_event: 'CANCEL_REQUESTED', payment_method: 'pinless' });
    const paused = makeRecord({ billing_status: 'PAUSED', billing_date: at(-HOUR), paused_months: 1 });
    await seedRecords(app, pinless, cancel, paused);
    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(NOW));

    const event = sqsEvent(app.collectionsQueue.sent.map((m) => sqsRecord(m.body)));
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(event, lambdaContext());

    expect(response.batchItemFailures).toEqual([]);
    expect((await app.deps.billing.get(pinless))?.billing_status).toBe('COMPLETED');
    expect(await app.deps.billing.get(cancel)).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED' });
    expect((await app.deps.billing.get(paused))?.billing_status).toBe('SKIPPED');
    expect((await recordsOf(app, paused.user_id))[0]).toMatchObject({ billing_status: 'PENDING', updated_event: 'RESUMED' });
    expect(app.simulator.charges()).toHaveLength(1);
  });
});
