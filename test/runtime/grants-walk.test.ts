import { randomUUID } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TableId } from '../../src/adapters/dynamodb/table-definitions.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { achInstrumentId } from '../../src/domain/instruments/instrument.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler, isDailySweepRun } from '../../src/handlers/collections-job.js';
import { sweepHeldPeriods } from '../../src/domain/use-cases/release-held.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { createReconciliationJobHandler } from '../../src/handlers/reconciliation-job.js';
import { resolveReconciliationException } from '../../src/domain/use-cases/resolve-reconciliation-exception.js';
import { SimulatedProcessorReport } from '../../src/adapters/processor/simulator-report.js';
import { attemptDepsOf } from '../../src/handlers/shared/attempt-deps.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import { FUNCTIONS, type FunctionName, type TableGrant } from '../../src/manifest/index.js';
import { functionDeps, sharedDeps } from '../../src/runtime/function-deps.js';
import type { NeededAccess } from '../../src/runtime/grants.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { cardPeriod, dueRecord } from '../support/billing-fixtures.js';
import { FaultInjector, faultyPorts } from '../support/faults.js';
import { seedRecords } from '../support/seed.js';
import { completedCheckoutSession, stripeEventOf, stripeFixture, succeededPaymentIntent } from '../support/stripe-fixtures.js';
import { achDelivery, achEventBody, stripeDelivery } from '../support/webhooks.js';
import { billingRecord, callerFor, instantAt, type Caller } from '../handlers/api-fixtures.js';
import { parseBody, webhookEvent } from '../handlers/webhook-events.js';
import { responseOf } from '../support/http-events.js';
import { DAY, HOUR } from '../support/time.js';

/**
 * Every use case through its function's grant guard (src/runtime/grants.ts), built from the
 * function's manifest entry as the deployed Lambda builds it: a request the manifest does not grant
 * fails here as IAM would fail it in AWS. The permissions each function uses are recorded, and the
 * walk must use every one its manifest grants but those listed as wider than use: a path the walk
 * misses, or a grant no path needs, shows up as a difference.
 */

/** Granted, and needed by no path of the function's code: wider than its use. */
const WIDER_THAN_USE: Partial<Record<FunctionName, readonly string[]>> = {};

let app: TestApp;
/** The app whose functions' deps record every DynamoDB permission they use. */
let walked: TestApp;
const used = new Map<FunctionName, Set<string>>();

const permission = (table: TableId, needed: Pick<NeededAccess, 'action' | 'index'>) => `${table} ${needed.index ? `query ${needed.index}` : needed.action}`;

function granted(name: FunctionName): string[] {
  return (Object.entries(FUNCTIONS[name].tables) as [TableId, TableGrant][]).flatMap(([table, grant]) => [
    ...(grant.read ?? []).map((action) => permission(table, { action })),
    ...(grant.write ?? []).map((action) => permission(table, { action })),
    ...(grant.delete ? [permission(table, { action: 'delete' })] : []),
    ...(grant.indexes ?? []).map((index) => permission(table, { action: 'query', index })),
  ]);
}

beforeAll(async () => {
  // Budgets set, so every processor call takes its token through the limiter's grant.
  app = await createTestApp({ label: 'grants-walk', settings: { processorBudget: { perSecond: { stripe: 1000, payments: 1000 }, personShare: 0.1 } } });
  walked = {
    ...app,
    depsFor: (name, replace = {}) =>
      functionDeps(name, { ...sharedDeps(app.deps), ...replace }, {
        client: app.db.client,
        tables: app.db.tables,
        observe: (table, needed) => {
          const seen = used.get(name) ?? new Set<string>();
          seen.add(permission(table, needed));
          used.set(name, seen);
        },
      }),
  };
});

const at = (offsetMs: number) => formatInstant(new Date(app.clock.now().getTime() + offsetMs));
const wallMs = () => app.wallClock.now().getTime();
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

async function sendAch(body: Record<string, unknown>) {
  return parseBody(await createAchHandler(walked.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: wallMs() })));
}

async function sendStripe(type: string, object: Record<string, unknown>) {
  const event = stripeEventOf(type, object, app.clock.now().getTime());
  return parseBody(await createStripeWebhookHandler(walked.depsFor('stripe-webhook'))(stripeDelivery(event, { signedAtMs: wallMs() })));
}

function loanOutcome(userId: string, loanId: string, paymentId: string, confirmationId: string, amountCents: number, returnCode?: string) {
  const body = JSON.stringify({
    event_id: `ach-${randomUUID()}`,
    type: returnCode ? 'returned' : 'settled',
    ...(returnCode ? { return_code: returnCode } : {}),
    confirmation_id: confirmationId,
    amount_cents: amountCents,
    occurred_at: at(0),
    reference: { kind: 'loan_payment', user_id: userId, loan_id: loanId, payment_id: paymentId },
  });
  return webhookEvent('/webhooks/ach', body, { 'X-ACH-Signature': signPayload(body, TEST_SECRETS.achWebhook, Math.floor(wallMs() / 1000)) });
}

/**
 * A period whose attempt the processor took but whose write was lost (an item saved before
 * `billing_presented_for` existed), waived afterwards: the payment was never owed.
 */
async function waivedAfterCharge(call: Caller, record: BillingRecord): Promise<string> {
  const faults = new FaultInjector([{ point: 'billing.commit.before', mode: 'throw', error: () => new Error('injected: the write was lost') }]);
  const outcome = await runCollectionAttempt(faultyPorts(walked.depsFor('batch-worker'), faults), { key: record, process: 'SCHEDULED', owner: 'walk' });
  expect(outcome.kind).toBe('failed_counted');
  await app.db.doc.send(new UpdateCommand({ TableName: app.db.tables.billingActivity, Key: { user_id: record.user_id, billing_date: record.billing_date }, UpdateExpression: 'REMOVE billing_presented_for' }));
  expect((await call('POST', { route: '/v1/subscriptions/{subscriptionId}/waive', pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'written off' } })).status).toBe(200);
  return chargesOf(record.user_id)[0]!.confirmation_id;
}

describe('every use case through its function’s grant guard', () => {
  let call: ReturnType<typeof callerFor>;
  beforeAll(() => {
    call = callerFor(walked);
  });

  it('collections-job plans due periods and loan retries; batch-worker collects both', async () => {
    const period = dueRecord(app.clock.now(), 'pinless');
    await seedRecords(app, period);
    const user = `user-${randomUUID()}`;
    const loan = { loc_user_id: user, loc_loan_id: 'loan-w1', loc_payment_id: 'pay-w1', loc_amount: 700, loc_payment_method: 'ach' as const, loc_account_last_four: '6789', loc_status: 'RETRY' as const, loc_process: 'AUTO' as const, loc_payment_attempts: 1, loc_confirmation_id: 'conf-w1', loc_decline_code: 'insufficient_funds', loc_decline_class: 'retry_later' as const, loc_update_reason: 'declined', loc_first_declined_at: at(-DAY), loc_next_attempt_at: at(-HOUR), loc_created_date: at(-2 * DAY), loc_last_updated: at(-DAY), version: 1 };
    await app.deps.payments.create(loan, { actor: 'test', reason: 'fixture' });
    app.collectionsQueue.clear();
    await createCollectionsJobHandler(walked.depsFor('collections-job'))(scheduledEvent(at(0)), lambdaContext());
    const mine = app.collectionsQueue.sent.filter((m) => m.body.includes(period.subscription_id) || m.body.includes(user));
    expect(mine).toHaveLength(2);
    const out = await createBatchWorkerHandler(walked.depsFor('batch-worker'))(sqsEvent(mine.map((m) => sqsRecord(m.body))), lambdaContext());
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(period.user_id)).toHaveLength(1);
    expect(chargesOf(user)).toHaveLength(1);
  });

  it('memberships-consumer creates, pauses and cancels a membership', async () => {
    const user = `user-${randomUUID()}`;
    const events = [
      { event_id: `evt-${randomUUID()}`, type: 'NEW', user_id: user, occurred_at: at(-3 * DAY), plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: at(2 * DAY) } },
      { event_id: `evt-${randomUUID()}`, type: 'PAUSE', user_id: user, occurred_at: at(-2 * DAY), months: 1 },
      { event_id: `evt-${randomUUID()}`, type: 'CANCEL', user_id: user, occurred_at: at(-DAY) },
    ];
    const consume = createMembershipsConsumerHandler(walked.depsFor('memberships-consumer'));
    for (const event of events) expect((await consume(kinesisEvent([kinesisRecord(event)]), lambdaContext())).batchItemFailures).toEqual([]);
    expect((await app.deps.billing.listByUser(user)).items.length).toBeGreaterThan(0);

    // A reactivation collects at once: the attempt, here on the ACH rail (its debit counted).
    const inactive = dueRecord(new Date(app.clock.now().getTime() - 2 * DAY), 'ach', { billing_status: 'INACTIVE', updated_event: 'USER_BANNED' });
    await seedRecords(app, inactive);
    const reactivate = { event_id: `evt-${randomUUID()}`, type: 'REACTIVATE', user_id: inactive.user_id, occurred_at: at(-HOUR) };
    expect((await consume(kinesisEvent([kinesisRecord(reactivate)]), lambdaContext())).batchItemFailures).toEqual([]);
    expect(chargesOf(inactive.user_id)).toHaveLength(1);
  });

  it('the balance webhook claims and enqueues (a failed send released), the webhook-balance-worker collects', async () => {
    const period = dueRecord(app.clock.now(), 'ach');
    await seedRecords(app, period);
    const raw = JSON.stringify({ event_id: `bal-${randomUUID()}`, user_id: period.user_id, institution_id: 'ins_1', available_balance_cents: 120_000, current_balance_cents: 125_000, occurred_at: at(-60_000) });
    app.balanceEventsQueue.clear();
    const webhook = createBalanceWebhookHandler(walked.depsFor('balance-webhook'));
    const deliver = async () => responseOf(await webhook(webhookEvent('/webhooks/balance', raw, { 'X-Balance-Signature': signPayload(raw, TEST_SECRETS.balanceWebhook, Math.floor(wallMs() / 1000)) })));
    app.balanceEventsQueue.failNext = 1;
    expect((await deliver()).status).toBe(500);
    expect((await deliver()).status).toBe(202);
    const [message] = app.balanceEventsQueue.sent;
    const out = await createBalanceWorkerHandler(walked.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(message!.body, { messageId: message!.id, queue: 'test-balance-events' })]), lambdaContext());
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(period.user_id)).toHaveLength(1);
    expect((await deliver()).body).toEqual({ status: 'duplicate' });
  });

  it('the api reads, lists, pays, retries, waives and moves periods, and takes loan payments', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, -HOUR) }));
    const byId = { pathParameters: { subscriptionId: record.subscription_id } };
    expect((await call('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: record.user_id } })).status).toBe(200);
    for (const billing of ['failing', 'exceptions', 'dunning']) expect((await call('GET', { route: '/v1/subscriptions', query: { billing } })).status).toBe(200);
    expect((await call('GET', { route: '/v1/subscriptions/{subscriptionId}', ...byId })).status).toBe(200);
    expect((await call('GET', { route: '/v1/subscriptions/{subscriptionId}/history', ...byId })).status).toBe(200);
    expect((await call('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', ...byId, headers: { 'idempotency-key': randomUUID() } })).status).toBeLessThan(300);

    const [failed] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, -2 * HOUR), billing_status: 'FAILED', payment_attempts: 1, billing_failed_for: `${instantAt(app, -2 * HOUR)}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -HOUR) }));
    const retried = await call('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: failed.subscription_id }, body: { reason: 'walk' } });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);

    const [pending] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, 5 * DAY) }));
    const moved = await call('PUT', { route: '/v1/subscriptions/{subscriptionId}/billing-date', pathParameters: { subscriptionId: pending.subscription_id }, body: { billing_date: instantAt(app, 7 * DAY), reason: 'walk' } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    const [waived] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, 9 * DAY) }));
    expect((await call('POST', { route: '/v1/subscriptions/{subscriptionId}/waive', pathParameters: { subscriptionId: waived.subscription_id }, body: { reason: 'walk' } })).status).toBe(200);

    const loan = { pathParameters: { userId: record.user_id, loanId: 'loan-api' } };
    const created = await call('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', ...loan, body: { amount_cents: 1200, payment_method: 'ach', account_last_four: '6789' }, headers: { 'idempotency-key': randomUUID() } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const payment = { pathParameters: { ...loan.pathParameters, paymentId: created.body.loc_payment_id as string } };
    expect((await call('GET', { route: '/v1/users/{userId}/loans/{loanId}/payments', ...loan })).status).toBe(200);
    expect((await call('GET', { route: '/v1/users/{userId}/loans/{loanId}/payments', ...loan, query: { status: 'COMPLETED' } })).status).toBe(200);
    expect((await call('GET', { route: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}', ...payment })).status).toBe(200);
    expect((await call('GET', { route: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history', ...payment })).status).toBe(200);
  });

  it('a bulk retry run is started and read by the api, and its items run by the retry-run-worker', async () => {
    const due = instantAt(app, -5 * DAY);
    const [parked] = await seedRecords(app, billingRecord(app, { billing_date: due, billing_failed_for: `${due}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -DAY), billing_last_error: 'The payment processor is unavailable.' }));
    app.retryRunsQueue.clear();
    const started = await call('POST', { route: '/v1/billing/retry-runs', body: { state: 'parked', reason: 'walk' }, headers: { 'Idempotency-Key': randomUUID() } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const messages = app.retryRunsQueue.sent.map((m) => sqsRecord(m.body, { messageId: randomUUID(), queue: 'test-retry-runs' }));
    expect(messages.length).toBeGreaterThan(0);
    const worker = createRetryRunWorkerHandler(walked.depsFor('retry-run-worker'));
    expect((await worker(sqsEvent(messages), lambdaContext())).batchItemFailures).toEqual([]);
    expect(chargesOf(parked.user_id)).toHaveLength(1);
    // A redelivery finds the item finished and does nothing again.
    expect((await worker(sqsEvent(messages), lambdaContext())).batchItemFailures).toEqual([]);
    expect(chargesOf(parked.user_id)).toHaveLength(1);

    // A delivery that died after its retry committed: the next one reads the run's audit row instead of retrying.
    const [crashed] = await seedRecords(app, billingRecord(app, { billing_date: due, billing_failed_for: `${due}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -DAY), billing_last_error: 'The payment processor is unavailable.' }));
    app.retryRunsQueue.clear();
    const second = await call('POST', { route: '/v1/billing/retry-runs', body: { state: 'parked', reason: 'walk again' }, headers: { 'Idempotency-Key': randomUUID() } });
    expect(second.status).toBe(202);
    const record = app.retryRunsQueue.sent.map((m) => sqsRecord(m.body, { messageId: randomUUID(), queue: 'test-retry-runs' })).find((r) => r.body.includes(crashed.subscription_id))!;
    const message = JSON.parse(record.body) as { run_id: string; subscription_id: string; actor: string; reason: string };
    const now = at(0);
    expect((await app.deps.retryRuns.claimItem(message.run_id, message.subscription_id, record.messageId, now, now)).kind).toBe('claimed');
    await retryBilling(attemptDepsOf(walked.depsFor('retry-run-worker'), app.deps.logger), { subscriptionId: crashed.subscription_id, owner: 'crashed', actor: message.actor, reason: message.reason, runId: message.run_id });
    expect((await worker(sqsEvent([record]), lambdaContext())).batchItemFailures).toEqual([]);
    expect(chargesOf(crashed.user_id)).toHaveLength(1);
    expect((await call('GET', { route: '/v1/billing/retry-runs/{runId}', pathParameters: { runId: started.body.run_id as string } })).status).toBe(200);
  });

  it('ach-handler settles a period, raises unowed_payment for a waived one, and tells a replay of an older entry or loan debit', async () => {
    const [sent] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: `conf-${randomUUID()}` }));
    expect(await sendAch(achEventBody(sent, 'settled', sent.transaction_id!, at(0)))).toMatchObject({ status: 'applied' });
    // An outcome for a submission not recorded yet releases its claim (DeleteItem), for the redelivery.
    const [pending] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_date: instantAt(app, -HOUR) }));
    expect(await sendAch(achEventBody(pending, 'settled', 'conf-unrecorded', at(0)))).toMatchObject({ error: { code: 'not_yet_recorded' } });

    const [waived] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_date: instantAt(app, -HOUR) }));
    const confirmation = await waivedAfterCharge(call, waived);
    expect(await sendAch(achEventBody(waived, 'settled', confirmation, at(0)))).toEqual({ status: 'applied', effect: 'exception', record_status: 'WAIVED' });

    const [older] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_status: 'FAILED', payment_attempts: 1, transaction_id: 'conf-old' }));
    const second = { ...older, transaction_id: 'conf-second', payment_attempts: 2, version: older.version + 1, last_run_date: at(1000) };
    await app.deps.billing.commit({ writes: [{ kind: 'update', read: older, record: second }], history: [historyRowOf(second)] });
    expect(await sendAch(achEventBody(older, 'settled', 'conf-old', at(0)))).toEqual({ status: 'ignored', reason: 'confirmation_mismatch' });

    // A return on a debit that names its instrument holds it (an UpdateItem of the user's instruments item).
    const [returned] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: `conf-${randomUUID()}`, instrument_id: achInstrumentId('acct-walk', 'auth-walk') }));
    expect(await sendAch(achEventBody(returned, 'returned', returned.transaction_id!, at(0), { return_code: 'R02' }))).toMatchObject({ status: 'applied' });

    // A loan retry waiting on its next attempt: the first entry's outcome is a replay (its audit row
    // shows it); the settlement of a loan debit in flight applies.
    const user = `user-${randomUUID()}`;
    const first = { loc_user_id: user, loc_loan_id: 'loan-a1', loc_payment_id: 'pay-a1', loc_amount: 700, loc_payment_method: 'ach' as const, loc_account_last_four: '6789', loc_status: 'ACHSENT' as const, loc_process: 'AUTO' as const, loc_payment_attempts: 1, loc_confirmation_id: 'conf-first', loc_update_reason: 'submitted', loc_created_date: at(-2 * DAY), loc_last_updated: at(-2 * DAY), version: 0 };
    await app.deps.payments.create(first, { actor: 'test', reason: 'first entry' });
    const retry = { ...first, loc_status: 'RETRY' as const, loc_confirmation_id: 'conf-second', loc_payment_attempts: 2, loc_decline_code: 'insufficient_funds', loc_decline_class: 'retry_later' as const, loc_first_declined_at: at(-DAY), loc_next_attempt_at: at(DAY), loc_last_updated: at(-DAY), version: 1 };
    await app.deps.payments.update(retry, 0, { actor: 'test', reason: 'second entry declined' });
    const ach = createAchHandler(walked.depsFor('ach-handler'));
    expect(parseBody(await ach(loanOutcome(user, 'loan-a1', 'pay-a1', 'conf-first', 700)))).toMatchObject({ status: 'ignored', reason: 'confirmation_mismatch' });
    await app.deps.payments.create({ ...first, loc_payment_id: 'pay-a2', loc_confirmation_id: 'conf-a2' }, { actor: 'test', reason: 'submitted' });
    expect(parseBody(await ach(loanOutcome(user, 'loan-a1', 'pay-a2', 'conf-a2', 700)))).toMatchObject({ status: 'applied' });
    await app.deps.payments.create({ ...first, loc_payment_id: 'pay-a3', loc_confirmation_id: 'conf-a3' }, { actor: 'test', reason: 'submitted' });
    expect(parseBody(await ach(loanOutcome(user, 'loan-a1', 'pay-a3', 'conf-a3', 700, 'R01')))).toMatchObject({ status: 'applied' });
  });

  it('stripe-webhook creates a membership from a checkout, completes a period, and raises unowed_payment for a waived one', async () => {
    const user = `user-${randomUUID()}`;
    expect(await sendStripe('checkout.session.completed', completedCheckoutSession({ userId: user, amountCents: 1999, firstBillingDate: at(-HOUR) }))).toMatchObject({ status: 'processed' });

    const period = cardPeriod(at(-HOUR), { billing_status: 'PENDING' });
    await seedRecords(app, period);
    const reference = { user_id: period.user_id, billing_date: period.billing_date, subscription_id: period.subscription_id };
    expect(await sendStripe('payment_intent.succeeded', succeededPaymentIntent({ reference, amountCents: period.amount_cents, currency: 'usd' }))).toMatchObject({ status: 'processed', outcome: 'applied' });

    const declined = cardPeriod(at(-HOUR), { billing_status: 'PENDING' });
    await seedRecords(app, declined);
    const failedIntent = { ...succeededPaymentIntent({ reference: { user_id: declined.user_id, billing_date: declined.billing_date, subscription_id: declined.subscription_id }, amountCents: declined.amount_cents, currency: 'usd' }), status: 'requires_payment_method', last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' } };
    expect(await sendStripe('payment_intent.payment_failed', failedIntent)).toMatchObject({ status: 'processed', outcome: 'applied' });

    const waived = billingRecord(app, { payment_method: 'card', billing_date: instantAt(app, -2 * HOUR) });
    await seedRecords(app, waived);
    const intentId = await waivedAfterCharge(call, waived);
    const intent = { ...succeededPaymentIntent({ reference: { user_id: waived.user_id, billing_date: waived.billing_date, subscription_id: waived.subscription_id }, amountCents: waived.amount_cents, currency: 'usd' }), id: intentId };
    expect(await sendStripe('payment_intent.succeeded', intent)).toEqual({ status: 'processed', outcome: 'applied', reason: 'exception:unowed_payment' });

    // A failure while applying releases the event's claim, so the redelivery applies it.
    const corrupt = cardPeriod(at(-HOUR), { billing_status: 'PENDING' });
    await seedRecords(app, corrupt);
    await app.db.doc.send(new UpdateCommand({ TableName: app.db.tables.billingActivity, Key: { user_id: corrupt.user_id, billing_date: corrupt.billing_date }, UpdateExpression: 'SET billing_status = :bad', ExpressionAttributeValues: { ':bad': 'NOT-A-STATUS' } }));
    const event = stripeEventOf('payment_intent.succeeded', succeededPaymentIntent({ reference: { user_id: corrupt.user_id, billing_date: corrupt.billing_date, subscription_id: corrupt.subscription_id }, amountCents: corrupt.amount_cents, currency: 'usd' }), app.clock.now().getTime());
    expect((await createStripeWebhookHandler(walked.depsFor('stripe-webhook'))(stripeDelivery(event, { signedAtMs: wallMs() }))).statusCode).toBe(500);
    expect(await app.deps.stripeEvents.get(event.id as string)).toBeUndefined();
  });

  it('stripe-webhook stores the card Stripe now has for a customer.updated', async () => {
    const user = `user-${randomUUID()}`;
    const card = { customer: `cus_${randomUUID().slice(0, 8)}`, payment_method: 'pm_walk', fingerprint: `fp_${randomUUID().slice(0, 8)}`, brand: 'visa' };
    // Stripe's answer for the customer, as the card directory reads it back (the simulator keeps no customers).
    const cardPayments = { findReference: async () => undefined, cardOfCustomer: async () => ({ user_id: user, card }) };
    const event = stripeEventOf('customer.updated', { ...stripeFixture('customer.json'), id: card.customer }, app.clock.now().getTime());
    const response = await createStripeWebhookHandler(walked.depsFor('stripe-webhook', { cardPayments }))(stripeDelivery(event, { signedAtMs: wallMs() }));
    expect(parseBody(response)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect((await app.deps.instruments.get(user)).stripe_card).toMatchObject({ payment_method: 'pm_walk', fingerprint: card.fingerprint });
  });

  it('ach-handler holds the instrument of a returned entry; the collections-job sweeps a held period back once a day', async () => {
    const [period] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
    const message = (r: BillingRecord) => sqsRecord({ user_id: r.user_id, billing_date: r.billing_date, subscription_id: r.subscription_id, process: 'SCHEDULED', enqueued_at: at(0) });
    await createBatchWorkerHandler(walked.depsFor('batch-worker'))(sqsEvent([message(period)]), lambdaContext());
    const submitted = (await app.deps.billing.get(period))!;
    expect(await sendAch(achEventBody(submitted, 'returned', submitted.transaction_id, at(0), { return_code: 'R10' }))).toMatchObject({ status: 'applied' });
    const next = (await app.deps.billing.listByUser(period.user_id)).items.find((r) => r.subscription_id !== period.subscription_id)!;
    const restore = app.clock.now().toISOString();
    app.clock.set(formatInstant(new Date(Date.parse(next.billing_date.slice(0, 10)) + DAY + 5 * 60_000)));
    await createBatchWorkerHandler(walked.depsFor('batch-worker'))(sqsEvent([message(next)]), lambdaContext());
    expect((await app.deps.billing.get(next))?.held_on?.code).toBe('ach_authorization_required');
    app.simulator.configure({ ...app.simulator.current(), accounts: { [period.user_id]: { status: 'active', instruments: { ach: { account_id: 'acct-walk', authorization_id: 'auth-walk' } } } } });
    // The sweep the collections-job runs first thing each UTC day (its planning is walked above).
    expect(isDailySweepRun(app.clock.now())).toBe(true);
    await sweepHeldPeriods(walked.depsFor('collections-job'));
    expect((await app.deps.billing.get(next))?.held_on).toBeUndefined();
    app.clock.set(restore);
  });

  it('reconciliation-job: reads the day\'s movements, writes its runs and exceptions', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless' }));
    await runCollectionAttempt(walked.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `walk-${randomUUID()}` });
    const report = new SimulatedProcessorReport(app.simulator);
    const date = formatInstant(app.clock.now()).slice(0, 10);
    report.inject({ kind: 'drop', date, user_id: record.user_id });
    const events = { completed: async () => {}, exception: async () => {} };
    const job = createReconciliationJobHandler(walked.depsFor('reconciliation-job', { processorReports: { card: report, ach: report, pinless: report }, reconciliationEvents: events }));
    expect((await job({ date })).failed).toEqual([]);
    // The api's reconciliation routes over that run: the day's runs, the run, a resolution.
    const api = walked.depsFor('api');
    expect((await api.reconciliation.listRuns(date)).length).toBeGreaterThan(0);
    const found = await api.reconciliation.getRun(date, 'pinless');
    const resolved = await resolveReconciliationException(api, { exception_id: found!.exceptions[0]!.exception_id, resolution: 'written_off', reason: 'walk', actor: 'walk' });
    expect(resolved.resolution?.resolution).toBe('written_off');
    // A later day amends an earlier one, then explains its exception (it leaves the open list).
    const store = walked.depsFor('reconciliation-job').reconciliation;
    const late = { exception_id: `rx_walk_${randomUUID()}`, rail: 'pinless', code: 'status_mismatch', amount_cents: -100, kind: 'return', transaction_id: 'walk', occurred_at: formatInstant(app.clock.now()), known: false } as const;
    const totals = { ours: { count: 1, total_cents: 0 }, theirs: { count: 1, total_cents: 0 }, net_drift_cents: 0, gross_drift_cents: 0 };
    const at = formatInstant(app.clock.now());
    await store.amend(date, 'pinless', { from: 'walk-later', result: { ...totals, gross_drift_cents: 100, exceptions: [late] } }, at);
    await store.amend(date, 'pinless', { from: 'walk-later', result: { ...totals, exceptions: [] } }, at);
  });

  it('used every permission each manifest grants, but those no path of the function needs', () => {
    const unused = Object.fromEntries(
      (Object.keys(FUNCTIONS) as FunctionName[]).map((name) => [name, granted(name).filter((p) => !used.get(name)?.has(p)).sort()]),
    );
    expect(unused).toEqual(Object.fromEntries((Object.keys(FUNCTIONS) as FunctionName[]).map((name) => [name, [...(WIDER_THAN_USE[name] ?? [])].sort()])));
  });
});
