import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BillingRecord } from '../../src/domain/records.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { cardPeriod } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { tableItemCounts } from '../support/ledger.js';
import { completedCheckoutSession, disputeOf, stripeEventOf, succeededPaymentIntent } from '../support/stripe-fixtures.js';
import { stripeDelivery } from '../support/webhooks.js';
import { callerFor, type Caller } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';

/**
 * Stripe outcomes that do not match (DESIGN 6.1), with Stripe's own example objects
 * (test/fixtures/stripe), through the real stripe-webhook and api handlers on DynamoDB Local.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'stripe-mismatch' });
  call = callerFor(app);
});

const BILLING_DATE = '2026-11-30T00:00:00.000000000Z';
const current = async (record: Pick<BillingRecord, 'user_id' | 'billing_date'>) => app.deps.billing.get(record);
const historyCount = async (record: BillingRecord) => (await app.deps.billing.history(record.subscription_id)).items.length;

async function deliver(type: string, object: Record<string, unknown>) {
  const body = stripeEventOf(type, object, app.clock.now().getTime());
  const result = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode, body: parseBody(result) };
}

const reference = (r: BillingRecord) => ({ user_id: r.user_id, billing_date: r.billing_date, subscription_id: r.subscription_id });
const listedExceptions = async () => (await call('GET', { route: '/v1/subscriptions', query: { billing: 'exceptions', limit: '100' } })).body.items as Record<string, unknown>[];

describe('payment_intent.succeeded that does not match the period', () => {
  it('a 10.99 EUR payment_intent.succeeded on a 19.99 USD period is an exception, not a completion', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const intent = succeededPaymentIntent({ reference: reference(record), amountCents: 1099, currency: 'eur' });
    const answer = await deliver('payment_intent.succeeded', intent);
    expect(answer).toEqual({ status: 200, body: { status: 'processed', outcome: 'applied', reason: 'exception:currency_mismatch' } });
    const after = (await current(record))!;
    expect(after.billing_status).toBe('PENDING');
    expect(after.card_exception).toMatchObject({ code: 'currency_mismatch', payment_intent_id: intent.id, received_cents: 1099, currency: 'eur' });
    expect(await historyCount(record)).toBe(2);
    expect((await listedExceptions()).some((i) => i.subscription_id === record.subscription_id)).toBe(true);
    // No automatic attempt charges a period whose payment is in question.
    expect(await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner: 'test' })).toMatchObject({ kind: 'not_due', reason: 'exception' });
    expect(app.simulator.charges().filter((c) => c.user_id === record.user_id)).toHaveLength(0);
  });

  it('a USD success for another amount is an amount_mismatch exception; the matching amount completes', async () => {
    const [short] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect((await deliver('payment_intent.succeeded', succeededPaymentIntent({ reference: reference(short), amountCents: 1, currency: 'usd' }))).body).toMatchObject({ reason: 'exception:amount_mismatch' });
    expect((await current(short))!).toMatchObject({ billing_status: 'PENDING', card_exception: { code: 'amount_mismatch', received_cents: 1 } });

    const [exact] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect((await deliver('payment_intent.succeeded', succeededPaymentIntent({ reference: reference(exact), amountCents: 1999, currency: 'usd' }))).body).toEqual({ status: 'processed', outcome: 'applied' });
    expect((await current(exact))!.billing_status).toBe('COMPLETED');
  });
});

describe('charge.dispute.created', () => {
  it('a dispute inquiry (warning_needs_response) flags the COMPLETED period without failing it', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: 'pi_inquiry_1', payment_attempts: 1, completed_date: BILLING_DATE }));
    const dispute: Record<string, unknown> = { ...disputeOf({ paymentIntentId: 'pi_inquiry_1', amountCents: 1999 }), metadata: reference(record) };
    expect(dispute.status).toBe('warning_needs_response');
    const answer = await deliver('charge.dispute.created', dispute);
    expect(answer).toEqual({ status: 200, body: { status: 'processed', outcome: 'applied', reason: 'exception:dispute_inquiry' } });
    const after = (await current(record))!;
    expect(after.billing_status).toBe('COMPLETED');
    expect(after.card_disputed).toBeUndefined();
    expect(after.card_exception).toMatchObject({ code: 'dispute_inquiry', dispute_id: dispute.id, dispute_status: 'warning_needs_response' });
    expect((await listedExceptions()).some((i) => i.subscription_id === record.subscription_id)).toBe(true);
  });

  it('a dispute with funds withdrawn (needs_response) still fails the period and blocks retries', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: 'pi_lost_1', payment_attempts: 1 }));
    const dispute = { ...disputeOf({ paymentIntentId: 'pi_lost_1', amountCents: 1999, status: 'needs_response' }), metadata: reference(record) };
    expect((await deliver('charge.dispute.created', dispute)).body).toEqual({ status: 'processed', outcome: 'applied' });
    expect((await current(record))!).toMatchObject({ billing_status: 'FAILED', card_disputed: true });
  });
});

describe('checkout.session.completed for a trial', () => {
  const trial = (userId: string, metadata: Record<string, string>) => ({
    ...completedCheckoutSession({ userId, amountCents: 0, firstBillingDate: '2026-12-15T00:00:00Z' }),
    payment_status: 'no_payment_required',
    amount_total: 0,
    amount_subtotal: 0,
    metadata: { user_id: userId, tier: 'plus:v3', term: 'monthly', first_billing_date: '2026-12-15T00:00:00Z', ...metadata },
  });

  it('a trial checkout opens the chain from metadata.amount', async () => {
    const userId = `user-${randomUUID()}`;
    const answer = await deliver('checkout.session.completed', trial(userId, { amount: '19.99' }));
    expect(answer).toEqual({ status: 200, body: { status: 'processed', outcome: 'applied' } });
    expect(await current({ user_id: userId, billing_date: '2026-12-15T00:00:00.000000000Z' })).toMatchObject({ billing_status: 'PENDING', amount_cents: 1999, payment_method: 'card' });
  });

  it('a session that names no positive amount anywhere is answered 200 ignored and writes nothing', async () => {
    const before = await tableItemCounts(app);
    const userId = `user-${randomUUID()}`;
    const answer = await deliver('checkout.session.completed', trial(userId, {}));
    expect(answer).toEqual({ status: 200, body: { status: 'processed', outcome: 'ignored', reason: 'no_amount' } });
    const after = await tableItemCounts(app);
    // Only the Stripe event's own claim row is new.
    expect({ ...after, stripeEvents: before.stripeEvents }).toEqual(before);
    expect(await current({ user_id: userId, billing_date: '2026-12-15T00:00:00.000000000Z' })).toBeUndefined();
  });
});


