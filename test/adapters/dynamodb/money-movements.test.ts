import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { MoneyMovement } from '../../../src/domain/money-movements.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { runCollectionAttempt } from '../../../src/domain/use-cases/collect.js';
import { loanPaymentId } from '../../../src/handlers/api/loans.js';
import { createAchHandler } from '../../../src/handlers/ach-handler.js';
import { createStripeWebhookHandler } from '../../../src/handlers/stripe-webhook.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { cardPeriod } from '../../support/billing-fixtures.js';
import { FaultInjector, faultyPorts } from '../../support/faults.js';
import { seedRecords } from '../../support/seed.js';
import { achDelivery, achEventBody, stripeDelivery, stripeEvent } from '../../support/webhooks.js';
import { billingRecord, callerFor, newUserId, type Caller } from '../../handlers/api-fixtures.js';
import { parseBody } from '../../handlers/webhook-events.js';

/**
 * Our side of reconciliation (DESIGN 14): every processor interaction that moves money writes one
 * money-movements row in the transaction of its effect, or alone when no record changes; a replay
 * or a failed effect writes none. Through the real handlers and use cases on DynamoDB Local.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'movements' });
  call = callerFor(app);
});

const DAY = 86_400_000;
const today = () => formatInstant(app.clock.now()).slice(0, 10);
const dayOf = (ms: number) => formatInstant(new Date(ms)).slice(0, 10);

async function rowsOf(userId: string, rail: BillingRecord['payment_method'], day = today()): Promise<MoneyMovement[]> {
  return (await app.deps.movements.listDay(rail, day)).filter((m) => m.user_id === userId);
}

async function attempt(record: BillingRecord) {
  return runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `test-${randomUUID()}` });
}

async function sendAch(body: Record<string, unknown>) {
  const result = await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
  return { status: result.statusCode, body: parseBody(result) };
}

async function sendStripe(type: string, object: Record<string, unknown>, createdMs = app.clock.now().getTime()) {
  const deps = app.depsFor('stripe-webhook');
  const result = await createStripeWebhookHandler(deps)(stripeDelivery(stripeEvent(type, object, createdMs), { signedAtMs: app.wallClock.now().getTime() }));
  return parseBody(result);
}

const chargeOf = (userId: string) => app.simulator.charges().find((c) => c.user_id === userId)!;

describe('presentments', () => {
  it('a pinless collection writes its debit with the attempt: transaction, amount, key and record', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless', amount_cents: 2500 }));
    expect((await attempt(record)).kind).toBe('collected');
    const charge = chargeOf(record.user_id);
    expect(await rowsOf(record.user_id, 'pinless')).toEqual([
      expect.objectContaining({
        kind: 'debit',
        rail: 'pinless',
        transaction_id: charge.confirmation_id,
        amount_cents: 2500,
        idempotency_key: `${record.subscription_id}:1`,
        record_key: `sub#${record.subscription_id}`,
        source: 'attempt',
      }),
    ]);
  });

  it('an ACH submission writes its debit on the ach rail', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach' }));
    expect((await attempt(record)).kind).toBe('submitted');
    expect(await rowsOf(record.user_id, 'ach')).toEqual([expect.objectContaining({ kind: 'debit', transaction_id: chargeOf(record.user_id).confirmation_id })]);
  });

  it('a decline moves no money and writes no row', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless' }));
    app.simulator.configure({ users: { [record.user_id]: 'decline' } });
    expect((await attempt(record)).kind).toBe('declined');
    expect(await rowsOf(record.user_id, 'pinless')).toEqual([]);
  });

  it('a failed write leaves no row, and its repair dates the debit by the failed attempt that presented it', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless' }));
    const presentedDay = today();
    const faults = new FaultInjector([{ point: 'billing.commit.before', mode: 'throw', error: () => new Error('injected bug before the commit') }]);
    expect((await runCollectionAttempt(faultyPorts(app.depsFor('batch-worker'), faults), { key: record, process: 'SCHEDULED', owner: 'dies' })).kind).toBe('failed_counted');
    expect(await rowsOf(record.user_id, 'pinless')).toEqual([]);

    app.clock.advance(2 * DAY);
    const repaired = await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'OPERATOR_RETRY', owner: 'repairs' });
    expect(repaired.kind).toBe('collected');
    expect(app.simulator.charges().filter((c) => c.user_id === record.user_id)).toHaveLength(1);
    expect(await rowsOf(record.user_id, 'pinless', presentedDay)).toEqual([expect.objectContaining({ kind: 'debit', idempotency_key: `${record.subscription_id}:1` })]);
    expect(await rowsOf(record.user_id, 'pinless')).toEqual([]);
  });

  it('a loan payment writes its debit with the payment, keyed by the loan payment', async () => {
    const user = newUserId();
    const res = await call('POST', {
      route: '/v1/users/{userId}/loans/{loanId}/payments',
      pathParameters: { userId: user, loanId: 'loan-9' },
      body: { amount_cents: 5000, payment_method: 'pinless', account_last_four: '4242' },
      headers: { 'idempotency-key': 'k-1' },
    });
    expect(res.status).toBe(201);
    const paymentId = loanPaymentId(user, 'loan-9', 'k-1');
    expect(await rowsOf(user, 'pinless')).toEqual([
      expect.objectContaining({ kind: 'debit', amount_cents: 5000, record_key: `loan#loan-9#${paymentId}`, idempotency_key: `${paymentId}:1` }),
    ]);
  });
});

describe('ACH outcomes', () => {
  async function submitted(overrides: Partial<BillingRecord> = {}) {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', ...overrides }));
    expect((await attempt(record)).kind).toBe('submitted');
    return { record, confirmation: chargeOf(record.user_id).confirmation_id };
  }
  const outcomes = async (userId: string, day = today()) => (await rowsOf(userId, 'ach', day)).filter((m) => m.kind !== 'debit');

  it('a settlement writes its row dated by the bank; its replay writes no second row', async () => {
    const { record, confirmation } = await submitted();
    const occurred = formatInstant(new Date(app.clock.now().getTime() + DAY));
    const settled = achEventBody(record, 'settled', confirmation, occurred);
    expect((await sendAch(settled)).body).toMatchObject({ status: 'applied', effect: 'settled' });
    expect(await sendAch(settled)).toMatchObject({ status: 200 });
    expect(await sendAch({ ...settled, event_id: `ach_${randomUUID()}` })).toMatchObject({ status: 200 });
    expect(await outcomes(record.user_id, occurred.slice(0, 10))).toEqual([
      expect.objectContaining({ kind: 'settlement', original_transaction_id: confirmation, amount_cents: record.amount_cents, source: `ach:${settled.event_id}` }),
    ]);
  });

  it('a return writes its row with its code', async () => {
    const { record, confirmation } = await submitted();
    expect((await sendAch(achEventBody(record, 'returned', confirmation, formatInstant(app.clock.now()), { return_code: 'R01' }))).status).toBe(200);
    expect(await outcomes(record.user_id)).toEqual([expect.objectContaining({ kind: 'return', return_code: 'R01', original_transaction_id: confirmation })]);
  });

  it('a settlement for another amount is a settlement row that carries the known exception', async () => {
    const { record, confirmation } = await submitted();
    expect((await sendAch(achEventBody(record, 'settled', confirmation, formatInstant(app.clock.now()), { amount_cents: 1500 }))).body).toMatchObject({ effect: 'exception' });
    expect(await outcomes(record.user_id)).toEqual([expect.objectContaining({ kind: 'settlement', amount_cents: 1500, known_exception: 'amount_mismatch' })]);
  });

  it('a refund of an ACHSENT period changes no record and still writes its row', async () => {
    const { record, confirmation } = await submitted();
    const result = await sendAch(achEventBody(record, 'refunded', confirmation, formatInstant(app.clock.now())));
    expect(result.body).toMatchObject({ status: 'ignored' });
    expect((await app.deps.billing.get(record))!.billing_status).toBe('ACHSENT');
    expect(await outcomes(record.user_id)).toEqual([expect.objectContaining({ kind: 'refund', original_transaction_id: confirmation })]);
  });

  it('a second partial refund of a period the first refund marked REFUNDED still writes its row', async () => {
    const { record, confirmation } = await submitted();
    await sendAch(achEventBody(record, 'settled', confirmation, formatInstant(app.clock.now())));
    await sendAch(achEventBody(record, 'refunded', confirmation, formatInstant(app.clock.now()), { amount_cents: 700 }));
    const second = await sendAch(achEventBody(record, 'refunded', confirmation, formatInstant(app.clock.now()), { amount_cents: 300 }));
    expect(second.body).toMatchObject({ status: 'ignored', reason: 'already_applied' });
    expect((await outcomes(record.user_id)).filter((m) => m.kind === 'refund').map((m) => m.amount_cents).sort()).toEqual([300, 700]);
  });

  it('an outcome for a record we do not have writes nothing', async () => {
    const ghost = billingRecord(app, { payment_method: 'ach' });
    await sendAch(achEventBody(ghost, 'settled', 'sim_nobody', formatInstant(app.clock.now())));
    expect(await rowsOf(ghost.user_id, 'ach')).toEqual([]);
  });
});

describe('card outcomes', () => {
  const completed = async () =>
    (await seedRecords(app, cardPeriod(formatInstant(new Date(app.clock.now().getTime() - DAY)), { billing_status: 'COMPLETED', transaction_id: `pi_${randomUUID().slice(0, 8)}`, payment_attempts: 1 })))[0];
  const charge = (record: BillingRecord, overrides: Record<string, unknown>) => ({
    id: `ch_${randomUUID().slice(0, 8)}`,
    object: 'charge',
    payment_intent: record.transaction_id,
    amount: record.amount_cents,
    amount_refunded: record.amount_cents,
    refunded: true,
    metadata: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    ...overrides,
  });

  it('a partial refund changes nothing on the period and writes a refund row of the refunded total, dated by the event', async () => {
    const record = await completed();
    const created = app.clock.now().getTime() - DAY;
    expect(await sendStripe('charge.refunded', charge(record, { amount_refunded: 500, refunded: false }), created)).toMatchObject({ outcome: 'ignored', reason: 'partial_refund' });
    expect(await rowsOf(record.user_id, 'card', dayOf(created))).toEqual([
      expect.objectContaining({ kind: 'refund', amount_cents: 500, original_transaction_id: record.transaction_id, cumulative: true }),
    ]);
  });

  it('a full refund writes its row with the REFUNDED period', async () => {
    const record = await completed();
    expect(await sendStripe('charge.refunded', charge(record, {}))).toMatchObject({ outcome: 'applied' });
    expect(await rowsOf(record.user_id, 'card')).toEqual([expect.objectContaining({ kind: 'refund', amount_cents: record.amount_cents })]);
  });

  it('a dispute with funds withdrawn is a chargeback row; an inquiry writes none', async () => {
    const record = await completed();
    const meta = { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id };
    await sendStripe('charge.dispute.created', { id: 'dp_inq', object: 'dispute', amount: 1999, charge: 'ch_1', payment_intent: record.transaction_id, status: 'warning_needs_response', metadata: meta });
    expect(await rowsOf(record.user_id, 'card')).toEqual([]);
    await sendStripe('charge.dispute.created', { id: `dp_${randomUUID().slice(0, 8)}`, object: 'dispute', amount: 1999, charge: 'ch_1', payment_intent: record.transaction_id, status: 'needs_response', metadata: meta });
    expect(await rowsOf(record.user_id, 'card')).toEqual([expect.objectContaining({ kind: 'chargeback', amount_cents: 1999, original_transaction_id: record.transaction_id })]);
  });

  it('a won dispute writes one reinstatement row, whether closed won, funds reinstated, or both arrive', async () => {
    const record = await completed();
    const meta = { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id };
    const dispute = { id: `dp_${randomUUID().slice(0, 8)}`, object: 'dispute', amount: 1999, charge: 'ch_1', payment_intent: record.transaction_id, metadata: meta };
    await sendStripe('charge.dispute.created', { ...dispute, status: 'needs_response' });
    expect(await sendStripe('charge.dispute.closed', { ...dispute, status: 'won' })).toMatchObject({ outcome: 'applied' });
    await sendStripe('charge.dispute.funds_reinstated', { ...dispute, status: 'won' });
    expect((await rowsOf(record.user_id, 'card')).map((m) => [m.kind, m.amount_cents, m.original_transaction_id]).sort()).toEqual([
      ['chargeback', 1999, record.transaction_id],
      ['dispute_reinstated', 1999, record.transaction_id],
    ]);
    const lost = await completed();
    const lostDispute = { ...dispute, id: `dp_${randomUUID().slice(0, 8)}`, payment_intent: lost.transaction_id, metadata: { user_id: lost.user_id, billing_date: lost.billing_date, subscription_id: lost.subscription_id } };
    await sendStripe('charge.dispute.created', { ...lostDispute, status: 'needs_response' });
    await sendStripe('charge.dispute.closed', { ...lostDispute, status: 'lost' });
    expect((await rowsOf(lost.user_id, 'card')).map((m) => m.kind)).toEqual(['chargeback']);
  });

  it('a refund of an unowed payment on a written-off period writes its row, though the period keeps its status', async () => {
    const [waived] = await seedRecords(app, cardPeriod(formatInstant(new Date(app.clock.now().getTime() - DAY)), { billing_status: 'WAIVED' }));
    const pi = `pi_${randomUUID().slice(0, 8)}`;
    const meta = { user_id: waived.user_id, billing_date: waived.billing_date, subscription_id: waived.subscription_id };
    expect(await sendStripe('payment_intent.succeeded', { id: pi, object: 'payment_intent', amount: 1999, amount_received: 1999, currency: 'usd', metadata: meta })).toMatchObject({ reason: 'exception:unowed_payment' });
    expect(await sendStripe('charge.refunded', { id: 'ch_1', object: 'charge', payment_intent: pi, amount: 1999, amount_refunded: 1999, refunded: true, metadata: meta })).toMatchObject({ outcome: 'ignored', reason: 'transaction_mismatch' });
    expect((await app.deps.billing.get(waived))!.billing_status).toBe('WAIVED');
    expect((await rowsOf(waived.user_id, 'card')).map((m) => [m.kind, m.amount_cents, m.known_exception]).sort()).toEqual([
      ['debit', 1999, 'unowed_payment'],
      ['refund', 1999, undefined],
    ]);
  });

  it('a success the attempt never recorded writes its debit with the completion; a success for another amount carries the known exception', async () => {
    const [pending] = await seedRecords(app, cardPeriod(formatInstant(new Date(app.clock.now().getTime() - DAY))));
    const pi = `pi_${randomUUID().slice(0, 8)}`;
    const meta = { user_id: pending.user_id, billing_date: pending.billing_date, subscription_id: pending.subscription_id };
    expect(await sendStripe('payment_intent.succeeded', { id: pi, object: 'payment_intent', amount: 1999, amount_received: 1999, currency: 'usd', metadata: meta })).toMatchObject({ outcome: 'applied' });
    expect(await rowsOf(pending.user_id, 'card')).toEqual([expect.objectContaining({ kind: 'debit', transaction_id: pi, amount_cents: 1999 })]);

    const [other] = await seedRecords(app, cardPeriod(formatInstant(new Date(app.clock.now().getTime() - DAY))));
    const otherMeta = { user_id: other.user_id, billing_date: other.billing_date, subscription_id: other.subscription_id };
    await sendStripe('payment_intent.succeeded', { id: `pi_${randomUUID().slice(0, 8)}`, object: 'payment_intent', amount: 1999, amount_received: 1000, currency: 'usd', metadata: otherMeta });
    expect(await rowsOf(other.user_id, 'card')).toEqual([expect.objectContaining({ kind: 'debit', amount_cents: 1000, known_exception: 'amount_mismatch' })]);
  });
});
