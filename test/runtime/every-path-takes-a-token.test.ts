import { randomUUID } from 'node:crypto';
import { DeleteCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { budgetKeyOf } from '../../src/adapters/dynamodb/processor-budget-store.js';
import type { CardPaymentDirectory } from '../../src/domain/card-outcomes.js';
import type { PaymentProcessor } from '../../src/domain/ports/processor.js';
import { processorOfRail, type ProcessorId } from '../../src/domain/processor-budget.js';
import { formatInstant } from '../../src/domain/time.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import type { FunctionName } from '../../src/manifest/index.js';
import type { SharedDeps } from '../../src/runtime/function-deps.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { stripeEventOf, stripeFixture } from '../support/stripe-fixtures.js';
import { stripeDelivery } from '../support/webhooks.js';
import { billingRecord, callerFor, instantAt, type Caller } from '../handlers/api-fixtures.js';
import { parseBody, webhookEvent } from '../handlers/webhook-events.js';
import { responseOf } from '../support/http-events.js';
import { DAY, HOUR } from '../support/time.js';

/**
 * DESIGN 13: every processor call on every path takes a token from the shared limiter first. Each
 * path runs with its processor's budget spent for the next seconds (its counters on DynamoDB Local
 * at the cap): it must not reach the processor while they are; once they are cleared it does, and
 * the counters then hold at least one token per request it made.
 */

const BUDGET = 5;
/** How long a path must wait while its processor's budget is spent: longer than any path takes to reach its processor. */
const BLOCKED_MS = 2_500;

let app: TestApp;
let call: Caller & { raw: ReturnType<typeof callerFor>['raw'] };
const requests: ProcessorId[] = [];

/** The simulator, with every request it is asked noted by processor. */
function noting(app: TestApp): Pick<SharedDeps, 'processor' | 'cardPayments'> {
  const processor: PaymentProcessor = {
    submit: async (request) => {
      requests.push(processorOfRail(request.rail));
      return app.simulator.submit(request);
    },
    findRefund: async (query) => {
      requests.push(processorOfRail(query.rail));
      return app.simulator.findRefund(query);
    },
  };
  const cardPayments: CardPaymentDirectory = {
    findReference: async (id) => {
      requests.push('stripe');
      return app.simulator.findReference(id);
    },
    cardOfCustomer: async () => {
      requests.push('stripe');
      return undefined;
    },
  };
  return { processor, cardPayments };
}

/** Tokens taken of a processor so far: the sum of its per-second counters. */
async function tokensTaken(processor: ProcessorId): Promise<number> {
  const prefix = `processor-budget:${processor}:`;
  const items = (await app.db.doc.send(new ScanCommand({ TableName: app.db.tables.locks }))).Items ?? [];
  return items.filter((i) => typeof i.PartitionKey === 'string' && i.PartitionKey.startsWith(prefix) && /^\d+$/.test(i.PartitionKey.slice(prefix.length))).reduce((sum, i) => sum + Number(i.used ?? 0), 0);
}

/** Spends the processor's whole budget for the next `seconds` of wall time: the keys to clear, and the tokens their counters held before. */
async function spend(processor: ProcessorId, seconds: number): Promise<{ keys: string[]; replaced: number }> {
  const first = Math.floor(Date.now() / 1000);
  const keys = Array.from({ length: seconds }, (_, i) => budgetKeyOf(processor, first + i));
  const old = await Promise.all(
    keys.map((key) => app.db.doc.send(new PutCommand({ TableName: app.db.tables.locks, Item: { PartitionKey: key, used: BUDGET, expires_at: first + 3600 }, ReturnValues: 'ALL_OLD' }))),
  );
  return { keys, replaced: old.reduce((sum, o) => sum + Number(o.Attributes?.used ?? 0), 0) };
}

/** Runs `path` with the processor's budget spent, then cleared: what the path answered. */
async function takesATokenOf<T>(processor: ProcessorId, path: () => Promise<T>): Promise<T> {
  const before = await tokensTaken(processor);
  const seen = requests.length;
  const spent = await spend(processor, 30);
  const baseline = before - spent.replaced;
  const running = path();
  running.catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, BLOCKED_MS));
  expect(requests.slice(seen), 'a request was sent while no token was left').not.toContain(processor);
  await Promise.all(spent.keys.map((key) => app.db.doc.send(new DeleteCommand({ TableName: app.db.tables.locks, Key: { PartitionKey: key } }))));
  const answer = await running;
  const made = requests.slice(seen).filter((p) => p === processor).length;
  expect(made, 'the path reached its processor').toBeGreaterThan(0);
  expect(await tokensTaken(processor) - baseline).toBeGreaterThanOrEqual(made);
  return answer;
}

const depsFor = (name: FunctionName) => app.depsFor(name, noting(app));
const at = (offsetMs: number) => formatInstant(new Date(app.clock.now().getTime() + offsetMs));
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

beforeAll(async () => {
  app = await createTestApp({ label: 'path-tokens', settings: { processorBudget: { perSecond: { stripe: BUDGET, payments: BUDGET }, personShare: 0.2 } } });
  call = callerFor({ ...app, depsFor: (name, replace = {}) => app.depsFor(name, { ...noting(app), ...replace }) });
});

describe('every processor call takes a token first (DESIGN 13), on DynamoDB Local', () => {
  it('a scheduled presentment (batch-worker)', async () => {
    const [period] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    const message = { user_id: period!.user_id, billing_date: period!.billing_date, subscription_id: period!.subscription_id, process: 'SCHEDULED', enqueued_at: at(0), processor: 'payments' };
    const out = await takesATokenOf('payments', () => createBatchWorkerHandler(depsFor('batch-worker'))(sqsEvent([sqsRecord(message)]), lambdaContext()));
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(period!.user_id)).toHaveLength(1);
  });

  it('a loan payment retry (batch-worker)', async () => {
    const user = `user-${randomUUID()}`;
    const loan = { loc_user_id: user, loc_loan_id: 'loan-t1', loc_payment_id: 'pay-t1', loc_amount: 700, loc_payment_method: 'ach' as const, loc_account_last_four: '6789', loc_status: 'RETRY' as const, loc_process: 'AUTO' as const, loc_payment_attempts: 1, loc_confirmation_id: 'conf-t1', loc_decline_code: 'insufficient_funds', loc_decline_class: 'retry_later' as const, loc_update_reason: 'declined', loc_first_declined_at: at(-DAY), loc_next_attempt_at: at(-HOUR), loc_created_date: at(-2 * DAY), loc_last_updated: at(-DAY), version: 1 };
    await app.deps.payments.create(loan, { actor: 'test', reason: 'fixture' });
    const message = { kind: 'loan_payment_retry', user_id: user, loan_id: 'loan-t1', payment_id: 'pay-t1', enqueued_at: at(0) };
    const out = await takesATokenOf('payments', () => createBatchWorkerHandler(depsFor('batch-worker'))(sqsEvent([sqsRecord(message)]), lambdaContext()));
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(user)).toHaveLength(1);
  });

  it('manual pay (api)', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'card', billing_date: instantAt(app, -HOUR) }));
    const paid = await takesATokenOf('stripe', () => call('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: record!.subscription_id }, headers: { 'idempotency-key': randomUUID() } }));
    expect(paid.status, JSON.stringify(paid.body)).toBeLessThan(300);
  });

  it('retry-billing (api)', async () => {
    const due = instantAt(app, -2 * HOUR);
    const [failed] = await seedRecords(app, billingRecord(app, { billing_date: due, billing_status: 'FAILED', payment_attempts: 1, billing_failed_for: `${due}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -HOUR) }));
    const retried = await takesATokenOf(processorOfRail(failed!.payment_method), () =>
      call('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: failed!.subscription_id }, body: { reason: 'token walk' } }),
    );
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
  });

  it('a loan payment (api)', async () => {
    const loan = { pathParameters: { userId: `user-${randomUUID()}`, loanId: 'loan-api' } };
    const created = await takesATokenOf('payments', () =>
      call('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', ...loan, body: { amount_cents: 1200, payment_method: 'ach', account_last_four: '6789' }, headers: { 'idempotency-key': randomUUID() } }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  it('an item of a bulk retry run (retry-run-worker)', async () => {
    const due = instantAt(app, -5 * DAY);
    const [parked] = await seedRecords(app, billingRecord(app, { billing_date: due, billing_failed_for: `${due}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -DAY), billing_last_error: 'The payment processor is unavailable.' }));
    app.retryRunsQueue.clear();
    const started = await call('POST', { route: '/v1/billing/retry-runs', body: { state: 'parked', reason: 'token walk' }, headers: { 'Idempotency-Key': randomUUID() } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const mine = app.retryRunsQueue.sent.filter((m) => m.body.includes(parked!.subscription_id)).map((m) => sqsRecord(m.body, { messageId: randomUUID(), queue: 'test-retry-runs' }));
    const out = await takesATokenOf(processorOfRail(parked!.payment_method), () => createRetryRunWorkerHandler(depsFor('retry-run-worker'))(sqsEvent(mine), lambdaContext()));
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(parked!.user_id)).toHaveLength(1);
  });

  it('the balance webhook (webhook-balance-worker)', async () => {
    const [period] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
    const raw = JSON.stringify({ event_id: `bal-${randomUUID()}`, user_id: period!.user_id, institution_id: 'ins_1', available_balance_cents: 120_000, current_balance_cents: 125_000, occurred_at: at(-60_000) });
    app.balanceEventsQueue.clear();
    const receiver = createBalanceWebhookHandler(depsFor('balance-webhook'));
    const accepted = responseOf(await receiver(webhookEvent('/webhooks/balance', raw, { 'X-Balance-Signature': signPayload(raw, TEST_SECRETS.balanceWebhook, Math.floor(Date.now() / 1000)) })));
    expect(accepted.status).toBe(202);
    const [message] = app.balanceEventsQueue.sent;
    const out = await takesATokenOf('payments', () =>
      createBalanceWorkerHandler(depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(message!.body, { messageId: message!.id, queue: 'test-balance-events' })]), lambdaContext()),
    );
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(period!.user_id)).toHaveLength(1);
  });

  it('a reactivation (memberships-consumer)', async () => {
    const [inactive] = await seedRecords(app, dueRecord(new Date(app.clock.now().getTime() - 2 * DAY), 'ach', { billing_status: 'INACTIVE', updated_event: 'USER_BANNED' }));
    const reactivate = { event_id: `evt-${randomUUID()}`, type: 'REACTIVATE', user_id: inactive!.user_id, occurred_at: at(-HOUR) };
    const out = await takesATokenOf('payments', () => createMembershipsConsumerHandler(depsFor('memberships-consumer'))(kinesisEvent([kinesisRecord(reactivate)]), lambdaContext()));
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(inactive!.user_id)).toHaveLength(1);
  });

  it("the stripe-webhook's read of a dispute's PaymentIntent (stripe-webhook)", async () => {
    const dispute = { ...stripeFixture('dispute.json'), id: `dp_${randomUUID().slice(0, 8)}`, metadata: {}, payment_intent: `pi_${randomUUID().slice(0, 8)}` };
    const event = stripeEventOf('charge.dispute.created', dispute, app.clock.now().getTime());
    const response = await takesATokenOf('stripe', () => createStripeWebhookHandler(depsFor('stripe-webhook'))(stripeDelivery(event, { signedAtMs: Date.now() })));
    expect(parseBody(response)).toMatchObject({ status: 'processed' });
  });
});
