import { beforeAll, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import { publishedEventsOf } from '../../src/domain/published-events.js';
import type { BillingRecord, HistoryRow } from '../../src/domain/records.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { cardPeriod } from '../support/billing-fixtures.js';
import { readerAuth } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { stripeEventOf, succeededPaymentIntent } from '../support/stripe-fixtures.js';
import { achDelivery, achEventBody, stripeDelivery } from '../support/webhooks.js';
import { billingRecord, callerFor, type Caller } from './api-fixtures.js';

/**
 * `POST /v1/subscriptions/{id}/exception/resolve` (DESIGN 12) through the real api, stripe-webhook
 * and ach-handler on DynamoDB Local: each resolution is one transition, audited, and none charges.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'exception-resolution' });
  call = callerFor(app);
});

const BILLING_DATE = '2026-11-30T00:00:00.000000000Z';
const resolveRoute = (record: BillingRecord) => `/v1/subscriptions/${record.subscription_id}/exception/resolve`;
const resolve = (record: BillingRecord, body: Record<string, unknown>, options: { auth?: typeof readerAuth } = {}) =>
  call('POST', { route: resolveRoute(record), body, ...options });
const current = async (record: BillingRecord) => (await app.deps.billing.get(record))!;
const newestRow = async (record: BillingRecord): Promise<HistoryRow> => (await app.deps.billing.history(record.subscription_id)).items[0]!;
const chargesOf = (record: BillingRecord) => app.simulator.charges().filter((c) => c.user_id === record.user_id);
const listedExceptions = async () =>
  ((await call('GET', { route: '/v1/subscriptions', query: { billing: 'exceptions', limit: '100' } })).body.items as { subscription_id: string }[]).map((i) => i.subscription_id);

/** A PENDING card period that received 15.00 of its 19.99 through Stripe: an amount_mismatch exception. */
async function cardShortPayment(): Promise<{ record: BillingRecord; intentId: string }> {
  const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
  const intent = succeededPaymentIntent({ reference: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id }, amountCents: 1500, currency: 'usd' });
  const body = stripeEventOf('payment_intent.succeeded', intent, app.clock.now().getTime());
  const answer = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  expect(answer.statusCode).toBe(200);
  expect((await current(record)).card_exception).toMatchObject({ code: 'amount_mismatch', received_cents: 1500 });
  return { record: await current(record), intentId: intent.id as string };
}

/** An ACH period whose debit of 19.99 settled for 12.00: ACHSENT with an amount_mismatch exception. */
async function achShortSettlement(): Promise<BillingRecord> {
  const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_status: 'ACHSENT', transaction_id: 'ach_conf_short', payment_attempts: 1 }));
  const body = achEventBody(record, 'settled', 'ach_conf_short', app.clock.now().toISOString(), { amount_cents: 1200 });
  const answer = await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  expect(answer.statusCode).toBe(200);
  expect((await current(record)).ach_exception).toMatchObject({ code: 'amount_mismatch', received_cents: 1200 });
  return current(record);
}

describe('accept', () => {
  it('completes the period with the money received, the shortfall on the audit row and in the event, and opens the successor', async () => {
    const { record, intentId } = await cardShortPayment();
    expect(await listedExceptions()).toContain(record.subscription_id);
    const answer = await resolve(record, { resolution: 'accept', reason: 'member agreed to the discount' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ resolution: 'accept', subscription: { billing_status: 'COMPLETED', amount_received_cents: 1500, transaction_id: intentId } });
    expect(answer.body.subscription).not.toHaveProperty('card_exception');
    const after = await current(record);
    expect(after).toMatchObject({ billing_status: 'COMPLETED', amount_received_cents: 1500 });
    expect(after.card_exception).toBeUndefined();
    expect(await listedExceptions()).not.toContain(record.subscription_id);

    const row = await newestRow(record);
    expect(row).toMatchObject({ billing_event: 'EXCEPTION_ACCEPTED', actor: 'operator-1', reason: 'member agreed to the discount', resolution: 'accept', amount_difference_cents: -499 });
    const [event] = publishedEventsOf(row, eventIdOf);
    expect(event).toMatchObject({ 'detail-type': 'billing.period.collected', detail: { resolution: 'accept', amount_received_cents: 1500, amount_difference_cents: -499, actor: 'operator-1' } });

    const periods = (await app.deps.billing.listByUser(record.user_id)).items;
    expect(periods.map((p) => p.billing_status)).toEqual(['PENDING', 'COMPLETED']);
    expect(chargesOf(record)).toHaveLength(0);
  });

  it('refuses money in another currency (currency_mismatch), changing nothing', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const intent = succeededPaymentIntent({ reference: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id }, amountCents: 1999, currency: 'eur' });
    await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(stripeEventOf('payment_intent.succeeded', intent, app.clock.now().getTime()), { signedAtMs: app.wallClock.now().getTime() }));
    const before = await current(record);
    const answer = await resolve(record, { resolution: 'accept', reason: 'r' });
    expect(answer).toMatchObject({ status: 409, body: { error: { code: 'currency_mismatch' } } });
    expect(await current(record)).toEqual(before);
  });
});

describe('waive', () => {
  it('writes an ACHSENT period off with the settled money still recorded; it leaves the exceptions list', async () => {
    const record = await achShortSettlement();
    const answer = await resolve(record, { resolution: 'waive', reason: 'goodwill' });
    expect(answer.status).toBe(200);
    const after = await current(record);
    expect(after).toMatchObject({ billing_status: 'WAIVED', amount_received_cents: 1200 });
    expect(after.ach_exception).toBeUndefined();
    expect(await listedExceptions()).not.toContain(record.subscription_id);
    const row = await newestRow(record);
    expect(row).toMatchObject({ billing_event: 'EXCEPTION_WAIVED', resolution: 'waive', actor: 'operator-1', reason: 'goodwill', amount_difference_cents: -799 });
    expect(publishedEventsOf(row, eventIdOf).map((e) => e['detail-type'])).toEqual(['billing.period.waived']);
    expect(chargesOf(record)).toHaveLength(0);
  });
});

describe('refunded_retry', () => {
  it('is refused with 409 refund_not_found when the processor knows no such refund, and nothing changes', async () => {
    const { record } = await cardShortPayment();
    const answer = await resolve(record, { resolution: 'refunded_retry', reason: 'refunded', refund_id: 're_unknown' });
    expect(answer).toMatchObject({ status: 409, body: { error: { code: 'refund_not_found' } } });
    expect(await current(record)).toEqual(record);
    expect(await listedExceptions()).toContain(record.subscription_id);
  });

  it('is refused (refund_mismatch) for a refund of another payment or a partial one', async () => {
    const { record, intentId } = await cardShortPayment();
    const other = app.simulator.refund({ transaction_id: 'pi_someone_else', amount_cents: 1500 });
    const partial = app.simulator.refund({ transaction_id: intentId, amount_cents: 500 });
    for (const refund of [other, partial]) {
      const answer = await resolve(record, { resolution: 'refunded_retry', reason: 'refunded', refund_id: refund.refund_id });
      expect(answer).toMatchObject({ status: 409, body: { error: { code: 'refund_mismatch' } } });
    }
    expect(await current(record)).toEqual(record);
  });

  it('with the refund of the money received, the period is FAILED and owed in full; it is then charged once, in full', async () => {
    const { record, intentId } = await cardShortPayment();
    const refund = app.simulator.refund({ transaction_id: intentId, amount_cents: 1500 });
    const answer = await resolve(record, { resolution: 'refunded_retry', reason: 'refunded the short payment', refund_id: refund.refund_id });
    expect(answer.status).toBe(200);
    const after = await current(record);
    expect(after.billing_status).toBe('FAILED');
    expect(after.card_exception).toBeUndefined();
    expect(after.amount_received_cents).toBeUndefined();
    expect(await newestRow(record)).toMatchObject({ billing_event: 'EXCEPTION_REFUNDED', resolution: 'refunded_retry', refund_id: refund.refund_id, actor: 'operator-1' });
    expect(chargesOf(record)).toHaveLength(0);

    // A second resolution finds no exception: the refund cannot be used twice.
    expect(await resolve(record, { resolution: 'refunded_retry', reason: 'again', refund_id: refund.refund_id })).toMatchObject({ status: 409, body: { error: { code: 'no_exception' } } });
    const retried = await call('POST', { route: `/v1/subscriptions/${record.subscription_id}/retry-billing`, body: { reason: 'collect in full' } });
    expect(retried.body).toMatchObject({ outcome: 'billed' });
    expect(chargesOf(record).map((c) => c.amount_cents)).toEqual([1999]);
  });
});

describe('refusals', () => {
  it('a period without an exception answers 409 no_exception; a written-off period 409 illegal_transition', async () => {
    const [plain] = await seedRecords(app, billingRecord(app));
    expect(await resolve(plain, { resolution: 'accept', reason: 'r' })).toMatchObject({ status: 409, body: { error: { code: 'no_exception' } } });
    const [unowed] = await seedRecords(
      app,
      billingRecord(app, { billing_status: 'WAIVED', ach_exception: { code: 'unowed_payment', received_cents: 1999, confirmation_id: 'ach_x', at: BILLING_DATE } }),
    );
    expect(await resolve(unowed, { resolution: 'waive', reason: 'r' })).toMatchObject({ status: 409, body: { error: { code: 'illegal_transition' } } });
  });

  it('validates the body (reason required; refund_id with refunded_retry only) and the scope', async () => {
    const { record } = await cardShortPayment();
    for (const body of [{ resolution: 'accept' }, { resolution: 'refunded_retry', reason: 'r' }, { resolution: 'accept', reason: 'r', refund_id: 're_1' }, { resolution: 'refund', reason: 'r' }]) {
      expect((await resolve(record, body)).status).toBe(400);
    }
    expect((await resolve(record, { resolution: 'accept', reason: 'r' }, { auth: readerAuth })).status).toBe(403);
    expect(await current(record)).toEqual(record);
  });
});
