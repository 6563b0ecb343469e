import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import { publishedEventsOf } from '../../src/domain/published-events.js';
import type { BillingRecord, HistoryRow } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { seedRecords } from '../support/seed.js';
import { stripeEventOf, succeededPaymentIntent } from '../support/stripe-fixtures.js';
import { achDelivery, achEventBody, stripeDelivery } from '../support/webhooks.js';
import { DAY, HOUR } from '../support/time.js';
import { billingRecord, callerFor, instantAt, type Caller } from './api-fixtures.js';

/**
 * Every entry point names itself on every audit row it writes (DESIGN 12), the successor and
 * failure rows included, and the published events carry the same actor: the scheduled paths as
 * system:collections or system:pause-run, outside events as <source>:<event id>, people as their sub.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'actors', settings: { balanceThresholdCents: 100 } });
  call = callerFor(app);
});

/** Every audit row of the user's periods written after `since` (a set of row keys seen before). */
async function rowsOf(userId: string): Promise<HistoryRow[]> {
  const periods = (await app.deps.billing.listByUser(userId)).items;
  const rows = await Promise.all(periods.map(async (p) => (await app.deps.billing.history(p.subscription_id)).items));
  return rows.flat();
}

/** Runs `act` and answers the rows it wrote for the user: at least one, each checked below. */
async function rowsWrittenBy(userId: string, act: () => Promise<unknown>): Promise<HistoryRow[]> {
  const before = new Set((await rowsOf(userId)).map((r) => r.last_run_date));
  await act();
  const written = (await rowsOf(userId)).filter((r) => !before.has(r.last_run_date));
  expect(written.length).toBeGreaterThan(0);
  return written;
}

function expectActor(rows: readonly HistoryRow[], actor: string): void {
  expect(rows.map((r) => [r.billing_status, r.actor])).toEqual(rows.map((r) => [r.billing_status, actor]));
  for (const row of rows) {
    for (const event of publishedEventsOf(row, eventIdOf)) expect(event.detail.actor).toBe(actor);
  }
}

const message = (record: BillingRecord, process: string) => ({
  user_id: record.user_id,
  billing_date: record.billing_date,
  subscription_id: record.subscription_id,
  process,
  enqueued_at: formatInstant(app.clock.now()),
});

describe('system paths', () => {
  it('a scheduled collection and its successor name system:collections', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const rows = await rowsWrittenBy(record.user_id, () => createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(message(record, 'SCHEDULED'))]), lambdaContext()));
    expect(rows.map((r) => r.billing_status).sort()).toEqual(['COMPLETED', 'PENDING']);
    expectActor(rows, 'system:collections');
  });

  it('a saved billing failure of a retry names system:collections', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    const rows = await rowsWrittenBy(record.user_id, () => createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(message(record, 'SCHEDULED'))])));
    expect(rows.some((r) => r.billing_event === 'BILLING_FAILURE_RECORDED')).toBe(true);
    expectActor(rows, 'system:collections');
    app.simulator.configure({});
  });

  it('the pause run skipping an expired PAUSED period names system:pause-run', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_status: 'PAUSED', billing_date: instantAt(app, -HOUR), paused_months: 1 }));
    const rows = await rowsWrittenBy(record.user_id, () => createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(message(record, 'PAUSE'))])));
    expect(rows.some((r) => r.billing_status === 'SKIPPED')).toBe(true);
    expectActor(rows, 'system:pause-run');
  });
});

describe('outside events', () => {
  it('an ACH settlement names ach:<event id>', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_status: 'ACHSENT', transaction_id: 'conf-actor', payment_attempts: 1 }));
    const body = achEventBody(record, 'settled', 'conf-actor', app.clock.now().toISOString());
    const rows = await rowsWrittenBy(record.user_id, () => createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
    expectActor(rows, `ach:${body.event_id}`);
  });

  it('a Stripe payment_intent.succeeded that completes the period (and opens the next) names stripe:<event id>', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'card' }));
    const intent = succeededPaymentIntent({ reference: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id }, amountCents: 1999, currency: 'usd' });
    const body = stripeEventOf('payment_intent.succeeded', intent, app.clock.now().getTime());
    const rows = await rowsWrittenBy(record.user_id, () => createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
    expect(rows.map((r) => r.billing_status).sort()).toEqual(['COMPLETED', 'PENDING']);
    expectActor(rows, `stripe:${body.id as string}`);
  });

  it('a membership NEW and a PAUSE name membership:<event id>', async () => {
    const user = `user-${randomUUID().slice(0, 8)}`;
    const consume = createMembershipsConsumerHandler(app.depsFor('memberships-consumer'));
    const joined = {
      event_id: randomUUID(),
      type: 'NEW',
      user_id: user,
      occurred_at: instantAt(app, -2 * DAY),
      plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: instantAt(app, 5 * DAY) },
    };
    expectActor(await rowsWrittenBy(user, () => consume(kinesisEvent([kinesisRecord(joined)]))), `membership:${joined.event_id}`);
    const paused = { event_id: randomUUID(), type: 'PAUSE', user_id: user, occurred_at: instantAt(app, -DAY), months: 1 };
    expectActor(await rowsWrittenBy(user, () => consume(kinesisEvent([kinesisRecord(paused)]))), `membership:${paused.event_id}`);
  });

  it('a collection on a balance event names balance:<event id>', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const balance = { event_id: randomUUID(), user_id: record.user_id, institution_id: 'ins_1', available_balance_cents: 9000, current_balance_cents: 9100, occurred_at: formatInstant(app.clock.now()) };
    const rows = await rowsWrittenBy(record.user_id, () => createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(balance)])));
    expectActor(rows, `balance:${balance.event_id}`);
  });
});

describe('people', () => {
  it("a manual pay names the caller on the period's row and on the successor it opens", async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const rows = await rowsWrittenBy(record.user_id, () =>
      call('POST', { route: `/v1/subscriptions/${record.subscription_id}/pay`, headers: { 'Idempotency-Key': randomUUID() }, body: {} }),
    );
    expect(rows.map((r) => r.billing_status).sort()).toEqual(['COMPLETED', 'PENDING']);
    expectActor(rows, 'operator-1');
  });

  it("a bulk retry run's rows name the person who started it", async () => {
    const due = instantAt(app, -5 * DAY);
    const [record] = await seedRecords(app, billingRecord(app, { billing_date: due, billing_failed_for: `${due}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -DAY), billing_last_error: 'x' }));
    app.retryRunsQueue.clear();
    const started = await call('POST', { route: '/v1/billing/retry-runs', headers: { 'Idempotency-Key': randomUUID() }, body: { state: 'parked', user_ids: [record.user_id], reason: 'outage over' } });
    expect(started.status).toBe(202);
    const messages = app.retryRunsQueue.sent.map((m) => sqsRecord(m.body, { messageId: randomUUID() }));
    app.retryRunsQueue.clear();
    const rows = await rowsWrittenBy(record.user_id, () => createRetryRunWorkerHandler(app.depsFor('retry-run-worker'))(sqsEvent(messages), lambdaContext()));
    expect(rows.some((r) => r.billing_status === 'PENDING' && r.run_id === undefined)).toBe(true);
    expectActor(rows, 'operator-1');
  });
});
