import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProcessorError } from '../../src/domain/errors.js';
import { LOAN_MAX_ERRORS } from '../../src/domain/loan-retries.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { applyMembershipEvent, membershipEventSchema } from '../../src/domain/use-cases/membership/apply-membership-event.js';
import { retryLoanPayment } from '../../src/domain/use-cases/retry-loan-payment.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { loanPayment, retryingLoanPayment, seedLoanPayment } from '../support/loan-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { stripeEventOf, succeededPaymentIntent } from '../support/stripe-fixtures.js';
import { stripeDelivery } from '../support/webhooks.js';
import { DAY, HOUR } from '../support/time.js';
import { billingRecord, callerFor, instantAt, type Caller } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';

/**
 * The suspected cases of issue 31 (item 7), each driven on DynamoDB Local through the real stores,
 * use cases and handlers, with charges counted on the payment simulator: every one proved real.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const owner = 'rail-suspects';

/** The simulator, except that a user listed in `garbled` is charged and then gets an answer that cannot be read. */
class GarblingProcessor implements PaymentProcessor {
  app!: TestApp;
  readonly garbled = new Set<string>();
  async submit(request: PaymentRequest): Promise<PaymentResult> {
    const result = await this.app.simulator.submit(request);
    if (this.garbled.has(request.user_id)) throw new ProcessorError('processor_bad_answer', 'The payment processor is unavailable.');
    return result;
  }
}

let app: TestApp;
let call: Caller;
const processor = new GarblingProcessor();

beforeAll(async () => {
  app = await createTestApp({ label: 'rail-suspects', now: NOW, processor });
  processor.app = app;
  call = callerFor(app);
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve' });
});

const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const current = async (record: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(record))!;
const membership = (type: string, userId: string) =>
  membershipEventSchema.parse({ event_id: randomUUID(), type, user_id: userId, occurred_at: formatInstant(app.clock.now()) });
const SUB = '/v1/subscriptions/{subscriptionId}';
const pay = (record: BillingRecord) =>
  call('POST', { route: `${SUB}/pay`, pathParameters: { subscriptionId: record.subscription_id }, headers: { 'Idempotency-Key': `pay-${randomUUID()}` } });
const retryBilling = (record: BillingRecord) =>
  call('POST', { route: `${SUB}/retry-billing`, pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'customer called' } });

/** A card period declined `insufficient_funds` on every dunning slot until the cycle is exhausted. */
async function exhaustedCardPeriod(): Promise<BillingRecord> {
  const [seeded] = await seedRecords(app, billingRecord(app, { payment_method: 'card' }));
  app.simulator.configure({ default: 'approve', users: { [seeded.user_id]: 'decline:insufficient_funds' } });
  await runCollectionAttempt(app.deps, { key: seeded, process: 'SCHEDULED', owner });
  for (let record = await current(seeded); record.dunning_next_attempt_at !== undefined; record = await current(seeded)) {
    app.clock.set(new Date(Date.parse(record.dunning_next_attempt_at) + HOUR / 2).toISOString());
    await runCollectionAttempt(app.deps, { key: seeded, process: 'RETRY', owner });
  }
  const exhausted = await current(seeded);
  expect(exhausted).toMatchObject({ billing_status: 'FAILED', decline_class: 'retry_later', dunning_attempts: 8 });
  expect(exhausted.dunning_next_attempt_at).toBeUndefined();
  // From here on any presentment would be charged.
  app.simulator.configure({ default: 'approve' });
  return exhausted;
}

describe('(a) BAN then REACTIVATE keeps an exhausted dunning cycle exhausted', () => {
  it('regression: an exhausted card period is not charged by the reactivation nor by the next runs', async () => {
    const exhausted = await exhaustedCardPeriod();
    app.clock.advance(DAY);
    await applyMembershipEvent(app.deps, { event: membership('BAN', exhausted.user_id), owner });
    expect((await current(exhausted)).billing_status).toBe('INACTIVE');
    app.clock.advance(DAY);
    await applyMembershipEvent(app.deps, { event: membership('REACTIVATE', exhausted.user_id), owner });
    const reactivated = await current(exhausted);
    expect(reactivated).toMatchObject({ billing_status: 'FAILED', decline_class: 'retry_later', dunning_attempts: 8 });
    for (const process of ['RETRY', 'SCHEDULED'] as const) {
      expect(await runCollectionAttempt(app.deps, { key: exhausted, process, owner })).toMatchObject({ kind: 'not_due', reason: 'exhausted' });
    }
    expect(chargesOf(exhausted.user_id)).toHaveLength(0);
    // The dunning list still shows it exhausted.
    expect((await call('GET', { route: SUB, pathParameters: { subscriptionId: exhausted.subscription_id } })).body.dunning).toMatchObject({ state: 'exhausted' });
  });

  it('a period banned before its first attempt comes back PENDING and is collected', async () => {
    const [fresh] = await seedRecords(app, billingRecord(app, { payment_method: 'card', billing_date: instantAt(app, 2 * DAY) }));
    await applyMembershipEvent(app.deps, { event: membership('BAN', fresh.user_id), owner });
    app.clock.advance(3 * DAY);
    await applyMembershipEvent(app.deps, { event: membership('REACTIVATE', fresh.user_id), owner });
    expect((await current(fresh)).billing_status).toBe('COMPLETED');
    expect(chargesOf(fresh.user_id)).toHaveLength(1);
  });
});

describe('(b) a pinless loan retry whose last answer was an unreadable 2xx', () => {
  it('regression: the payment is not ended FAILED while the processor may hold the charge; the same key records it', async () => {
    const payment = retryingLoanPayment(app, {
      loc_update_reason: 'The payments service failed before an answer; the retry is rescheduled.',
      loc_error_count: LOAN_MAX_ERRORS - 1,
      loc_first_declined_at: instantAt(app, -20 * DAY),
      loc_created_date: instantAt(app, -20 * DAY),
      version: 3,
    });
    await seedLoanPayment(app, payment, 'a payment retried through processor errors');
    const request = { user_id: payment.loc_user_id, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id, owner };

    processor.garbled.add(payment.loc_user_id);
    const first = await retryLoanPayment(app.deps, request);
    expect(chargesOf(payment.loc_user_id)).toHaveLength(1);
    expect(first.kind).toBe('error_rescheduled');
    const after = (await app.deps.payments.get(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id))!;
    expect(after).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 1 });

    processor.garbled.delete(payment.loc_user_id);
    app.clock.set(after.loc_next_attempt_at!);
    expect((await retryLoanPayment(app.deps, request)).kind).toBe('collected');
    const collected = (await app.deps.payments.get(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id))!;
    expect(collected).toMatchObject({ loc_status: 'COMPLETED', loc_confirmation_id: chargesOf(payment.loc_user_id)[0]!.confirmation_id });
    expect(chargesOf(payment.loc_user_id)).toHaveLength(1);
  });

  it('errors the processor answered as taking nothing still end the payment at the limit', async () => {
    const payment = loanPayment(app, {
      loc_amount: 4200,
      loc_status: 'RETRY',
      loc_payment_method: 'pinless',
      loc_update_reason: 'The payments service failed before an answer; the retry is rescheduled.',
      loc_error_count: LOAN_MAX_ERRORS - 1,
      loc_next_attempt_at: instantAt(app, 0),
      loc_created_date: instantAt(app, -20 * DAY),
      loc_last_updated: instantAt(app, -DAY),
      version: 3,
    });
    await seedLoanPayment(app, payment, 'seed');
    app.simulator.configure({ default: 'approve', users: { [payment.loc_user_id]: 'error' } });
    const outcome = await retryLoanPayment(app.deps, { user_id: payment.loc_user_id, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id, owner });
    expect(outcome).toMatchObject({ kind: 'failed', payment: { loc_status: 'FAILED' } });
  });
});

describe('(c) retry-billing answers billed only when the period was collected', () => {
  it('regression: a period not yet due answers not_billed and charges nothing', async () => {
    const [future] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, 5 * DAY) }));
    const answer = await retryBilling(future);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ outcome: 'not_billed', still_due: false });
    expect(chargesOf(future.user_id)).toHaveLength(0);
  });

  it('regression: a member found deactivated answers not_billed, and a bulk run counts it skipped, not billed', async () => {
    const due = instantAt(app, -5 * DAY);
    const parked = billingRecord(app, {
      billing_date: due,
      billing_failed_for: `${due}#0`,
      billing_failure_count: 8,
      billing_failed_at: instantAt(app, -DAY),
      billing_last_error: 'The payment processor is unavailable.',
    });
    const single = billingRecord(app);
    await seedRecords(app, parked, single);
    app.simulator.configure({
      default: 'approve',
      accounts: { [parked.user_id]: { status: 'inactive' }, [single.user_id]: { status: 'inactive' } },
    });

    expect((await retryBilling(single)).body).toMatchObject({ outcome: 'not_billed', still_due: false, subscription: { billing_status: 'INACTIVE' } });

    const created = await call('POST', {
      route: '/v1/billing/retry-runs',
      body: { state: 'parked', reason: 'outage over', user_ids: [parked.user_id] },
      headers: { 'Idempotency-Key': randomUUID() },
    });
    expect(created.status).toBe(202);
    const worker = createRetryRunWorkerHandler(app.depsFor('retry-run-worker'));
    const records = app.retryRunsQueue.sent.map((m) => sqsRecord(m.body, { messageId: randomUUID(), queue: 'test-retry-runs' }));
    app.retryRunsQueue.clear();
    expect((await worker(sqsEvent(records), lambdaContext())).batchItemFailures).toEqual([]);
    const run = await call('GET', { route: '/v1/billing/retry-runs/{runId}', pathParameters: { runId: created.body.run_id } });
    expect(run.body.counts).toEqual({ billed: 0, failed: 0, still_due: 0, skipped: 1 });
    expect(run.body.items).toMatchObject([{ subscription_id: parked.subscription_id, outcome: 'skipped', detail: 'inactive' }]);
    expect(chargesOf(parked.user_id)).toHaveLength(0);
  });

  it('a period collected by the retry still answers billed', async () => {
    const [due] = await seedRecords(app, billingRecord(app));
    expect((await retryBilling(due)).body).toMatchObject({ outcome: 'billed', subscription: { billing_status: 'COMPLETED' } });
  });
});

describe('(d) a card period that received a mismatched payment is not charged again by a person', () => {
  async function mismatchedPeriod(status: 'PENDING' | 'FAILED'): Promise<BillingRecord> {
    const [record] = await seedRecords(app, billingRecord(app, {
      payment_method: 'card',
      billing_status: status,
      ...(status === 'FAILED' ? { payment_attempts: 1, last_attempt_date: instantAt(app, -2 * DAY), payment_error: 'declined' } : {}),
    }));
    const intent = succeededPaymentIntent({ reference: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id }, amountCents: 999, currency: 'usd' });
    const body = stripeEventOf('payment_intent.succeeded', intent, app.clock.now().getTime());
    const answer = parseBody(await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
    expect(answer).toMatchObject({ reason: 'exception:amount_mismatch' });
    return current(record);
  }

  it('regression: manual pay answers 409 payment_exception and charges nothing', async () => {
    const record = await mismatchedPeriod('PENDING');
    const answer = await pay(record);
    expect([answer.status, answer.body.error?.code]).toEqual([409, 'payment_exception']);
    expect(chargesOf(record.user_id)).toHaveLength(0);
    expect(await current(record)).toEqual(record);
  });

  it('regression: retry-billing answers 409 payment_exception before the clear and charges nothing', async () => {
    const record = await mismatchedPeriod('FAILED');
    const answer = await retryBilling(record);
    expect([answer.status, answer.body.error?.code]).toEqual([409, 'payment_exception']);
    expect(chargesOf(record.user_id)).toHaveLength(0);
    expect(await current(record)).toEqual(record);
  });
});

describe('issue 31 case 5: a lost card is never charged again after BAN and REACTIVATE', () => {
  it('regression: a lost_card decline (Visa category 1) stays held through BAN+REACTIVATE on every path', async () => {
    const [seeded] = await seedRecords(app, billingRecord(app, { payment_method: 'card' }));
    app.simulator.configure({ default: 'approve', users: { [seeded.user_id]: 'decline:lost_card' } });
    expect(await runCollectionAttempt(app.deps, { key: seeded, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'declined' });
    expect(await current(seeded)).toMatchObject({ billing_status: 'FAILED', decline_code: 'lost_card', decline_class: 'do_not_retry' });
    // Any presentment from here on would be charged.
    app.simulator.configure({ default: 'approve' });

    app.clock.advance(DAY);
    await applyMembershipEvent(app.deps, { event: membership('BAN', seeded.user_id), owner });
    app.clock.advance(DAY);
    await applyMembershipEvent(app.deps, { event: membership('REACTIVATE', seeded.user_id), owner });
    expect(await current(seeded)).toMatchObject({ billing_status: 'FAILED', decline_class: 'do_not_retry' });
    // The schedule refuses it (its dunning ended with the decline, and the card is held): nothing presented.
    const retried = await runCollectionAttempt(app.deps, { key: seeded, process: 'RETRY', owner });
    expect(retried.kind === 'not_due' ? ['exhausted', 'payment_method_required'].includes(retried.reason) : retried.kind === 'held').toBe(true);
    const refused = await pay(await current(seeded));
    expect([refused.status, refused.body.error?.code]).toEqual([409, 'payment_method_required']);
    expect(chargesOf(seeded.user_id)).toHaveLength(0);
  });
});
