import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BillingRecord } from '../../src/domain/records.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { cardPeriod } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { disputeOf, stripeEventOf } from '../support/stripe-fixtures.js';
import { stripeDelivery } from '../support/webhooks.js';
import { callerFor, type Caller } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';

/**
 * charge.dispute.closed and charge.dispute.funds_reinstated (DESIGN 6, 3.2): a dispute won lifts
 * the dispute hold and books the money back; a lost one leaves the hold. Stripe's example dispute,
 * through the real stripe-webhook and api handlers on DynamoDB Local.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'dispute-closed' });
  call = callerFor(app);
});

const BILLING_DATE = '2026-11-30T00:00:00.000000000Z';
const current = async (record: BillingRecord) => (await app.deps.billing.get(record))!;
const reference = (r: BillingRecord) => ({ user_id: r.user_id, billing_date: r.billing_date, subscription_id: r.subscription_id });
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

async function deliver(type: string, object: Record<string, unknown>) {
  const body = stripeEventOf(type, object, app.clock.now().getTime());
  const result = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode, body: parseBody(result) };
}

/** A collected card period whose payment was disputed with the funds withdrawn. */
async function disputedPeriod(): Promise<{ record: BillingRecord; dispute: Record<string, unknown> }> {
  const intent = `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  const [seeded] = await seedRecords(app, cardPeriod(BILLING_DATE, { billing_status: 'COMPLETED', transaction_id: intent, payment_attempts: 1, completed_date: BILLING_DATE }));
  const dispute = { ...disputeOf({ paymentIntentId: intent, amountCents: 1999, status: 'needs_response' }), metadata: reference(seeded) };
  expect((await deliver('charge.dispute.created', dispute)).body).toEqual({ status: 'processed', outcome: 'applied' });
  const record = await current(seeded);
  expect(record).toMatchObject({ billing_status: 'FAILED', card_disputed: true });
  return { record, dispute };
}

const pay = (record: BillingRecord) =>
  call('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: record.subscription_id }, headers: { 'Idempotency-Key': randomUUID() } });

describe('charge.dispute.closed', () => {
  it('won: the period is collected again, the dispute hold lifted, and a replay changes nothing', async () => {
    const { record, dispute } = await disputedPeriod();
    expect((await pay(record)).body.error.code).toBe('card_disputed');

    const answer = await deliver('charge.dispute.closed', { ...dispute, status: 'won' });
    expect(answer).toEqual({ status: 200, body: { status: 'processed', outcome: 'applied' } });
    const won = await current(record);
    expect(won).toMatchObject({ billing_status: 'COMPLETED', payment_error: '', transaction_id: record.transaction_id });
    expect(won.card_disputed).toBeUndefined();
    const history = (await app.deps.billing.history(record.subscription_id)).items;
    expect(history[0]).toMatchObject({ billing_event: 'DISPUTE_WON', billing_status: 'COMPLETED' });

    // funds_reinstated follows a win: already applied, nothing charged by anyone.
    expect((await deliver('charge.dispute.funds_reinstated', { ...dispute, status: 'won' })).body).toMatchObject({ outcome: 'ignored', reason: 'already_applied' });
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it('funds_reinstated alone lifts the hold as a win does', async () => {
    const { record, dispute } = await disputedPeriod();
    expect((await deliver('charge.dispute.funds_reinstated', dispute)).body).toEqual({ status: 'processed', outcome: 'applied' });
    expect(await current(record)).toMatchObject({ billing_status: 'COMPLETED' });
  });

  it('lost: the period stays failed and held; a person still cannot charge the card', async () => {
    const { record, dispute } = await disputedPeriod();
    expect((await deliver('charge.dispute.closed', { ...dispute, status: 'lost' })).body).toEqual({ status: 'processed', outcome: 'ignored', reason: 'dispute_lost' });
    expect(await current(record)).toEqual(record);
    const refused = await pay(record);
    expect([refused.status, refused.body.error.code]).toEqual([409, 'card_disputed']);
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it('a closed dispute of another PaymentIntent changes nothing', async () => {
    const { record, dispute } = await disputedPeriod();
    expect((await deliver('charge.dispute.closed', { ...dispute, status: 'won', payment_intent: 'pi_someone_else' })).body).toMatchObject({ outcome: 'ignored', reason: 'transaction_mismatch' });
    expect(await current(record)).toEqual(record);
  });

  it('a closed dispute whose data is not a dispute is recorded without effect', async () => {
    expect((await deliver('charge.dispute.closed', { object: 'dispute', id: 'dp_1' })).body).toEqual({ status: 'processed', outcome: 'ignored', reason: 'invalid_data' });
  });
});
