import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StripePaymentIntentDirectory } from '../../../src/adapters/stripe/payment-directory.js';
import { StripeCardProcessor, StripeCustomerSearchResolver, type StripeCustomerResolver } from '../../../src/adapters/stripe/processor.js';
import { InterruptedError, ProcessorError, ProcessorOutageError, ProcessorThrottledError, TransientError } from '../../../src/domain/errors.js';
import { classifyFailure } from '../../../src/domain/ladder.js';
import type { PaymentRequest } from '../../../src/domain/ports/processor.js';
import { FakeStripe, stripeError } from './fake-stripe.js';

const fake = new FakeStripe();

beforeAll(async () => {
  await fake.start();
});

afterAll(async () => {
  await fake.stop();
});

beforeEach(() => {
  fake.requests.length = 0;
});

const customers: StripeCustomerResolver = {
  cardFor: async (userId) => (userId === 'no-card' ? undefined : { customer: 'cus_123', payment_method: 'pm_card_visa' }),
};

const processor = () => new StripeCardProcessor({ stripe: fake.client(), customers });

function request(overrides: Partial<PaymentRequest> = {}): PaymentRequest {
  return {
    idempotency_key: 'sub-1:1',
    user_id: 'user-1',
    amount_cents: 1999,
    rail: 'card',
    reference: { kind: 'subscription', user_id: 'user-1', billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: 'sub-1' },
    card: { customer: 'cus_123', payment_method: 'pm_card_visa', fingerprint: 'AOB934RVNwzk6xtn' },
    ...overrides,
  };
}

const intent = (status: string, extra: Record<string, unknown> = {}) => ({ id: 'pi_123', object: 'payment_intent', status, amount: 1999, currency: 'usd', ...extra });

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('StripeCardProcessor', () => {
  it('creates and confirms an off-session PaymentIntent with the attempt key as Idempotency-Key', async () => {
    fake.reply = () => ({ status: 200, body: intent('succeeded') });
    const result = await processor().submit(request());
    expect(result).toEqual({ outcome: 'approved', confirmation_id: 'pi_123' });

    expect(fake.requests).toHaveLength(1);
    const sent = fake.requests[0]!;
    expect(sent.method).toBe('POST');
    expect(sent.path).toBe('/v1/payment_intents');
    expect(sent.headers['idempotency-key']).toBe('sub-1:1');
    expect(sent.headers.authorization).toBe('Bearer sk_test_fake');
    expect(Object.fromEntries(sent.form)).toEqual({
      amount: '1999',
      currency: 'usd',
      customer: 'cus_123',
      payment_method: 'pm_card_visa',
      off_session: 'true',
      confirm: 'true',
      'metadata[user_id]': 'user-1',
      'metadata[billing_date]': '2026-12-01T00:00:00.000000000Z',
      'metadata[subscription_id]': 'sub-1',
    });
  });

  it('sends the same key again for a repeated attempt number, so Stripe answers from its record', async () => {
    fake.reply = () => ({ status: 200, body: intent('succeeded') });
    await processor().submit(request());
    await processor().submit(request());
    expect(fake.requests.map((r) => r.headers['idempotency-key'])).toEqual(['sub-1:1', 'sub-1:1']);
  });

  it('a card decline is a decline with a curated message and the PaymentIntent as confirmation', async () => {
    fake.reply = () =>
      stripeError(402, {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'insufficient_funds',
        message: 'Your card has insufficient funds.',
        payment_intent: intent('requires_payment_method', { id: 'pi_declined' }),
      });
    expect(await processor().submit(request())).toEqual({
      outcome: 'declined',
      confirmation_id: 'pi_declined',
      decline_code: 'insufficient_funds',
      message: 'The card has insufficient funds.',
    });
  });

  it("reads Stripe's real decline object: codes and the card's network, from last_payment_error and from the card error", async () => {
    const real = JSON.parse(readFileSync(new URL('../../fixtures/stripe/payment-intent-last-payment-error.json', import.meta.url), 'utf8')) as Record<string, any>;
    // Only the status is replaced: `requires_source` is the old API's name of `requires_payment_method`.
    fake.reply = () => ({ status: 200, body: { ...real, status: 'requires_payment_method' } });
    expect(await processor().submit(request())).toEqual({
      outcome: 'declined',
      confirmation_id: 'pi_123',
      decline_code: 'generic_decline',
      card_network: 'visa',
      message: 'The card was declined.',
    });
    // The same decline as the 402 a confirm answers, with the advice and network codes Stripe adds today.
    fake.reply = () =>
      stripeError(402, { ...real.last_payment_error, advice_code: 'do_not_try_again', network_decline_code: '41', network_advice_code: '03', payment_intent: { ...real, status: 'requires_payment_method' } });
    expect(await processor().submit(request())).toEqual({
      outcome: 'declined',
      confirmation_id: 'pi_123',
      decline_code: 'generic_decline',
      advice_code: 'do_not_try_again',
      network_advice_code: '03',
      network_decline_code: '41',
      card_network: 'visa',
      message: 'The card was declined.',
    });
  });

  it('an off-session payment that needs authentication is declined', async () => {
    fake.reply = () => stripeError(402, { type: 'card_error', code: 'authentication_required', message: 'This payment requires authentication.' });
    expect(await processor().submit(request())).toMatchObject({ outcome: 'declined', decline_code: 'authentication_required', message: 'The card requires the customer to authenticate the payment.' });
  });

  it('a PaymentIntent left in requires_payment_method is a decline', async () => {
    fake.reply = () => ({ status: 200, body: intent('requires_payment_method', { last_payment_error: { type: 'card_error', code: 'expired_card' } }) });
    expect(await processor().submit(request())).toEqual({ outcome: 'declined', confirmation_id: 'pi_123', decline_code: 'expired_card', message: 'The card has expired.' });
  });

  it('a user without a saved card is declined without calling Stripe', async () => {
    expect(await processor().submit(request({ user_id: 'no-card', card: undefined }))).toMatchObject({ outcome: 'declined', decline_code: 'no_payment_method' });
    expect(fake.requests).toHaveLength(0);
  });

  it.each([
    ['a 500', stripeError(500, { type: 'api_error', message: 'boom' })],
    ['a 503', stripeError(503, { type: 'api_error', message: 'unavailable' })],
    ['a key still in flight', stripeError(409, { type: 'invalid_request_error', code: 'idempotency_key_in_use', message: 'in use' })],
  ])('%s is transient', async (_label, reply) => {
    fake.reply = () => reply;
    const error = await rejection(processor().submit(request()));
    expect(error).toBeInstanceOf(TransientError);
  });

  it("maps Stripe's 429 rate_limit to ProcessorThrottledError of the stripe processor, never a counted failure", async () => {
    fake.reply = () => stripeError(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' });
    const error = await rejection(processor().submit(request()));
    expect(error).toBeInstanceOf(ProcessorThrottledError);
    expect(error).toMatchObject({ processor: 'stripe' });
    expect(classifyFailure(error)).toBe('throttled');
    // A 503 stays a plain transient error.
    fake.reply = () => stripeError(503, { type: 'api_error', message: 'unavailable' });
    expect(await rejection(processor().submit(request()))).not.toBeInstanceOf(ProcessorThrottledError);
  });

  it('a connection failure is transient', async () => {
    const closed = new FakeStripe();
    await closed.start();
    const port = closed.port;
    await closed.stop();
    const error = await rejection(new StripeCardProcessor({ stripe: fake.client(port), customers }).submit(request()));
    expect(error).toBeInstanceOf(TransientError);
  });

  it('a still-processing PaymentIntent is transient (its webhook settles it)', async () => {
    fake.reply = () => ({ status: 200, body: intent('processing') });
    expect(await rejection(processor().submit(request()))).toBeInstanceOf(TransientError);
  });

  it.each([
    ['an invalid request', stripeError(400, { type: 'invalid_request_error', code: 'parameter_invalid_integer', message: 'bad amount' }), 'processor_rejected'],
    ['a reused key with other parameters', stripeError(400, { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters' }), 'idempotency_conflict'],
  ])('%s is a processor error with a curated message', async (_label, reply, code) => {
    fake.reply = () => reply;
    const error = await rejection(processor().submit(request()));
    expect(error).toBeInstanceOf(ProcessorError);
    expect(error).toMatchObject({ code, message: 'The payment processor rejected the request.' });
  });

  it.each([
    ['a revoked or wrong API key (401)', stripeError(401, { type: 'invalid_request_error', message: 'Invalid API Key provided' })],
    ['an expired API key', stripeError(401, { type: 'invalid_request_error', code: 'api_key_expired', message: 'Expired API Key provided' })],
    ['a restricted key without the permission (403)', stripeError(403, { type: 'invalid_request_error', message: 'The provided key does not have the required permissions' })],
  ])('%s is our outage (processor_auth on the stripe circuit), never a counted processor error', async (_label, reply) => {
    fake.reply = () => reply;
    const error = await rejection(processor().submit(request()));
    expect(error).toBeInstanceOf(ProcessorOutageError);
    expect(error).not.toBeInstanceOf(ProcessorError);
    expect(error).toMatchObject({ service: 'stripe', reason: 'processor_auth', code: 'processor_outage' });
  });

  it('refuses a rail it does not serve, and an interrupted invocation, without calling Stripe', async () => {
    expect(await rejection(processor().submit(request({ rail: 'ach' })))).toBeInstanceOf(ProcessorError);
    const aborted = AbortSignal.abort();
    expect(await rejection(processor().submit(request(), aborted))).toBeInstanceOf(InterruptedError);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('StripeCardProcessor with the real resolver: Stripe requests per payment (DESIGN 3.2)', () => {
  const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../fixtures/stripe/${name}`, import.meta.url), 'utf8'));
  const fixtures = { customer: fixture('customer.json'), payment_method: fixture('payment-method.json') };
  const real = () => new StripeCardProcessor({ stripe: fake.client(), customers: new StripeCustomerSearchResolver(fake.client()) });
  /** Stripe's example customer, with our user id and its default card expanded (Stripe's example card). */
  const customer = { ...fixtures.customer, id: 'cus_77', metadata: { user_id: 'user-1' }, invoice_settings: { ...fixtures.customer.invoice_settings, default_payment_method: { ...fixtures.payment_method, id: 'pm_77', customer: 'cus_77' } } };
  const route = (r: { method: string; path: string }) => {
    if (r.method === 'POST' && r.path === '/v1/payment_intents') return { status: 200, body: intent('succeeded') };
    if (r.path === '/v1/customers/search') return { status: 200, body: { object: 'search_result', url: '/v1/customers/search', has_more: false, data: [customer] } };
    if (r.path === '/v1/customers/cus_77') return { status: 200, body: customer };
    return { status: 404, body: { error: { type: 'invalid_request_error', message: 'no such route' } } };
  };

  it('a stored card is charged in one request: the PaymentIntent, never a search', async () => {
    fake.reply = route;
    expect(await real().submit(request({ card: { customer: 'cus_77', payment_method: 'pm_77', fingerprint: 'AOB934RVNwzk6xtn' } }))).toEqual({ outcome: 'approved', confirmation_id: 'pi_123' });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/payment_intents']);
  });

  it('a member whose card is not stored is resolved once (search, default card expanded) and the card handed back to store', async () => {
    fake.reply = route;
    const result = await real().submit(request({ card: undefined }));
    expect(result).toEqual({ outcome: 'approved', confirmation_id: 'pi_123', resolved_card: { customer: 'cus_77', payment_method: 'pm_77', fingerprint: 'AOB934RVNwzk6xtn', brand: 'visa' } });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/customers/search', 'POST /v1/payment_intents']);
    expect([...fake.requests[0]!.query].filter(([k]) => k.startsWith('expand')).map(([, v]) => v)).toEqual(['data.invoice_settings.default_payment_method']);
    expect(fake.requests[1]!.form.get('payment_method')).toBe('pm_77');
  });

  it('a known customer without a stored card is read with customers.retrieve, not searched', async () => {
    fake.reply = route;
    const result = await real().submit(request({ card: { customer: 'cus_77' } }));
    expect(result).toMatchObject({ outcome: 'approved', resolved_card: { customer: 'cus_77', payment_method: 'pm_77', fingerprint: 'AOB934RVNwzk6xtn' } });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/customers/cus_77', 'POST /v1/payment_intents']);
    expect([...fake.requests[0]!.query].filter(([k]) => k.startsWith('expand')).map(([, v]) => v)).toEqual(['invoice_settings.default_payment_method']);
  });
});

describe('StripeCardProcessor.findRefund', () => {
  const refundFixture = JSON.parse(readFileSync(new URL('../../fixtures/stripe/refund.json', import.meta.url), 'utf8')) as Record<string, unknown>;

  it("reads Stripe's refund object: the PaymentIntent it refunded, the amount and the status", async () => {
    fake.reply = () => ({ status: 200, body: { ...refundFixture, payment_intent: 'pi_123', amount: 1500 } });
    expect(await processor().findRefund({ refund_id: refundFixture.id as string, rail: 'card' })).toEqual({
      refund_id: refundFixture.id,
      transaction_id: 'pi_123',
      amount_cents: 1500,
      status: 'succeeded',
    });
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: `/v1/refunds/${refundFixture.id as string}` });
  });

  it('a refund of a bare charge names the charge, which matches none of our PaymentIntents', async () => {
    fake.reply = () => ({ status: 200, body: refundFixture });
    expect(await processor().findRefund({ refund_id: 're_1', rail: 'card' })).toMatchObject({ transaction_id: refundFixture.charge });
  });

  it("Stripe's resource_missing is an unknown refund; an outage stays transient", async () => {
    fake.reply = () => stripeError(404, { type: 'invalid_request_error', code: 'resource_missing', message: 'No such refund' });
    expect(await processor().findRefund({ refund_id: 're_missing', rail: 'card' })).toBeUndefined();
    fake.reply = () => stripeError(500, { type: 'api_error', message: 'boom' });
    expect(await rejection(processor().findRefund({ refund_id: 're_1', rail: 'card' }))).toBeInstanceOf(TransientError);
  });
});

describe('StripeCustomerSearchResolver', () => {
  const resolver = () => new StripeCustomerSearchResolver(fake.client());
  const searchResult = (data: unknown[]) => ({ status: 200, body: { object: 'search_result', url: '/v1/customers/search', has_more: false, data } });

  it("finds the customer by metadata['user_id'] and charges its default card", async () => {
    fake.reply = () => searchResult([{ id: 'cus_9', object: 'customer', invoice_settings: { default_payment_method: 'pm_9' } }]);
    expect(await resolver().cardFor("o'brien")).toEqual({ customer: 'cus_9', payment_method: 'pm_9' });
    const sent = fake.requests[0]!;
    expect(sent.method).toBe('GET');
    expect(sent.path).toBe('/v1/customers/search');
    expect(sent.query.get('query')).toBe("metadata['user_id']:'o\\'brien'");
  });

  it('no customer, or one without a default card, means no card on file', async () => {
    fake.reply = () => searchResult([]);
    expect(await resolver().cardFor('u')).toBeUndefined();
    fake.reply = () => searchResult([{ id: 'cus_9', object: 'customer', invoice_settings: { default_payment_method: null } }]);
    expect(await resolver().cardFor('u')).toEqual({ customer: 'cus_9' });
  });

  it('two customers for one user is an error, never a guess', async () => {
    fake.reply = () => searchResult([{ id: 'cus_1', object: 'customer' }, { id: 'cus_2', object: 'customer' }]);
    expect(await rejection(resolver().cardFor('u'))).toMatchObject({ code: 'ambiguous_customer' });
  });
});

describe('StripePaymentIntentDirectory', () => {
  const directory = () => new StripePaymentIntentDirectory(fake.client());

  it("reads the record's key back from the PaymentIntent's metadata", async () => {
    fake.reply = () => ({
      status: 200,
      body: intent('succeeded', { metadata: { user_id: 'user-1', billing_date: '2026-12-01T00:00:00Z', subscription_id: 'sub-1' } }),
    });
    expect(await directory().findReference('pi_123')).toEqual({ user_id: 'user-1', billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: 'sub-1' });
    expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/v1/payment_intents/pi_123' });
  });

  it('an unknown PaymentIntent or one without our metadata is not located', async () => {
    fake.reply = () => stripeError(404, { type: 'invalid_request_error', code: 'resource_missing', message: 'No such payment_intent' });
    expect(await directory().findReference('pi_missing')).toBeUndefined();
    fake.reply = () => ({ status: 200, body: intent('succeeded', { metadata: {} }) });
    expect(await directory().findReference('pi_foreign')).toBeUndefined();
  });

  it('an outage is transient (the webhook answers non-2xx and Stripe redelivers)', async () => {
    fake.reply = () => stripeError(502, { type: 'api_error', message: 'bad gateway' });
    expect(await rejection(directory().findReference('pi_123'))).toBeInstanceOf(TransientError);
  });
});
