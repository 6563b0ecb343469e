import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { exceptionRaisedDetailSchema, publishedEventsOf } from '../../src/domain/published-events.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { cardPeriod } from '../support/billing-fixtures.js';
import { FaultInjector, faultyPorts } from '../support/faults.js';
import { seedRecords } from '../support/seed.js';
import { stripeEventOf, succeededPaymentIntent } from '../support/stripe-fixtures.js';
import { achDelivery, achEventBody, stripeDelivery } from '../support/webhooks.js';
import { billingRecord, callerFor, type Caller } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';

/**
 * Money taken for a period that was written off (F9, DESIGN 4.1 / 6.1): a settlement or a card
 * success of a transaction the waived, cancelled or skipped period never recorded is not dropped. It
 * becomes an `unowed_payment` exception with its audit row, listed by `?billing=exceptions` and
 * published as billing.exception.raised; its redelivery, and the late outcome of an older entry the
 * period did record, stay harmless 200 replays. Through the real handlers on DynamoDB Local.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'unowed-payments' });
  call = callerFor(app);
});

const current = async (record: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(record))!;
const historyOf = async (record: BillingRecord) => (await app.deps.billing.history(record.subscription_id)).items;
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const listedExceptions = async () => (await call('GET', { route: '/v1/subscriptions', query: { billing: 'exceptions', limit: '100' } })).body.items as Record<string, unknown>[];

async function sendAch(body: Record<string, unknown>) {
  const result = await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode, body: parseBody(result) };
}

async function sendStripe(type: string, object: Record<string, unknown>) {
  const result = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(stripeEventOf(type, object, app.clock.now().getTime()), { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode, body: parseBody(result) };
}

/**
 * The processor took the payment and the attempt's write failed (a counted failure is saved), on an
 * item saved before `billing_presented_for` existed: nothing tells the waive that the key was presented.
 */
async function takenButUnrecordedOnLegacyItem(record: BillingRecord): Promise<void> {
  const faults = new FaultInjector([{ point: 'billing.commit.before', mode: 'throw', error: () => new Error('injected bug before the commit') }]);
  const outcome = await runCollectionAttempt(faultyPorts(app.deps, faults), { key: record, process: 'SCHEDULED', owner: 'test' });
  expect(outcome.kind).toBe('failed_counted');
  expect((await current(record)).billing_presented_for).toBeDefined();
  await app.db.doc.send(new UpdateCommand({ TableName: app.db.tables.billingActivity, Key: { user_id: record.user_id, billing_date: record.billing_date }, UpdateExpression: 'REMOVE billing_presented_for' }));
}

async function waive(record: BillingRecord) {
  return call('POST', { route: '/v1/subscriptions/{subscriptionId}/waive', pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'written off' } });
}

describe('a payment for a written-off period it never recorded', () => {
  it('an ACH settlement of a waived period is an unowed_payment exception: audited, listed, published; its redelivery is a replay', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', amount_cents: 1999 }));
    await takenButUnrecordedOnLegacyItem(record);
    expect((await waive(record)).status).toBe(200);
    const [charge] = chargesOf(record.user_id);
    const settled = achEventBody(record, 'settled', charge!.confirmation_id, formatInstant(app.clock.now()));

    expect(await sendAch(settled)).toEqual({ status: 200, body: { status: 'applied', effect: 'exception', record_status: 'WAIVED' } });
    const flagged = await current(record);
    expect(flagged.billing_status).toBe('WAIVED');
    expect(flagged.ach_exception).toEqual({ code: 'unowed_payment', received_cents: 1999, confirmation_id: charge!.confirmation_id, at: formatInstant(app.clock.now()) });
    const [row] = await historyOf(record);
    expect(row).toMatchObject({ billing_status: 'WAIVED', ach_exception: { code: 'unowed_payment', confirmation_id: charge!.confirmation_id } });
    const raised = publishedEventsOf(row!, eventIdOf).find((e) => e['detail-type'] === 'billing.exception.raised')!;
    expect(raised).toBeDefined();
    expect(exceptionRaisedDetailSchema.parse(raised.detail).exception).toMatchObject({ source: 'ach', code: 'unowed_payment', received_cents: 1999, confirmation_id: charge!.confirmation_id });
    expect((await listedExceptions()).some((i) => i.subscription_id === record.subscription_id)).toBe(true);

    const rows = (await historyOf(record)).length;
    expect(await sendAch({ ...settled, event_id: `${settled.event_id}-again` })).toEqual({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });
    expect((await historyOf(record)).length).toBe(rows);
  });

  it('the late settlement of an older entry the period did record stays a harmless replay', async () => {
    const [seeded] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', amount_cents: 1999, billing_status: 'FAILED', payment_attempts: 1, transaction_id: 'conf-old' }));
    // A second entry replaced the first on the record (each attempt overwrites transaction_id); its row is in the history.
    const second = { ...seeded, transaction_id: 'conf-second', payment_attempts: 2, version: seeded.version + 1, last_run_date: formatInstant(new Date(Date.parse(seeded.last_run_date) + 1000)) };
    await app.deps.billing.commit({ writes: [{ kind: 'update', read: seeded, record: second }], history: [historyRowOf(second)] });
    expect((await waive(seeded)).status).toBe(200);
    const before = await current(seeded);
    const rows = (await historyOf(seeded)).length;
    expect(await sendAch(achEventBody(seeded, 'settled', 'conf-old', formatInstant(app.clock.now())))).toEqual({ status: 200, body: { status: 'ignored', reason: 'confirmation_mismatch' } });
    expect(await current(seeded)).toEqual(before);
    expect((await historyOf(seeded)).length).toBe(rows);
  });

  it('a card success of a waived period is an unowed_payment exception, and its redelivery a replay', async () => {
    const record = cardPeriod(formatInstant(new Date(app.clock.now().getTime() - 3_600_000)));
    await seedRecords(app, record);
    await takenButUnrecordedOnLegacyItem(record);
    expect((await waive(record)).status).toBe(200);
    const [charge] = chargesOf(record.user_id);
    const intent = { ...succeededPaymentIntent({ reference: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id }, amountCents: 1999, currency: 'usd' }), id: charge!.confirmation_id };

    expect(await sendStripe('payment_intent.succeeded', intent)).toEqual({ status: 200, body: { status: 'processed', outcome: 'applied', reason: 'exception:unowed_payment' } });
    const flagged = await current(record);
    expect(flagged.billing_status).toBe('WAIVED');
    expect(flagged.card_exception).toMatchObject({ code: 'unowed_payment', payment_intent_id: charge!.confirmation_id, received_cents: 1999, currency: 'usd' });
    expect((await listedExceptions()).some((i) => i.subscription_id === record.subscription_id)).toBe(true);
    expect((await sendStripe('payment_intent.succeeded', intent)).body).toMatchObject({ reason: 'already_applied' });
  });

  it('a waive of a period whose failed attempt presented its key answers 409 attempt_outcome_unknown and changes nothing', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless', amount_cents: 1999 }));
    const faults = new FaultInjector([{ point: 'processor.accepted', mode: 'throw', error: () => new Error('injected: the answer was lost') }]);
    expect((await runCollectionAttempt(faultyPorts(app.deps, faults), { key: record, process: 'SCHEDULED', owner: 'test' })).kind).toBe('failed_counted');
    const before = await current(record);
    const answer = await waive(record);
    expect([answer.status, answer.body.error.code]).toEqual([409, 'attempt_outcome_unknown']);
    expect(await current(record)).toEqual(before);
    // retry-billing resolves it with the same key: the charge the processor took is recorded, nothing is charged twice.
    const retried = await call('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'resolve' } });
    expect(retried.body.outcome).toBe('billed');
    expect(chargesOf(record.user_id)).toHaveLength(1);
    expect((await current(record)).transaction_id).toBe(chargesOf(record.user_id)[0]!.confirmation_id);
  });
});
