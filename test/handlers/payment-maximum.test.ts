import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatInstant } from '../../src/domain/time.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { resolveOptions } from '../../src/local/options.js';
import { ConfigError, DEFAULT_MAX_PAYMENT_CENTS, loadBaseConfig } from '../../src/runtime/config.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext } from '../support/aws-events.js';
import { httpEvent, operatorAuth, responseOf } from '../support/http-events.js';
import { completedCheckoutSession, stripeEventOf } from '../support/stripe-fixtures.js';
import { countWrites, type WriteCounter } from '../support/write-counter.js';
import { webhookEvent } from './webhook-events.js';
import { DAY } from '../support/time.js';

/**
 * One configured payment maximum (MAX_PAYMENT_CENTS, default $10,000) bounds every path that
 * creates a charge: loan payments (400), membership NEW plans (batch item failure) and Stripe
 * checkouts (200 ignored, the reason logged). Above it nothing is written and nothing is charged.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));

let app: TestApp;
let writes: WriteCounter;

beforeAll(async () => {
  app = await createTestApp({ label: 'max-payment', now: NOW });
  writes = countWrites(app.db.client, app.db.tables.locks);
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve' });
  writes.reset();
});

describe('the payment maximum (MAX_PAYMENT_CENTS)', () => {
  it('defaults to 1,000,000 cents ($10,000) in production and locally; a set value must be whole cents, at least 1', () => {
    expect(DEFAULT_MAX_PAYMENT_CENTS).toBe(1_000_000);
    const env = { STAGE: 'dev', DYNAMO_REGION: 'us-east-1' };
    expect(loadBaseConfig(env).MAX_PAYMENT_CENTS).toBe(1_000_000);
    expect(loadBaseConfig({ ...env, MAX_PAYMENT_CENTS: '250000' }).MAX_PAYMENT_CENTS).toBe(250_000);
    expect(resolveOptions({}).maxPaymentCents).toBe(1_000_000);
    expect(resolveOptions({ MAX_PAYMENT_CENTS: '500' }).maxPaymentCents).toBe(500);
    for (const bad of ['0', '10 000', '100.5', '-1', '1e6', '']) {
      expect(() => loadBaseConfig({ ...env, MAX_PAYMENT_CENTS: bad }), bad).toThrow(ConfigError);
      expect(() => resolveOptions({ MAX_PAYMENT_CENTS: bad }), bad).toThrow(/MAX_PAYMENT_CENTS/);
    }
  });

  describe('POST /v1/users/{userId}/loans/{loanId}/payments', () => {
    const post = (amount: unknown, deps = app.depsFor('api')) =>
      createApiHandler(deps)(
        httpEvent('POST', {
          route: '/v1/users/{userId}/loans/{loanId}/payments',
          pathParameters: { userId: `user-${randomUUID().slice(0, 8)}`, loanId: 'loan-1' },
          headers: { 'idempotency-key': randomUUID() },
          body: { amount_cents: amount, payment_method: 'ach' },
          auth: operatorAuth,
        }),
      ).then(responseOf);

    it('accepts exactly the maximum', async () => {
      const res = await post(DEFAULT_MAX_PAYMENT_CENTS);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ loc_amount: DEFAULT_MAX_PAYMENT_CENTS });
    });

    it.each([
      ['one cent above the maximum', DEFAULT_MAX_PAYMENT_CENTS + 1],
      ['2^53-1 cents', Number.MAX_SAFE_INTEGER],
    ])('refuses %s with 400, writes nothing and charges nothing', async (_what, amount) => {
      const charges = app.simulator.charges().length;
      const res = await post(amount);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_body');
      expect(res.body.error.details).toEqual([expect.objectContaining({ path: ['amount_cents'], message: expect.stringContaining('payment maximum') })]);
      expect(writes.data()).toBe(0);
      expect(app.simulator.charges()).toHaveLength(charges);
    });

    it('follows the configured value, not the default', async () => {
      const deps = { ...app.depsFor('api'), settings: { ...app.deps.settings, maxPaymentCents: 5000 } };
      expect((await post(5000, deps)).status).toBe(201);
      writes.reset();
      expect((await post(5001, deps)).status).toBe(400);
      expect(writes.data()).toBe(0);
    });
  });

  describe('memberships NEW', () => {
    const newMember = (userId: string, amount: string) =>
      kinesisRecord({
        event_id: randomUUID(),
        type: 'NEW',
        user_id: userId,
        occurred_at: at(-DAY),
        plan: { amount, term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: at(10 * DAY) },
      });

    it('applies a plan of exactly the maximum', async () => {
      const userId = `user-${randomUUID().slice(0, 8)}`;
      const result = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([newMember(userId, '10000.00')]), lambdaContext());
      expect(result.batchItemFailures).toEqual([]);
      expect((await app.deps.billing.listByUser(userId)).items).toMatchObject([{ amount_cents: 1_000_000 }]);
    });

    it('reports a plan above the maximum as a batch item failure and writes nothing', async () => {
      const userId = `user-${randomUUID().slice(0, 8)}`;
      const record = newMember(userId, '10000.01');
      const result = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([record]), lambdaContext());
      expect(result.batchItemFailures).toEqual([{ itemIdentifier: record.kinesis.sequenceNumber }]);
      expect(writes.data()).toBe(0);
      expect((await app.deps.billing.listByUser(userId)).items).toEqual([]);
    });
  });

  describe('Stripe checkout.session.completed', () => {
    const deliver = (userId: string, amountCents: number) => {
      const payload = JSON.stringify(stripeEventOf('checkout.session.completed', completedCheckoutSession({ userId, amountCents, firstBillingDate: at(10 * DAY) }), Date.now()));
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: TEST_SECRETS.stripeWebhook });
      return createStripeWebhookHandler(app.depsFor('stripe-webhook'))(webhookEvent('/webhooks/stripe', payload, { 'Stripe-Signature': signature }));
    };

    it('opens the chain for exactly the maximum', async () => {
      const userId = `user-${randomUUID().slice(0, 8)}`;
      const result = await deliver(userId, DEFAULT_MAX_PAYMENT_CENTS);
      expect(JSON.parse(result.body!)).toMatchObject({ status: 'processed', outcome: 'applied' });
      expect((await app.deps.billing.listByUser(userId)).items).toMatchObject([{ amount_cents: DEFAULT_MAX_PAYMENT_CENTS, payment_method: 'card' }]);
    });

    it('answers 200 ignored above the maximum (a redelivery could not fix it) and writes no billing record', async () => {
      const userId = `user-${randomUUID().slice(0, 8)}`;
      const result = await deliver(userId, DEFAULT_MAX_PAYMENT_CENTS + 1);
      expect(result.statusCode).toBe(200);
      expect(JSON.parse(result.body!)).toEqual({ status: 'processed', outcome: 'ignored', reason: 'amount_above_maximum' });
      expect((await app.deps.billing.listByUser(userId)).items).toEqual([]);
    });
  });
});
