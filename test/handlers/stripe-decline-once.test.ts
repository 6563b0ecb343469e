import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StripeCardProcessor, type StripeCustomerResolver } from '../../src/adapters/stripe/processor.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { MAX_DUNNING_ATTEMPTS } from '../../src/domain/dunning.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { manualPay } from '../../src/domain/use-cases/manual-pay.js';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { FakeStripe, stripeError, type RecordedRequest } from '../adapters/stripe/fake-stripe.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { cardPeriod } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { stripeEventOf } from '../support/stripe-fixtures.js';
import { stripeDelivery } from '../support/webhooks.js';
import { DAY } from '../support/time.js';

/**
 * One card decline, one dunning slot (DESIGN 5b, 6): a decline reaches us twice, as the answer to
 * the attempt's own PaymentIntent request and as Stripe's `payment_intent.payment_failed`, in either
 * order, and Stripe may deliver the event again or late. Whatever the order, the period records the
 * decline once: one failure, one slot, one presentment against the card's ceilings, one audit row
 * (one `billing.period.declined` event), the same next attempt.
 *
 * Real parts: the Stripe SDK's card processor against a local stand-in for api.stripe.com that
 * answers with Stripe's real decline (stripe-java's PaymentIntent fixture: `card_declined`,
 * `generic_decline`, a Visa), events in Stripe's own envelope, signed with the SDK, DynamoDB Local.
 */

const BILLING_DATE = '2026-12-01T00:00:00.000000000Z';
const owner = 'decline-once-test';

/** stripe-java's PaymentIntent with a real decline; its old `requires_source` status is today's `requires_payment_method`. */
const realDecline = JSON.parse(readFileSync(new URL('../fixtures/stripe/payment-intent-last-payment-error.json', import.meta.url), 'utf8')) as Record<string, any>;

const fake = new FakeStripe();
let app: TestApp;

/** Stripe's idempotency: one PaymentIntent per key; its answer is replayed for a repeated key. */
const intentsByKey = new Map<string, Record<string, any>>();
/** What Stripe answers for the next new key: a decline (402 with the PaymentIntent), or an intent still processing. */
let nextAnswer: 'decline' | 'processing' = 'decline';

function intentFor(request: RecordedRequest): Record<string, any> {
  const key = String(request.headers['idempotency-key']);
  let intent = intentsByKey.get(key);
  if (!intent) {
    intent = {
      ...realDecline,
      id: `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
      amount: Number(request.form.get('amount')),
      amount_received: 0,
      currency: request.form.get('currency'),
      customer: request.form.get('customer'),
      status: nextAnswer === 'processing' ? 'processing' : 'requires_payment_method',
      last_payment_error: nextAnswer === 'processing' ? null : realDecline.last_payment_error,
      metadata: {
        user_id: request.form.get('metadata[user_id]'),
        billing_date: request.form.get('metadata[billing_date]'),
        subscription_id: request.form.get('metadata[subscription_id]'),
      },
      idempotency_key: key,
    };
    intentsByKey.set(key, intent);
  }
  return intent;
}

const customers: StripeCustomerResolver = { cardFor: async () => ({ customer: 'cus_DvnENrEbZJeIQE', payment_method: 'pm_card_visa' }) };

/** Runs `between` after Stripe answered the attempt and before the attempt writes (the webhook racing the answer). */
class RacingProcessor implements PaymentProcessor {
  between: ((request: PaymentRequest, result: PaymentResult) => Promise<void>) | undefined;
  constructor(private readonly inner: PaymentProcessor) {}
  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    const result = await this.inner.submit(request, signal);
    const between = this.between;
    this.between = undefined;
    if (between) await between(request, result);
    return result;
  }
}

let racing: RacingProcessor;
let stripeProcessor: StripeCardProcessor;

beforeAll(async () => {
  await fake.start();
  fake.reply = (request) => {
    const { idempotency_key: _key, ...intent } = intentFor(request);
    if (intent.status === 'processing') return { status: 200, body: intent };
    return stripeError(402, { ...intent.last_payment_error, payment_intent: intent });
  };
  stripeProcessor = new StripeCardProcessor({ stripe: fake.client(), customers });
  racing = new RacingProcessor(stripeProcessor);
  app = await createTestApp({ label: 'decline-once', processor: racing });
});

afterAll(async () => {
  await fake.stop();
});

beforeEach(() => {
  app.clock.set('2026-12-01T12:00:00.000Z');
  nextAnswer = 'decline';
  racing.between = undefined;
});

/* ---------------- helpers ---------------- */

const current = async (record: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(record))!;
const historyOf = async (record: Pick<BillingRecord, 'subscription_id'>) => (await app.deps.billing.history(record.subscription_id, { limit: 100 })).items;

/** PaymentIntent creations Stripe received for the period, one per distinct key (a resent key is not a new presentment). */
function presentedKeys(record: Pick<BillingRecord, 'subscription_id'>): string[] {
  const keys = fake.requests.filter((r) => r.path === '/v1/payment_intents' && r.form.get('metadata[subscription_id]') === record.subscription_id).map((r) => String(r.headers['idempotency-key']));
  return [...new Set(keys)];
}

function intentOfKey(key: string): Record<string, any> {
  const intent = intentsByKey.get(key);
  if (!intent) throw new Error(`no PaymentIntent for ${key}`);
  return intent;
}

/**
 * `payment_intent.payment_failed` as Stripe sends it for the PaymentIntent made with `key`: Stripe's
 * event envelope (`request.idempotency_key` names the API request that caused it) around the
 * intent as Stripe holds it now (declined: `requires_payment_method` with its last_payment_error).
 */
function paymentFailedEvent(key: string, options: { fromRequest?: boolean } = {}): Record<string, any> {
  const { idempotency_key: _key, ...intent } = intentOfKey(key);
  const failed = { ...intent, status: 'requires_payment_method', last_payment_error: realDecline.last_payment_error };
  const event = stripeEventOf('payment_intent.payment_failed', failed, app.clock.now().getTime());
  const fromRequest = options.fromRequest ?? true;
  return { ...event, request: fromRequest ? { id: `req_${randomUUID().slice(0, 12)}`, idempotency_key: key } : { id: null, idempotency_key: null } };
}

async function deliver(event: Record<string, any>): Promise<{ status: number; body: Record<string, unknown> }> {
  const result = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(event, { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode ?? 0, body: JSON.parse(result.body ?? "null") as Record<string, unknown> };
}

/** Delivers until Stripe would stop: a refusal (409, 5xx) is delivered again, as Stripe does. */
async function deliverUntilAccepted(event: Record<string, any>): Promise<Record<string, unknown>> {
  for (let i = 0; i < 5; i++) {
    const answer = await deliver(event);
    if (answer.status === 200) return answer.body;
  }
  throw new Error('the webhook never accepted the event');
}

/** Everything a decline counts: the failure, the slot, the next attempt, the ceiling's presentments, the saved failure. */
function counted(record: BillingRecord) {
  return {
    billing_status: record.billing_status,
    version: record.version,
    payment_attempts: record.payment_attempts,
    transaction_id: record.transaction_id,
    decline_code: record.decline_code,
    decline_class: record.decline_class,
    dunning_first_declined_at: record.dunning_first_declined_at,
    dunning_attempts: record.dunning_attempts,
    dunning_next_attempt_at: record.dunning_next_attempt_at,
    dunning_presented_at: record.dunning_presented_at,
    billing_failure_count: record.billing_failure_count,
    last_attempt_date: record.last_attempt_date,
  };
}

/** Declined history rows of the period (each is one `billing.period.declined` event). */
const declineRows = async (record: BillingRecord) => (await historyOf(record)).filter((row) => row.billing_status === 'FAILED' && row.payment_error !== undefined && row.payment_error !== '');

const collect = (record: BillingRecord, process: 'SCHEDULED' | 'RETRY') => runCollectionAttempt(app.deps, { key: record, process, owner });

/* ---------------- the attempt first, the webhook after ---------------- */

describe('payment_intent.payment_failed after the attempt recorded the decline', () => {
  it('scheduled attempt: the webhook, a second event for the same intent and a redelivery change nothing', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    const declined = await current(record);
    expect(declined).toMatchObject({ billing_status: 'FAILED', payment_attempts: 1, dunning_attempts: 1, decline_code: 'generic_decline', decline_class: 'retry_later', card_network: 'visa' });
    expect(declined.transaction_id).toBe(intentOfKey(`${record.subscription_id}:1`).id);
    expect(declined.dunning_presented_at).toHaveLength(1);
    const rows = (await historyOf(record)).length;

    const event = paymentFailedEvent(`${record.subscription_id}:1`);
    expect(await deliverUntilAccepted(event)).toEqual({ status: 'processed', outcome: 'ignored', reason: 'already_applied' });
    expect(await deliver(event)).toEqual({ status: 200, body: { status: 'duplicate' } });
    // Stripe may also send the failure under another event id (and without the request that caused it).
    expect(await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`, { fromRequest: false }))).toMatchObject({ outcome: 'ignored', reason: 'already_applied' });

    expect(counted(await current(record))).toEqual(counted(declined));
    expect(await historyOf(record)).toHaveLength(rows);
  });

  it('a whole dunning cycle with every decline reported twice (and an older intent reported late) still gets its 8 attempts in 14 days', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    for (let attempt = 2; attempt <= MAX_DUNNING_ATTEMPTS + 2; attempt++) {
      const before = await current(record);
      // Each decline's own webhook, then the previous attempt's, late.
      await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:${before.payment_attempts}`));
      if (before.payment_attempts > 1) await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:${before.payment_attempts - 1}`, { fromRequest: false }));
      expect(counted(await current(record))).toEqual(counted(before));
      if (!before.dunning_next_attempt_at) break;
      app.clock.set(new Date(Date.parse(before.dunning_next_attempt_at) + 60_000).toISOString());
      expect(await collect(record, 'RETRY')).toMatchObject({ kind: 'declined' });
      expect(await current(record)).toMatchObject({ dunning_attempts: before.dunning_attempts! + 1, payment_attempts: before.payment_attempts + 1 });
    }
    const end = await current(record);
    expect(presentedKeys(record)).toHaveLength(MAX_DUNNING_ATTEMPTS);
    expect(end).toMatchObject({ dunning_attempts: MAX_DUNNING_ATTEMPTS, payment_attempts: MAX_DUNNING_ATTEMPTS });
    expect(end.dunning_next_attempt_at).toBeUndefined();
    expect(end.dunning_presented_at).toHaveLength(MAX_DUNNING_ATTEMPTS);
    expect(Date.parse(end.last_attempt_date!) - Date.parse(end.dunning_first_declined_at!)).toBeLessThanOrEqual(14 * DAY + 60_000);
    expect(await declineRows(end)).toHaveLength(MAX_DUNNING_ATTEMPTS);
  });

  it("manual pay: the customer's decline spends no slot, and its webhook spends none either", async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    const result = await manualPay(app.deps, { subscriptionId: record.subscription_id, owner, actor: 'customer', idempotencyKey: `pay-${randomUUID()}` });
    expect(result.outcome).toMatchObject({ kind: 'declined' });
    const declined = await current(record);
    expect(declined).toMatchObject({ payment_attempts: 2, dunning_attempts: 1, process: 'MANUAL' });
    expect(declined.dunning_presented_at).toHaveLength(1);

    expect(await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:2`))).toMatchObject({ outcome: 'ignored', reason: 'already_applied' });
    expect(counted(await current(record))).toEqual(counted(declined));
  });

  it('operator retry: the reset cycle starts at 1 with the retry, and the webhook does not make it 2', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    const retried = await retryBilling(app.deps, { subscriptionId: record.subscription_id, owner, actor: 'operator', reason: 'card updated' });
    expect(retried).toMatchObject({ outcome: 'failed', attempt: 'declined' });
    const declined = await current(record);
    expect(declined).toMatchObject({ payment_attempts: 2, dunning_attempts: 1, dunning_first_declined_at: declined.last_attempt_date });

    expect(await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:2`))).toMatchObject({ outcome: 'ignored', reason: 'already_applied' });
    expect(await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`, { fromRequest: false }))).toMatchObject({ outcome: 'ignored' });
    expect(counted(await current(record))).toEqual(counted(declined));
  });

  it('a decline the record recorded is not counted again after the period returned to PENDING (a ban, then a reactivation)', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    const declined = await current(record);
    // The period as a ban and a reactivation leave it: PENDING again, the declined PaymentIntent its last transaction.
    const reopened: BillingRecord = { ...declined, billing_status: 'PENDING', version: declined.version + 1, last_run_date: '2026-12-01T12:30:00.000000000Z' };
    await app.deps.billing.commit({ writes: [{ kind: 'update', read: declined, record: reopened }], history: [historyRowOf(reopened)] });

    expect(await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`, { fromRequest: false }))).toMatchObject({ outcome: 'ignored', reason: 'already_applied' });
    expect(counted(await current(record))).toEqual(counted(reopened));
  });
});

/* ---------------- the webhook first, the attempt's answer after ---------------- */

describe('payment_intent.payment_failed before the attempt wrote its decline', () => {
  it('scheduled attempt: one decline, one slot, one presentment, one audit row; the message delivered again presents nothing', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const answers: Record<string, unknown>[] = [];
    racing.between = async (request) => {
      answers.push((await deliver(paymentFailedEvent(request.idempotency_key))).body);
    };
    const outcome = await collect(record, 'SCHEDULED');
    // The event Stripe sent first is delivered again until it is accepted.
    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`));
    // The collections message delivered again (SQS) finds the decline recorded.
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'not_due' });

    const after = await current(record);
    expect(after).toMatchObject({ billing_status: 'FAILED', payment_attempts: 1, dunning_attempts: 1, decline_class: 'retry_later', process: 'SCHEDULED' });
    expect(after.dunning_presented_at).toHaveLength(1);
    expect(after.dunning_next_attempt_at).toBe(new Date(Date.parse(after.dunning_first_declined_at!) + DAY).toISOString().replace('Z', '000000Z'));
    expect(presentedKeys(record)).toEqual([`${record.subscription_id}:1`]);
    expect(await declineRows(after)).toHaveLength(1);
    // The attempt that made the PaymentIntent records its own answer: the webhook deferred to it.
    expect(outcome).toMatchObject({ kind: 'declined' });
    expect(answers[0]).toMatchObject({ error: { code: 'locked' } });
  });

  it('retry in a dunning cycle: the attempt spends the slot once, and the webhook neither spends another nor moves the next attempt', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    const first = await current(record);
    app.clock.set(new Date(Date.parse(first.dunning_next_attempt_at!) + 60_000).toISOString());
    racing.between = async (request) => {
      await deliver(paymentFailedEvent(request.idempotency_key));
    };
    expect(await collect(record, 'RETRY')).toMatchObject({ kind: 'declined' });
    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:2`));
    const after = await current(record);
    expect(after).toMatchObject({ payment_attempts: 2, dunning_attempts: 2, process: 'RETRY' });
    expect(after.dunning_next_attempt_at).toBe(new Date(Date.parse(first.dunning_first_declined_at!) + 2 * DAY).toISOString().replace('Z', '000000Z'));
    expect(after.dunning_presented_at).toHaveLength(2);
    expect(await declineRows(after)).toHaveLength(2);
  });

  it("manual pay: the customer's request is answered as declined, and repeating its Idempotency-Key presents nothing again", async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    const idempotencyKey = `pay-${randomUUID()}`;
    racing.between = async (request) => {
      await deliver(paymentFailedEvent(request.idempotency_key));
    };
    const first = await manualPay(app.deps, { subscriptionId: record.subscription_id, owner, actor: 'customer', idempotencyKey });
    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`));
    const repeat = await manualPay(app.deps, { subscriptionId: record.subscription_id, owner, actor: 'customer', idempotencyKey });

    // One request, one presentment: the repeat is answered from the record, not sent to Stripe as key :2.
    expect(presentedKeys(record)).toEqual([`${record.subscription_id}:1`]);
    expect(repeat.replayed).toBe(true);
    expect(first.outcome).toMatchObject({ kind: 'declined' });
    const after = await current(record);
    expect(after).toMatchObject({ payment_attempts: 1, dunning_attempts: 1, process: 'MANUAL', last_request_key: idempotencyKey });
    // A customer's presentment is not counted against the card's reattempt ceilings (merchant-initiated only).
    expect(after.dunning_presented_at).toBeUndefined();
    expect(await declineRows(after)).toHaveLength(1);
  });
});

/* ---------------- a decline only the webhook reports ---------------- */

describe('payment_intent.payment_failed for a decline no attempt recorded', () => {
  it('a PENDING period whose attempt crashed after Stripe declined: the webhook records it once; the repair attempt resends nothing new', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    // The attempt's request reached Stripe and the function died before its write: nothing recorded, the lock's lease lapsed.
    await stripeProcessor.submit({
      idempotency_key: `${record.subscription_id}:1`,
      user_id: record.user_id,
      amount_cents: record.amount_cents,
      rail: 'card',
      reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    });
    expect(await current(record)).toMatchObject({ billing_status: 'PENDING', payment_attempts: 0 });

    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`));
    const after = await current(record);
    // The card's network from the decline as Stripe reports it (last_payment_error.source.brand "Visa"): Visa's ceilings apply.
    expect(after).toMatchObject({ billing_status: 'FAILED', payment_attempts: 1, dunning_attempts: 1, transaction_id: intentOfKey(`${record.subscription_id}:1`).id, card_network: 'visa' });
    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`, { fromRequest: false }));
    expect(counted(await current(record))).toEqual(counted(after));
    expect(await collect(record, 'RETRY')).toMatchObject({ kind: 'not_due' });
    expect(presentedKeys(record)).toEqual([`${record.subscription_id}:1`]);
  });

  it('a retry whose PaymentIntent was still processing, then failed: the webhook records the decline once and spends its slot', async () => {
    const [record] = await seedRecords(app, cardPeriod(BILLING_DATE));
    expect(await collect(record, 'SCHEDULED')).toMatchObject({ kind: 'declined' });
    const first = await current(record);
    app.clock.set(new Date(Date.parse(first.dunning_next_attempt_at!) + 60_000).toISOString());
    nextAnswer = 'processing';
    expect(await collect(record, 'RETRY')).toMatchObject({ kind: 'failed_uncounted', class: 'transient' });
    expect(counted(await current(record))).toEqual(counted(first));

    // The intent fails later, on its own: the event names no request.
    const failed = paymentFailedEvent(`${record.subscription_id}:2`, { fromRequest: false });
    expect(await deliverUntilAccepted(failed)).toMatchObject({ outcome: 'applied' });
    const after = await current(record);
    expect(after).toMatchObject({ billing_status: 'FAILED', payment_attempts: 2, dunning_attempts: 2, transaction_id: intentOfKey(`${record.subscription_id}:2`).id });
    expect(after.dunning_next_attempt_at).toBe(new Date(Date.parse(first.dunning_first_declined_at!) + 2 * DAY).toISOString().replace('Z', '000000Z'));
    expect(after.dunning_presented_at).toHaveLength(2);

    // Reported again (another event id), or the first attempt's intent reported late: nothing more.
    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:2`, { fromRequest: false }));
    await deliverUntilAccepted(paymentFailedEvent(`${record.subscription_id}:1`, { fromRequest: false }));
    expect(counted(await current(record))).toEqual(counted(after));
    expect(await declineRows(after)).toHaveLength(2);
  });
});
