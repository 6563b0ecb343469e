import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import type { BillingRecord } from '../../src/domain/records.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { tableItemCounts } from '../support/ledger.js';
import { achDelivery, achEventBody } from '../support/webhooks.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, type Caller } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';
import { DAY } from '../support/time.js';

/**
 * ACH outcomes that do not match (DESIGN 4.1), through the real ach-handler and api on DynamoDB
 * Local: a settlement for another amount is an exception, never a collection; a return after the
 * settlement reverses it; a re-presented R01/R09 entry is flagged on the payment request.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'ach-mismatch' });
  call = callerFor(app);
});

beforeEach(() => {
  app.simulator.configure({ default: 'approve' });
});

const current = async (record: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(record))!;
const historyOf = async (record: BillingRecord) => (await app.deps.billing.history(record.subscription_id)).items;
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

async function send(body: Record<string, unknown>) {
  const result = await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode, body: parseBody(result) };
}

const outcome = (record: BillingRecord, type: string, extra: Record<string, unknown> = {}) =>
  achEventBody(record, type, record.transaction_id, formatInstant(app.clock.now()), extra);

/** A 19.99 ACH period submitted by the scheduled attempt (status ACHSENT). */
async function submittedPeriod(): Promise<BillingRecord> {
  const [seeded] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', amount_cents: 1999 }));
  expect((await runCollectionAttempt(app.deps, { key: seeded, process: 'SCHEDULED', owner: 'test' })).kind).toBe('submitted');
  return current(seeded);
}

const exceptionsList = async () => {
  const answer = await call('GET', { route: '/v1/subscriptions', query: { billing: 'exceptions', limit: '100' } });
  expect(answer.status).toBe(200);
  return answer.body.items as Record<string, unknown>[];
};

describe('ACH settlement for another amount (DESIGN 4.1)', () => {
  it('a 1-cent settlement on a 19.99 debit is an exception, not COMPLETED: flagged, audited, listed, answered 200', async () => {
    const record = await submittedPeriod();
    const rowsBefore = (await historyOf(record)).length;
    const event = outcome(record, 'settled', { amount_cents: 1 });

    const answer = await send(event);
    expect(answer).toEqual({ status: 200, body: { status: 'applied', effect: 'exception', record_status: 'ACHSENT' } });
    const flagged = await current(record);
    expect(flagged.billing_status).toBe('ACHSENT');
    expect(flagged.completed_date).toBeUndefined();
    expect(flagged.ach_exception).toEqual({ code: 'amount_mismatch', received_cents: 1, at: formatInstant(app.clock.now()) });
    const rows = await historyOf(record);
    expect(rows).toHaveLength(rowsBefore + 1);
    expect(rows[0]).toMatchObject({ billing_status: 'ACHSENT', ach_exception: { code: 'amount_mismatch', received_cents: 1 } });

    const listed = (await exceptionsList()).find((item) => item.subscription_id === record.subscription_id);
    expect(listed).toMatchObject({ billing_status: 'ACHSENT', ach_exception: { code: 'amount_mismatch', received_cents: 1 } });
    const read = await call('GET', { route: '/v1/subscriptions/{subscriptionId}', pathParameters: { subscriptionId: record.subscription_id } });
    expect(read.body.ach_exception).toMatchObject({ code: 'amount_mismatch', received_cents: 1 });

    // The same event again is a replay: nothing written.
    expect(await send(event)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect(await send({ ...event, event_id: `ach-${randomUUID()}` })).toEqual({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });
    expect((await current(record)).version).toBe(flagged.version);
  });

  it('a settlement for more than the debit (25.00 on 19.99) is an exception too', async () => {
    const record = await submittedPeriod();
    expect((await send(outcome(record, 'settled', { amount_cents: 2500 }))).body).toMatchObject({ effect: 'exception', record_status: 'ACHSENT' });
    expect((await current(record)).ach_exception).toMatchObject({ received_cents: 2500 });
  });

  it('a matching settlement completes the period and lists nothing', async () => {
    const record = await submittedPeriod();
    expect((await send(outcome(record, 'settled'))).body).toMatchObject({ effect: 'settled', record_status: 'COMPLETED' });
    expect((await current(record)).ach_exception).toBeUndefined();
    expect((await exceptionsList()).some((item) => item.subscription_id === record.subscription_id)).toBe(false);
  });

  it('?billing=exceptions refuses a state filter (400) and pages with next', async () => {
    const refused = await call('GET', { route: '/v1/subscriptions', query: { billing: 'exceptions', state: 'parked' } });
    expect(refused.status).toBe(400);
    const first = await submittedPeriod();
    const second = await submittedPeriod();
    await send(outcome(first, 'settled', { amount_cents: 5 }));
    await send(outcome(second, 'settled', { amount_cents: 6 }));
    const page = await call('GET', { route: '/v1/subscriptions', query: { billing: 'exceptions', limit: '1' } });
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(1);
    expect(page.body.next).toEqual(expect.any(String));
  });
});

describe('ACH return after the settlement (DESIGN 4.1)', () => {
  async function settledPeriod(): Promise<BillingRecord> {
    const record = await submittedPeriod();
    expect((await send(outcome(record, 'settled'))).body).toMatchObject({ record_status: 'COMPLETED' });
    return current(record);
  }

  it('an R10 return 60 days after settlement reverses the COMPLETED period: FAILED, owes again, unauthorized hold, audited', async () => {
    const record = await settledPeriod();
    const rowsBefore = (await historyOf(record)).length;
    app.clock.advance(60 * DAY);
    const event = outcome(record, 'returned', { return_code: 'R10' });

    const answer = await send(event);
    expect(answer).toEqual({ status: 200, body: { status: 'applied', effect: 'unauthorized', record_status: 'FAILED', reversed: true } });
    const reversed = await current(record);
    expect(reversed).toMatchObject({ billing_status: 'FAILED', ach_unauthorized: true, ach_return_code: 'R10', updated_event: 'ACH_CHARGEBACK' });
    expect(reversed.completed_date).toBeUndefined();
    expect(await historyOf(record)).toHaveLength(rowsBefore + 1);

    // Owes again, but an unauthorized return is never debited again without a new authorization.
    const pay = await call('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: record.subscription_id }, headers: { 'Idempotency-Key': `k-${randomUUID()}` } });
    expect(pay.status).toBe(409);
    expect(pay.body.error.code).toBe('ach_authorization_required');
    expect(chargesOf(record.user_id)).toHaveLength(1);

    // A redelivery is a replay now, not a second reversal.
    expect(await send(event)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect(await send({ ...event, event_id: `ach-${randomUUID()}` })).toEqual({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });
    expect((await current(record)).version).toBe(reversed.version);
  });

  it('an R01 return two days after settlement reverses it and the re-presentment is flagged reinitiated / RETRY PYMT', async () => {
    const record = await settledPeriod();
    app.clock.advance(2 * DAY);
    expect((await send(outcome(record, 'returned', { return_code: 'R01' }))).body).toMatchObject({ effect: 'represent', record_status: 'FAILED', reversed: true });
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', ach_represented: 1, ach_return_code: 'R01' });

    app.clock.advance(DAY + 1);
    expect((await runCollectionAttempt(app.deps, { key: record, process: 'RETRY', owner: 'test' })).kind).toBe('submitted');
    const [original, represented] = chargesOf(record.user_id);
    expect(original!.reinitiated).toBeUndefined();
    expect(original!.entry_description).toBeUndefined();
    expect(represented).toMatchObject({ idempotency_key: `${record.subscription_id}:2`, reinitiated: true, entry_description: 'RETRY PYMT' });
  });

  it('an R02 return after settlement reverses it with the account-error hold', async () => {
    const record = await settledPeriod();
    app.clock.advance(2 * DAY);
    expect((await send(outcome(record, 'returned', { return_code: 'R02' }))).body).toMatchObject({ effect: 'blocked', record_status: 'FAILED', reversed: true });
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', ach_blocked: true, ach_return_code: 'R02' });
  });

  it('an R10 return 60 days after settlement moves a COMPLETED loan payment to RETURNED, no longer applied', async () => {
    const payment: LoanPayment = {
      loc_user_id: `user-${randomUUID()}`,
      loc_loan_id: 'loan-1',
      loc_payment_id: randomUUID(),
      loc_amount: 5000,
      loc_status: 'COMPLETED',
      loc_payment_method: 'ach',
      loc_process: 'AUTO',
      loc_confirmation_id: `conf-${randomUUID()}`,
      loc_intended_installment_id: 'inst-1',
      loc_applications: [{ payment_id: 'x', installment_id: 'inst-1', amount: 5000, payment_date: formatInstant(app.clock.now()) }],
      loc_update_reason: 'ach_settled',
      loc_payment_attempts: 1,
      loc_created_date: formatInstant(app.clock.now()),
      loc_last_updated: formatInstant(app.clock.now()),
      version: 2,
    };
    await app.deps.payments.create(payment, { actor: 'test:ach', reason: 'fixture' });
    app.clock.advance(60 * DAY);
    const event = {
      event_id: `ach-${randomUUID()}`,
      type: 'returned',
      return_code: 'R10',
      confirmation_id: payment.loc_confirmation_id,
      amount_cents: 5000,
      occurred_at: formatInstant(app.clock.now()),
      reference: { kind: 'loan_payment', user_id: payment.loc_user_id, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id },
    };
    expect(await send(event)).toEqual({ status: 200, body: { status: 'applied', effect: 'returned', record_status: 'RETURNED', reversed: true } });
    const stored = (await app.deps.payments.get(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id))!;
    expect(stored).toMatchObject({ loc_status: 'RETURNED', loc_update_reason: 'ach_returned:R10', loc_applications: [], version: 3 });
    expect(await send(event)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect(await send({ ...event, event_id: `ach-${randomUUID()}` })).toEqual({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });
  });
});

describe('ACH outcomes that match no record', () => {
  it('a mismatched settlement for an unknown record answers 200 ignored and writes nothing but its claim', async () => {
    const before = await tableItemCounts(app);
    const answer = await send({
      event_id: `ach-${randomUUID()}`,
      type: 'settled',
      confirmation_id: 'conf-nobody',
      amount_cents: 1,
      occurred_at: formatInstant(app.clock.now()),
      reference: { kind: 'subscription', user_id: `nobody-${randomUUID()}`, billing_date: formatInstant(app.clock.now()) },
    });
    expect(answer).toEqual({ status: 200, body: { status: 'ignored', reason: 'not_found' } });
    expect(await tableItemCounts(app)).toEqual({ ...before, stripeEvents: before.stripeEvents! + 1 });
  });

  it('a return for a COMPLETED period of another confirmation is ignored, not a reversal', async () => {
    const record = await submittedPeriod();
    await send(outcome(record, 'settled'));
    const completed = await current(record);
    expect(await send(outcome({ ...completed, transaction_id: 'conf-other' }, 'returned', { return_code: 'R10' }))).toEqual({
      status: 200,
      body: { status: 'ignored', reason: 'confirmation_mismatch' },
    });
    expect(await current(record)).toEqual(completed);
  });
});
