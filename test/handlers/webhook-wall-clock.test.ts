import Stripe from 'stripe';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { AchSettlementPump } from '../../src/local/ach-pump.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { completedCheckoutSession, stripeEventOf } from '../support/stripe-fixtures.js';
import { DAY } from '../support/time.js';
import { parseBody, webhookEvent } from './webhook-events.js';

/**
 * DESIGN 9: business time is the simulated clock, signature tolerances are wall-clock time. Real
 * senders (Stripe, `stripe listen`, a bank's ACH sender, curl with `date +%s`) sign with the real
 * clock; the handlers must accept them whatever the simulated now is, and still refuse a
 * wall-clock signature older than five minutes. The wall clock here is the machine's own, as in
 * production and in the local runtime; the business clock is put a year ahead of it.
 */

const wallSeconds = () => Math.floor(Date.now() / 1000);

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'wall-clock' });
});

beforeEach(() => {
  app.clock.set(new Date(Date.now() + 365 * DAY));
  app.balanceEventsQueue.clear();
});

/** An ACH period whose debit the processor accepted (ACHSENT with its confirmation id). */
function achSent(overrides: Partial<BillingRecord> = {}): BillingRecord {
  return makeRecord({ billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: `conf-${Date.now()}-${Math.random()}`, ...overrides });
}

function achSettled(record: BillingRecord) {
  return JSON.stringify({
    event_id: `ach-evt-${record.subscription_id}`,
    type: 'settled',
    confirmation_id: record.transaction_id,
    amount_cents: record.amount_cents,
    occurred_at: formatInstant(app.clock.now()),
    reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
  });
}

function balanceBody(userId: string, eventId: string) {
  return JSON.stringify({
    event_id: eventId,
    user_id: userId,
    institution_id: 'ins_1',
    available_balance_cents: 120_000,
    current_balance_cents: 125_000,
    occurred_at: formatInstant(app.clock.now()),
  });
}

describe('webhook signatures are checked against the wall clock, not the simulated one (DESIGN 9)', () => {
  it('Stripe: a checkout.session.completed signed by the SDK at wall time is applied with the business clock a year ahead', async () => {
    const userId = `user-wall-${wallSeconds()}-stripe`;
    const firstBillingDate = formatInstant(new Date(app.clock.now().getTime() + 24 * 3600 * 1000));
    const event = stripeEventOf('checkout.session.completed', completedCheckoutSession({ userId, amountCents: 1999, firstBillingDate }), Date.now());
    const payload = JSON.stringify(event);
    // No timestamp given: the SDK signs with the machine's clock, as Stripe and `stripe listen` do.
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: TEST_SECRETS.stripeWebhook });
    const result = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(webhookEvent('/webhooks/stripe', payload, { 'Stripe-Signature': signature }));
    expect(result.statusCode, result.body).toBe(200);
    expect(parseBody(result)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect((await app.deps.billing.listByUser(userId)).items).toMatchObject([{ user_id: userId, amount_cents: 1999, billing_status: 'PENDING', payment_method: 'card' }]);
  });

  it('Stripe: a wall-clock signature older than five minutes, or one made at the simulated time, is refused with 400 and nothing is written', async () => {
    const userId = `user-wall-${wallSeconds()}-stripe-stale`;
    const firstBillingDate = formatInstant(new Date(app.clock.now().getTime() + 24 * 3600 * 1000));
    const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
    for (const timestamp of [wallSeconds() - 301, Math.floor(app.clock.now().getTime() / 1000)]) {
      const event = stripeEventOf('checkout.session.completed', completedCheckoutSession({ userId, amountCents: 1999, firstBillingDate }), Date.now());
      const payload = JSON.stringify(event);
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: TEST_SECRETS.stripeWebhook, timestamp });
      const result = await handler(webhookEvent('/webhooks/stripe', payload, { 'Stripe-Signature': signature }));
      expect(result.statusCode).toBe(400);
      expect(parseBody(result)).toMatchObject({ error: { code: 'invalid_signature' } });
      expect(await app.deps.stripeEvents.get(event.id as string)).toBeUndefined();
    }
    expect((await app.deps.billing.listByUser(userId)).items).toEqual([]);
  });

  it('ACH: a settlement signed at wall time (`date +%s`) is applied with the business clock a year ahead; a stale one is refused', async () => {
    const handler = createAchHandler(app.depsFor('ach-handler'));
    const [stale] = await seedRecords(app, achSent());
    const staleRaw = achSettled(stale);
    const refused = await handler(webhookEvent('/webhooks/ach', staleRaw, { 'X-ACH-Signature': signPayload(staleRaw, TEST_SECRETS.achWebhook, wallSeconds() - 301) }));
    expect(refused.statusCode).toBe(400);
    expect(parseBody(refused)).toMatchObject({ error: { code: 'invalid_signature' } });
    expect(await app.deps.billing.get(stale)).toMatchObject({ billing_status: 'ACHSENT', version: stale.version });

    const [record] = await seedRecords(app, achSent());
    const raw = achSettled(record);
    const accepted = await handler(webhookEvent('/webhooks/ach', raw, { 'X-ACH-Signature': signPayload(raw, TEST_SECRETS.achWebhook, wallSeconds()) }));
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(parseBody(accepted)).toMatchObject({ status: 'applied' });
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED' });
  });

  it('balance: an event signed at wall time is enqueued with the business clock a year ahead; a stale one is refused and nothing is enqueued', async () => {
    const api = createBalanceWebhookHandler(app.depsFor('balance-webhook'));
    const staleRaw = balanceBody('user-wall-balance', 'bal-stale');
    const refused = await api(webhookEvent('/webhooks/balance', staleRaw, { 'X-Balance-Signature': signPayload(staleRaw, TEST_SECRETS.balanceWebhook, wallSeconds() - 301) }));
    expect(refused.statusCode).toBe(400);
    expect(app.balanceEventsQueue.sent).toEqual([]);

    const raw = balanceBody('user-wall-balance', 'bal-fresh');
    const accepted = await api(webhookEvent('/webhooks/balance', raw, { 'X-Balance-Signature': signPayload(raw, TEST_SECRETS.balanceWebhook, wallSeconds()) }));
    expect(accepted.statusCode, accepted.body).toBe(202);
    expect(app.balanceEventsQueue.sent.map((m) => m.id)).toEqual(['bal-fresh']);
  });

  it('the local ACH pump signs with the wall clock: its settlement is accepted with the simulated clock a year ahead', async () => {
    const record = makeRecord({ billing_status: 'ACHSENT', payment_attempts: 1 });
    const submitted = await app.simulator.submit({
      idempotency_key: `pump-${record.subscription_id}`,
      user_id: record.user_id,
      amount_cents: record.amount_cents,
      rail: 'ach',
      reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    });
    const [seeded] = await seedRecords(app, { ...record, transaction_id: submitted.confirmation_id });
    const ach = createAchHandler(app.depsFor('ach-handler'));
    const pump = new AchSettlementPump({
      clock: app.clock,
      wallClock: app.wallClock,
      simulator: app.simulator,
      secret: TEST_SECRETS.achWebhook,
      logger: app.deps.logger,
      dispatch: async (request) => {
        const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
        const answer = await ach(webhookEvent(request.url, request.body, headers));
        return { status: answer.statusCode ?? 500, headers: {}, body: answer.body ?? '' };
      },
    });
    expect(await pump.pump()).toEqual({ settled: 1, returned: 0, failed: 0 });
    expect(await app.deps.billing.get(seeded)).toMatchObject({ billing_status: 'COMPLETED' });
  });
});
