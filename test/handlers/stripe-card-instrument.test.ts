import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StripeCardProcessor, StripeCustomerSearchResolver } from '../../src/adapters/stripe/processor.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { FakeStripe, type RecordedRequest } from '../adapters/stripe/fake-stripe.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, newUserId } from './api-fixtures.js';

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
