import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StripePaymentIntentDirectory } from '../../src/adapters/stripe/payment-directory.js';
import { StripeCardProcessor, StripeCustomerSearchResolver } from '../../src/adapters/stripe/processor.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { completedCheckoutSession, stripeEventOf } from '../support/stripe-fixtures.js';
import { stripeDelivery } from '../support/webhooks.js';
import { parseBody } from './webhook-events.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { FakeStripe, type RecordedRequest } from '../adapters/stripe/fake-stripe.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, newUserId } from './api-fixtures.js';

/**
 * The card instrument (DESIGN 3.2): the collection path charges the Stripe card stored on the user's
 * instruments item with one Stripe request and never a search; a member whose card is not stored yet
 * is resolved once and stored with the attempt. The real Stripe SDK against a local fake server,
 * counting requests; DynamoDB Local for the items.
 */

const fake = new FakeStripe();
let app: TestApp;
const owner = 'card-instrument';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/stripe/${name}`, import.meta.url), 'utf8'));
/** Stripe's example customer and card, with the user's id in metadata and the card as its default. */
function customerOf(userId: string, customerId: string, card = { id: 'pm_first', fingerprint: 'fp_first' }) {
  const method = fixture('payment-method.json');
  return {
    ...fixture('customer.json'),
    id: customerId,
    metadata: { user_id: userId },
    invoice_settings: { ...fixture('customer.json').invoice_settings, default_payment_method: { ...method, id: card.id, customer: customerId, card: { ...method.card, fingerprint: card.fingerprint } } },
  };
}

const customers = new Map<string, ReturnType<typeof customerOf>>();
let intents = 0;
function route(r: RecordedRequest) {
  if (r.method === 'POST' && r.path === '/v1/payment_intents') {
    intents += 1;
    return { status: 200, body: { id: `pi_${intents}`, object: 'payment_intent', status: 'succeeded', amount: Number(r.form.get('amount')), currency: 'usd' } };
  }
  if (r.path === '/v1/customers/search') {
    const userId = /:'(.*)'$/.exec(r.query.get('query') ?? '')?.[1];
    const data = [...customers.values()].filter((c) => c.metadata.user_id === userId);
    return { status: 200, body: { object: 'search_result', url: '/v1/customers/search', has_more: false, data } };
  }
  const id = /^\/v1\/customers\/([^/]+)$/.exec(r.path)?.[1];
  if (r.method === 'GET' && id && customers.has(id)) return { status: 200, body: customers.get(id) };
  return { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such resource' } } };
}

beforeAll(async () => {
  await fake.start();
  fake.reply = route;
  const stripe = fake.client();
  app = await createTestApp({ label: 'card-instrument', processor: new StripeCardProcessor({ stripe, customers: new StripeCustomerSearchResolver(stripe) }) });
});

afterAll(async () => {
  await fake.stop();
});

beforeEach(() => {
  fake.requests.length = 0;
});

const stripeCalls = () => fake.requests.map((r) => `${r.method} ${r.path}`);
const current = async (record: BillingRecord) => (await app.deps.billing.get(record))!;

describe('the Stripe card on the collection path', () => {
  it('a member whose card is not stored is resolved once and stored; the next period is one PaymentIntent, no search', async () => {
    const userId = newUserId();
    customers.set(`cus_${userId}`, customerOf(userId, `cus_${userId}`));
    const [first] = await seedRecords(app, billingRecord(app, { user_id: userId, payment_method: 'card' }));

    expect(await runCollectionAttempt(app.deps, { key: first, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'collected' });
    expect(stripeCalls()).toEqual(['GET /v1/customers/search', 'POST /v1/payment_intents']);
    expect((await app.deps.instruments.get(userId)).stripe_card).toEqual({ customer: `cus_${userId}`, payment_method: 'pm_first', fingerprint: 'fp_first', brand: 'visa' });

    const next = (await app.deps.billing.listByUser(userId)).items.find((r) => r.billing_status === 'PENDING')!;
    app.clock.set(next.billing_date);
    fake.requests.length = 0;
    expect(await runCollectionAttempt(app.deps, { key: next, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'collected' });
    expect(stripeCalls()).toEqual(['POST /v1/payment_intents']);
    expect(fake.requests[0]!.form.get('payment_method')).toBe('pm_first');
    expect(fake.requests[0]!.form.get('customer')).toBe(`cus_${userId}`);
    expect((await current(next)).billing_status).toBe('COMPLETED');
  });
});

describe('the Stripe card kept current from webhooks', () => {
  async function deliver(type: string, object: Record<string, unknown>, previous?: Record<string, unknown>) {
    const body = { ...stripeEventOf(type, object, app.clock.now().getTime()), data: { object, ...(previous ? { previous_attributes: previous } : {}) } };
    const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook', { cardPayments: new StripePaymentIntentDirectory(fake.client()) }));
    const result = await handler(stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
    return { status: result.statusCode, body: parseBody(result) };
  }
  const paymentMethod = (id: string, customer: string | null) => ({ ...fixture('payment-method.json'), id, customer });

  /** A card member with a stored card, as a first resolution leaves it. */
  async function memberWithCard(): Promise<{ userId: string; customerId: string; period: BillingRecord }> {
    const userId = newUserId();
    const customerId = `cus_${userId.replace(/-/g, "")}`;
    customers.set(customerId, customerOf(userId, customerId));
    const [period] = await seedRecords(app, billingRecord(app, { user_id: userId, payment_method: 'card' }));
    await app.deps.instruments.write({ user_id: userId, stripe_card: { card: { customer: customerId, payment_method: 'pm_first', fingerprint: 'fp_first' }, replace: false } });
    fake.requests.length = 0;
    return { userId, customerId, period };
  }

  it('payment_method.attached of a new default card replaces the stored one; the next charge uses it in one request', async () => {
    const { userId, customerId, period } = await memberWithCard();
    customers.set(customerId, customerOf(userId, customerId, { id: 'pm_second', fingerprint: 'fp_second' }));
    expect(await deliver('payment_method.attached', paymentMethod('pm_second', customerId))).toEqual({ status: 200, body: { status: 'processed', outcome: 'applied' } });
    const stored = await app.deps.instruments.get(userId);
    expect(stored.stripe_card).toMatchObject({ customer: customerId, payment_method: 'pm_second', fingerprint: 'fp_second' });
    expect(stored.instruments['card:fp_second']).toMatchObject({ rail: 'card', fingerprint: 'fp_second' });

    fake.requests.length = 0;
    expect(await runCollectionAttempt(app.deps, { key: period, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'collected' });
    expect(stripeCalls()).toEqual(['POST /v1/payment_intents']);
    expect(fake.requests[0]!.form.get('payment_method')).toBe('pm_second');
  });

  it('payment_method.detached (customer in previous_attributes) leaves the customer without a card: the next charge reads it by id, never a search', async () => {
    const { userId, customerId, period } = await memberWithCard();
    const bare = customerOf(userId, customerId);
    customers.set(customerId, { ...bare, invoice_settings: { ...bare.invoice_settings, default_payment_method: null as never } });
    expect((await deliver('payment_method.detached', paymentMethod('pm_first', null), { customer: customerId })).body).toMatchObject({ outcome: 'applied' });
    expect((await app.deps.instruments.get(userId)).stripe_card).toEqual({ customer: customerId });

    // The member adds a card in Stripe; the attempt finds it by customer id and stores it.
    customers.set(customerId, customerOf(userId, customerId, { id: 'pm_third', fingerprint: 'fp_third' }));
    fake.requests.length = 0;
    expect(await runCollectionAttempt(app.deps, { key: period, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'collected' });
    expect(stripeCalls()).toEqual([`GET /v1/customers/${customerId}`, 'POST /v1/payment_intents']);
    expect((await app.deps.instruments.get(userId)).stripe_card).toMatchObject({ payment_method: 'pm_third', fingerprint: 'fp_third' });
  });

  it('customer.updated reads the customer again and stores its default card', async () => {
    const { userId, customerId } = await memberWithCard();
    customers.set(customerId, customerOf(userId, customerId, { id: 'pm_fourth', fingerprint: 'fp_fourth' }));
    expect((await deliver('customer.updated', { ...fixture('customer.json'), id: customerId })).body).toMatchObject({ outcome: 'applied' });
    expect((await app.deps.instruments.get(userId)).stripe_card).toMatchObject({ payment_method: 'pm_fourth', fingerprint: 'fp_fourth' });
    expect(stripeCalls()).toEqual([`GET /v1/customers/${customerId}`]);
  });

  it('checkout.session.completed stores the new member\'s card with the chain', async () => {
    const userId = newUserId();
    const customerId = `cus_${userId.replace(/-/g, "")}`;
    customers.set(customerId, customerOf(userId, customerId, { id: 'pm_new', fingerprint: 'fp_new' }));
    const session = { ...completedCheckoutSession({ userId, amountCents: 1999, firstBillingDate: '2026-12-20T00:00:00Z' }), customer: customerId };
    expect((await deliver('checkout.session.completed', session)).body).toMatchObject({ outcome: 'applied' });
    expect((await app.deps.instruments.get(userId)).stripe_card).toMatchObject({ customer: customerId, payment_method: 'pm_new', fingerprint: 'fp_new' });
  });

  it('a customer Stripe does not have, a card with no customer, and data that is not a PaymentMethod store nothing', async () => {
    expect((await deliver('customer.updated', { ...fixture('customer.json'), id: 'cus_unknown' })).body).toMatchObject({ outcome: 'ignored', reason: 'customer_not_found' });
    expect((await deliver('payment_method.updated', paymentMethod('pm_loose', null))).body).toMatchObject({ outcome: 'ignored', reason: 'no_customer' });
    expect((await deliver('payment_method.attached', { object: 'payment_method', id: 42 })).body).toMatchObject({ outcome: 'ignored', reason: 'invalid_data' });
  });
});

describe('issue 31 case 6: a card declined as lost is held across periods', () => {
  it('regression: the next period of a lost card is not charged by the schedule, nor by a person; a new card is', async () => {
    const userId = newUserId();
    const customerId = `cus_${userId.replace(/-/g, '')}`;
    customers.set(customerId, customerOf(userId, customerId, { id: 'pm_lost', fingerprint: 'fp_lost' }));
    const [first] = await seedRecords(app, billingRecord(app, { user_id: userId, payment_method: 'card' }));
    const lost = { status: 402, body: { error: { type: 'card_error', code: 'card_declined', decline_code: 'lost_card', message: 'Your card was declined.' } } };
    fake.reply = (r) => (r.method === 'POST' && r.path === '/v1/payment_intents' && r.form.get('payment_method') === 'pm_lost' ? lost : route(r));
    try {
      expect(await runCollectionAttempt(app.deps, { key: first, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'declined', record: { decline_class: 'do_not_retry' } });
      const held = await app.deps.instruments.get(userId);
      expect(held.holds['card:fp_lost']?.payment_method_required).toMatchObject({ rule: 'card.do_not_retry', set_by: { kind: 'decline', decline_code: 'lost_card' } });

      const next = (await app.deps.billing.listByUser(userId)).items.find((r) => r.billing_status === 'PENDING')!;
      app.clock.set(next.billing_date);
      fake.requests.length = 0;
      expect(await runCollectionAttempt(app.deps, { key: next, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'held', refusal: { code: 'payment_method_required', decided_by: 'card.do_not_retry' } });
      const api = callerFor(app);
      const pay = await api('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: next.subscription_id }, headers: { 'Idempotency-Key': `pay-${userId}` } });
      expect([pay.status, pay.body.error?.code]).toEqual([409, 'payment_method_required']);
      const retry = await api('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: next.subscription_id }, body: { reason: 'asked' } });
      expect([retry.status, retry.body.error?.code]).toEqual([409, 'payment_method_required']);
      expect(stripeCalls()).toEqual([]);

      // Another card lifts it: stored by the webhook, charged by the next run.
      customers.set(customerId, customerOf(userId, customerId, { id: 'pm_new', fingerprint: 'fp_new' }));
      const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook', { cardPayments: new StripePaymentIntentDirectory(fake.client()) }));
      const object = { ...fixture('payment-method.json'), id: 'pm_new', customer: customerId };
      await handler(stripeDelivery(stripeEventOf('payment_method.attached', object, app.clock.now().getTime()), { signedAtMs: app.wallClock.now().getTime() }));
      expect(await runCollectionAttempt(app.deps, { key: (await app.deps.billing.get(next))!, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'collected' });
      expect(fake.requests.filter((r) => r.path === '/v1/payment_intents').map((r) => r.form.get('payment_method'))).toEqual(['pm_new']);
    } finally {
      fake.reply = route;
    }
  });

  it('regression: a card already stored (no resolution) declined as lost is held too, and its decline counted for the ceilings', async () => {
    const userId = newUserId();
    const customerId = `cus_${userId.replace(/-/g, '')}`;
    customers.set(customerId, customerOf(userId, customerId, { id: 'pm_stored', fingerprint: 'fp_stored' }));
    await app.deps.instruments.write({ user_id: userId, stripe_card: { card: { customer: customerId, payment_method: 'pm_stored', fingerprint: 'fp_stored', brand: 'visa' }, replace: true } });
    const [first] = await seedRecords(app, billingRecord(app, { user_id: userId, payment_method: 'card' }));
    const lost = { status: 402, body: { error: { type: 'card_error', code: 'card_declined', decline_code: 'lost_card', message: 'Your card was declined.' } } };
    fake.reply = (r) => (r.method === 'POST' && r.path === '/v1/payment_intents' && r.form.get('payment_method') === 'pm_stored' ? lost : route(r));
    try {
      expect(await runCollectionAttempt(app.deps, { key: first, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'declined', record: { decline_class: 'do_not_retry' } });
      const item = await app.deps.instruments.get(userId);
      expect(item.holds['card:fp_stored']?.payment_method_required).toMatchObject({ rule: 'card.do_not_retry', set_by: { kind: 'decline', decline_code: 'lost_card' } });
      expect(item.presentments['card:fp_stored']).toMatchObject([{ initiated: 'merchant', decline_class: 'do_not_retry' }]);
    } finally {
      fake.reply = route;
    }
  });
});
