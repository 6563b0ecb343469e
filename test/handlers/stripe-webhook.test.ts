import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { nextPeriodDate } from '../../src/domain/billing-record.js';
import type { CardPaymentDirectory, CardPaymentReference } from '../../src/domain/card-outcomes.js';
import type { BillingStore } from '../../src/domain/ports/billing-store.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { STRIPE_EVENT_LEASE_MS } from '../../src/domain/stripe-events.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import { cardPeriod } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { commandsSent } from '../support/write-counter.js';
import { parseBody, webhookEvent } from './webhook-events.js';
import { DAY } from '../support/time.js';

const BILLING_DATE = '2026-12-01T00:00:00.000000000Z';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'stripe' });
});

beforeEach(() => {
  app.clock.set('2026-12-01T12:00:00.000Z');
});

const nowSeconds = () => Math.floor(app.clock.now().getTime() / 1000);
/** Stripe signs with real time; the handler checks against the wall clock, not the business clock (DESIGN 9). */
const wallSeconds = () => Math.floor(app.wallClock.now().getTime() / 1000);

/** A Stripe event envelope as Stripe posts it. */
function stripeEvent(type: string, object: Record<string, unknown>, id = `evt_${randomUUID().replace(/-/g, '')}`) {
  return {
    id,
    object: 'event',
    api_version: '2025-10-29.clover',
    created: nowSeconds(),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

function delivery(body: unknown, options: { secret?: string; timestamp?: number; base64?: boolean; raw?: string } = {}) {
  const payload = options.raw ?? JSON.stringify(body);
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? TEST_SECRETS.stripeWebhook,
    timestamp: options.timestamp ?? wallSeconds(),
  });
  return webhookEvent('/webhooks/stripe', payload, { 'Stripe-Signature': signature }, { base64: options.base64 ?? false });
}

const current = async (key: Pick<BillingRecord, 'user_id' | 'billing_date'>) => app.deps.billing.get(key);
const handle = (deps: AppDeps = app.depsFor('stripe-webhook')) => createStripeWebhookHandler(deps);

function paymentIntent(record: BillingRecord, overrides: Record<string, unknown> = {}) {
  return {
    id: `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    object: 'payment_intent',
    amount: record.amount_cents,
    amount_received: record.amount_cents,
    currency: 'usd',
    customer: 'cus_123',
    status: 'succeeded',
    last_payment_error: null,
    metadata: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    ...overrides,
  };
}

function charge(record: BillingRecord, paymentIntentId: string, overrides: Record<string, unknown> = {}) {
  return {
    id: `ch_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    object: 'charge',
    amount: record.amount_cents,
    amount_refunded: record.amount_cents,
    refunded: true,
    payment_intent: paymentIntentId,
    metadata: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    ...overrides,
  };
}

class InMemoryCardPayments implements CardPaymentDirectory {
  readonly known = new Map<string, CardPaymentReference>();
  async findReference(paymentIntentId: string) {
    return this.known.get(paymentIntentId);
  }
  async cardOfCustomer() {
    return undefined;
  }
}

describe('stripe-webhook: checkout.session.completed', () => {
  const session = (userId: string, metadata: Record<string, string> = {}) => ({
    id: `cs_test_${randomUUID().replace(/-/g, '')}`,
    object: 'checkout.session',
    mode: 'setup',
    amount_total: 1999,
    currency: 'usd',
    customer: 'cus_123',
    payment_status: 'no_payment_required',
    status: 'complete',
    metadata: { user_id: userId, tier: 'plus:v3', term: 'MONTHLY', first_billing_date: '2026-12-15T00:00:00Z', ...metadata },
  });

  it('creates the first billing record, paid by card, with its audit row; a duplicate delivery is processed once', async () => {
    const userId = `user-${randomUUID()}`;
    const body = stripeEvent('checkout.session.completed', session(userId));
    const result = await handle()(delivery(body));
    expect(result.statusCode).toBe(200);
    expect(parseBody(result)).toEqual({ status: 'processed', outcome: 'applied' });

    const record = await current({ user_id: userId, billing_date: '2026-12-15T00:00:00.000000000Z' });
    expect(record).toMatchObject({ billing_status: 'PENDING', amount_cents: 1999, payment_method: 'card', tier: 'plus:v3', term: 'MONTHLY', payment_attempts: 0, version: 0 });
    expect((await app.deps.billing.history(record!.subscription_id)).items).toHaveLength(1);
    expect(await app.deps.stripeEvents.get(body.id)).toMatchObject({ status: 'processed', event_type: 'checkout.session.completed' });

    const again = await handle()(delivery(body));
    expect(again.statusCode).toBe(200);
    expect(parseBody(again)).toEqual({ status: 'duplicate' });
    expect((await app.deps.billing.listByUser(userId)).items).toHaveLength(1);
  });

  it('is replay-safe across event ids: a record at that billing date already exists', async () => {
    const userId = `user-${randomUUID()}`;
    await handle()(delivery(stripeEvent('checkout.session.completed', session(userId))));
    const second = await handle()(delivery(stripeEvent('checkout.session.completed', session(userId))));
    expect(parseBody(second)).toEqual({ status: 'processed', outcome: 'ignored', reason: 'already_applied' });
    expect((await app.deps.billing.listByUser(userId)).items).toHaveLength(1);
  });

  it('records a session without our metadata as processed, without effect (redelivery could not fix it)', async () => {
    const body = stripeEvent('checkout.session.completed', { ...session('x'), metadata: { tier: 'plus:v3' } });
    const result = await handle()(delivery(body));
    expect(result.statusCode).toBe(200);
    expect(parseBody(result)).toEqual({ status: 'processed', outcome: 'ignored', reason: 'invalid_data' });
    expect(await app.deps.stripeEvents.get(body.id)).toMatchObject({ status: 'processed' });
  });
});

describe('stripe-webhook: payment intents', () => {
  it('payment_intent.succeeded completes a PENDING record left by a crash and opens the next period', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const intent = paymentIntent(record);
    const result = await handle()(delivery(stripeEvent('payment_intent.succeeded', intent)));
    expect(parseBody(result)).toEqual({ status: 'processed', outcome: 'applied' });
    expect(await current(record)).toMatchObject({ billing_status: 'COMPLETED', transaction_id: intent.id, payment_attempts: 1, payment_error: '', version: 2 });
    const next = await current({ user_id: record.user_id, billing_date: nextPeriodDate(record) });
    expect(next).toMatchObject({ billing_status: 'PENDING', payment_method: 'card', payment_attempts: 0 });
  });

  it('payment_intent.succeeded for a FAILED record completes it; a later event for the same intent is a no-op', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'FAILED', payment_attempts: 1, transaction_id: 'pi_declined', payment_error: 'The card was declined.' }));
    const intent = paymentIntent(record);
    expect(parseBody(await handle()(delivery(stripeEvent('payment_intent.succeeded', intent))))).toMatchObject({ outcome: 'applied' });
    expect(await current(record)).toMatchObject({ billing_status: 'COMPLETED', transaction_id: intent.id, payment_attempts: 2 });
    const again = await handle()(delivery(stripeEvent('payment_intent.succeeded', intent)));
    expect(parseBody(again)).toEqual({ status: 'processed', outcome: 'ignored', reason: 'already_applied' });
    expect((await current(record))!.version).toBe(2);
  });

  it('payment_intent.succeeded names another period of the same date: ignored', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const intent = paymentIntent(record, { metadata: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: 'another' } });
    expect(parseBody(await handle()(delivery(stripeEvent('payment_intent.succeeded', intent))))).toMatchObject({ outcome: 'ignored', reason: 'subscription_mismatch' });
    expect((await current(record))!.billing_status).toBe('PENDING');
  });

  it('payment_intent.payment_failed marks a PENDING record FAILED with a curated message', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const intent = paymentIntent(record, {
      status: 'requires_payment_method',
      last_payment_error: { type: 'card_error', code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds. (card 4242)' },
    });
    expect(parseBody(await handle()(delivery(stripeEvent('payment_intent.payment_failed', intent))))).toMatchObject({ outcome: 'applied' });
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', payment_error: 'The card has insufficient funds.', transaction_id: intent.id, payment_attempts: 1 });
  });

  it('payment_intent.payment_failed never sets back a record that has moved past it', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: 'pi_paid', payment_attempts: 1 }));
    const intent = paymentIntent(record, { status: 'requires_payment_method', last_payment_error: { code: 'card_declined' } });
    expect(parseBody(await handle()(delivery(stripeEvent('payment_intent.payment_failed', intent))))).toMatchObject({ outcome: 'ignored', reason: 'status' });
    expect(await current(record)).toMatchObject({ billing_status: 'COMPLETED', version: 1 });
  });

  it('a payment intent without our metadata is recorded without effect', async () => {
    const body = stripeEvent('payment_intent.succeeded', { id: 'pi_foreign', object: 'payment_intent', amount: 500, metadata: {} });
    expect(parseBody(await handle()(delivery(body)))).toEqual({ status: 'processed', outcome: 'ignored', reason: 'invalid_data' });
  });

  it('an unknown record is recorded without effect', async () => {
    const ghost = { user_id: 'nobody', billing_date: BILLING_DATE, subscription_id: 'ghost', amount_cents: 100 } as BillingRecord;
    expect(parseBody(await handle()(delivery(stripeEvent('payment_intent.succeeded', paymentIntent(ghost)))))).toMatchObject({ outcome: 'ignored', reason: 'not_found' });
  });
});

describe('stripe-webhook: refunds and disputes', () => {
  it('charge.refunded: COMPLETED → REFUNDED; a partial refund changes nothing', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: 'pi_refund_me', payment_attempts: 1 }));
    const partial = charge(record, 'pi_refund_me', { amount_refunded: 500, refunded: false });
    expect(parseBody(await handle()(delivery(stripeEvent('charge.refunded', partial))))).toMatchObject({ outcome: 'ignored', reason: 'partial_refund' });
    expect((await current(record))!.billing_status).toBe('COMPLETED');

    expect(parseBody(await handle()(delivery(stripeEvent('charge.refunded', charge(record, 'pi_refund_me')))))).toMatchObject({ outcome: 'applied' });
    expect(await current(record)).toMatchObject({ billing_status: 'REFUNDED', updated_event: 'REFUNDED' });
  });

  it('charge.refunded for another payment intent of the period is ignored', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: 'pi_current', payment_attempts: 1 }));
    expect(parseBody(await handle()(delivery(stripeEvent('charge.refunded', charge(record, 'pi_other')))))).toMatchObject({ reason: 'transaction_mismatch' });
  });

  it('charge.dispute.created: found through the PaymentIntent, COMPLETED → FAILED, and never charged again automatically', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: 'pi_disputed', payment_attempts: 1, updated_event: 'RESUMED' }));
    const cardPayments = new InMemoryCardPayments();
    cardPayments.known.set('pi_disputed', { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id });
    const dispute = { id: 'dp_1', object: 'dispute', amount: 1999, charge: 'ch_1', payment_intent: 'pi_disputed', reason: 'fraudulent', status: 'needs_response', metadata: {} };
    const result = await handle({ ...app.depsFor('stripe-webhook'), cardPayments })(delivery(stripeEvent('charge.dispute.created', dispute)));
    expect(parseBody(result)).toEqual({ status: 'processed', outcome: 'applied' });
    const after = (await current(record))!;
    expect(after).toMatchObject({ billing_status: 'FAILED', card_disputed: true, payment_error: 'The cardholder disputed the payment with their bank.' });
    expect(after.updated_event).toBeUndefined();

    app.clock.advance(3 * DAY);
    expect(await runCollectionAttempt(app.deps, { key: record, process: 'RETRY', owner: 'test' })).toMatchObject({ kind: 'held', refusal: { code: 'card_disputed', decided_by: 'card.dispute' } });
  });

  it('charge.dispute.created that cannot be located is recorded and answered 200', async () => {
    const body = stripeEvent('charge.dispute.created', { id: 'dp_2', object: 'dispute', amount: 100, charge: 'ch_2', payment_intent: 'pi_unknown', metadata: {} });
    expect(parseBody(await handle()(delivery(body)))).toEqual({ status: 'processed', outcome: 'ignored', reason: 'record_not_located' });
    expect(await app.deps.stripeEvents.get(body.id)).toMatchObject({ status: 'processed' });
  });
});

describe('stripe-webhook: other event types and bodies', () => {
  it('records an unhandled type as processed and answers 200', async () => {
    const body = stripeEvent('customer.created', { id: 'cus_1', object: 'customer' });
    const result = await handle()(delivery(body, { base64: true }));
    expect(result.statusCode).toBe(200);
    expect(parseBody(result)).toEqual({ status: 'processed', outcome: 'unhandled' });
    expect(await app.deps.stripeEvents.get(body.id)).toMatchObject({ status: 'processed', event_type: 'customer.created' });
  });

  it('an unhandled type costs one write, no claim and no mark; its redelivery one request, answered duplicate', async () => {
    const body = stripeEvent('customer.created', { id: 'cus_9', object: 'customer' });
    let answer: unknown;
    expect(await commandsSent(app.db.client, async () => (answer = parseBody(await handle()(delivery(body)))))).toEqual(['PutItemCommand']);
    expect(answer).toEqual({ status: 'processed', outcome: 'unhandled' });
    expect(await commandsSent(app.db.client, async () => (answer = parseBody(await handle()(delivery(body)))))).toEqual(['PutItemCommand']);
    expect(answer).toEqual({ status: 'duplicate' });
    // While another delivery holds a live claim on it: 409, as for a handled type.
    const claimed = stripeEvent('customer.updated', { id: 'cus_9', object: 'customer' });
    expect((await app.deps.stripeEvents.claim(claimed.id, app.clock.now().getTime(), STRIPE_EVENT_LEASE_MS)).kind).toBe('claimed');
    const busy = await handle()(delivery(claimed));
    expect(busy.statusCode).toBe(409);
    expect((parseBody(busy).error as { code: string }).code).toBe('event_in_progress');
  });

  it('refuses a signed body that is not a Stripe event (400, nothing claimed)', async () => {
    const result = await handle()(delivery({ object: 'event', type: 'charge.refunded' }));
    expect(result.statusCode).toBe(400);
    expect((parseBody(result).error as { code: string }).code).toBe('invalid_event');
    const notJson = await handle()(delivery(undefined, { raw: '{"id":"evt_x",' }));
    expect(notJson.statusCode).toBe(400);
  });

  it('refuses an event id too long for a DynamoDB key with 400, not 500 (found by the fuzz suite)', async () => {
    const result = await handle()(delivery(stripeEvent('charge.refunded', { id: 'ch_1' }, `evt_${'x'.repeat(3000)}`)));
    expect(result.statusCode).toBe(400);
    expect((parseBody(result).error as { code: string }).code).toBe('invalid_event');
  });
});

describe('stripe-webhook: signatures', () => {
  async function expectRefused(event: ReturnType<typeof delivery>, eventId: string) {
    const result = await handle()(event);
    expect(result.statusCode).toBe(400);
    expect((parseBody(result).error as { code: string }).code).toBe('invalid_signature');
    expect(await app.deps.stripeEvents.get(eventId)).toBeUndefined();
  }

  it('refuses another secret, a stale or future timestamp, a forged body and a missing header; nothing is written', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const body = stripeEvent('payment_intent.succeeded', paymentIntent(record));
    await expectRefused(delivery(body, { secret: 'whsec_wrong' }), body.id);
    await expectRefused(delivery(body, { timestamp: wallSeconds() - 301 }), body.id);
    await expectRefused(delivery(body, { timestamp: wallSeconds() + 301 }), body.id);
    const signed = delivery(body);
    await expectRefused({ ...signed, body: signed.body!.replace(String(record.amount_cents), '1') }, body.id);
    await expectRefused(webhookEvent('/webhooks/stripe', JSON.stringify(body), {}), body.id);
    expect(await current(record)).toMatchObject({ billing_status: 'PENDING', version: 1 });
  });

  it('measures the tolerance on the wall clock, not the simulated business clock (DESIGN 9)', async () => {
    app.clock.set('2031-06-01T00:00:00.000Z');
    const body = stripeEvent('customer.updated', { id: 'cus_2', object: 'customer' });
    expect((await handle()(delivery(body))).statusCode).toBe(200);
    const atBusinessTime = stripeEvent('customer.updated', { id: 'cus_3', object: 'customer' });
    await expectRefused(delivery(atBusinessTime, { timestamp: nowSeconds() }), atBusinessTime.id);
  });
});

describe('stripe-webhook: the claim (DESIGN 2.8)', () => {
  it('50 concurrent deliveries of one event apply it exactly once', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const body = stripeEvent('payment_intent.succeeded', paymentIntent(record));
    const results = await Promise.all(Array.from({ length: 50 }, () => handle()(delivery(body))));
    const answers = results.map((r) => (r.statusCode === 200 ? (parseBody(r).status as string) : String(r.statusCode)));
    expect(answers.filter((a) => a === 'processed')).toHaveLength(1);
    expect(answers.every((a) => ['processed', 'duplicate', '409'].includes(a))).toBe(true);
    expect(await current(record)).toMatchObject({ billing_status: 'COMPLETED', version: 2, payment_attempts: 1 });
    expect((await app.deps.billing.history(record.subscription_id)).items).toHaveLength(2);
  });

  it('answers 409 event_in_progress while another delivery holds a live claim, and applies nothing', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const body = stripeEvent('payment_intent.succeeded', paymentIntent(record));
    const other = await app.deps.stripeEvents.claim(body.id, app.clock.now().getTime(), STRIPE_EVENT_LEASE_MS);
    expect(other.kind).toBe('claimed');
    const result = await handle()(delivery(body));
    expect(result.statusCode).toBe(409);
    expect((parseBody(result).error as { code: string }).code).toBe('event_in_progress');
    expect((await current(record))!.billing_status).toBe('PENDING');
  });

  it('takes over a claim whose lease expired; the stale holder can no longer mark it', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const body = stripeEvent('payment_intent.succeeded', paymentIntent(record));
    const stale = await app.deps.stripeEvents.claim(body.id, app.clock.now().getTime(), STRIPE_EVENT_LEASE_MS);
    app.clock.advance(STRIPE_EVENT_LEASE_MS + 1);
    const result = await handle()(delivery(body));
    expect(parseBody(result)).toEqual({ status: 'processed', outcome: 'applied' });
    expect((await current(record))!.billing_status).toBe('COMPLETED');
    expect(stale.kind === 'claimed' && (await app.deps.stripeEvents.markProcessed(body.id, stale.claim_token, body.type, app.clock.now().getTime()))).toBe(false);
  });

  it('a processing failure releases the claim and answers 500, so the redelivery applies it', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const body = stripeEvent('payment_intent.succeeded', paymentIntent(record));
    const deps = app.depsFor('stripe-webhook');
    const failing = Object.assign(Object.create(deps.billing) as BillingStore, {
      commit: async () => {
        throw new Error('disk on fire');
      },
    });
    const failed = await handle({ ...deps, billing: failing })(delivery(body));
    expect(failed.statusCode).toBe(500);
    expect(await app.deps.stripeEvents.get(body.id)).toBeUndefined();

    const redelivered = await handle()(delivery(body));
    expect(parseBody(redelivered)).toEqual({ status: 'processed', outcome: 'applied' });
  });

  it('a failure after losing the lease releases only its own claim, never the new holder’s', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const body = stripeEvent('payment_intent.succeeded', paymentIntent(record));
    let takeover: Awaited<ReturnType<AppDeps['stripeEvents']['claim']>> | undefined;
    const deps = app.depsFor('stripe-webhook');
    const slow = Object.assign(Object.create(deps.billing) as BillingStore, {
      get: async () => {
        // Our lease runs out mid-flight and another delivery claims the event.
        app.clock.advance(STRIPE_EVENT_LEASE_MS + 1);
        takeover = await app.deps.stripeEvents.claim(body.id, app.clock.now().getTime(), STRIPE_EVENT_LEASE_MS);
        throw new Error('timed out reading the record');
      },
    });
    const failed = await handle({ ...deps, billing: slow })(delivery(body));
    expect(failed.statusCode).toBe(500);
    expect(takeover?.kind).toBe('claimed');
    const row = await app.deps.stripeEvents.get(body.id);
    expect(row).toMatchObject({ status: 'processing', claim_token: takeover?.kind === 'claimed' ? takeover.claim_token : 'none' });
  });
});
