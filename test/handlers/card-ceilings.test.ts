import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defaultInstruments } from '../../src/adapters/processor/simulator.js';
import { cardInstrumentId, type Presentment } from '../../src/domain/instruments/instrument.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { makeLoanPayment } from '../../src/domain/use-cases/make-loan-payment.js';
import { retryLoanPayment } from '../../src/domain/use-cases/retry-loan-payment.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { callerFor } from './api-fixtures.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { sqsEvent, sqsRecord } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { DAY, HOUR } from '../support/time.js';

/**
 * Network ceilings per card (DESIGN 3.2, 5b): counted from the instruments item over subscriptions
 * and loans together, merchant- and customer-initiated apart. DynamoDB Local, the simulator as the
 * payments service (pinless cards; the simulator's default card is a Visa).
 */

const NOW = '2026-12-01T12:00:00.000Z';
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'card-ceilings', now: NOW });
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve' });
});

const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const reread = async (key: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(key))!;
const cardOf = (userId: string) => cardInstrumentId('pinless', defaultInstruments(userId).pinless!.fingerprint);

async function scheduled(record: Pick<BillingRecord, 'user_id' | 'billing_date' | 'subscription_id'>): Promise<void> {
  const body = { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: formatInstant(app.clock.now()) };
  await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(body)]));
}

/** `n` merchant-initiated declines of the card over the `spanMs` before now, as earlier periods and loan payments left them. */
async function declinedBefore(userId: string, n: number, spanMs: number, extra: Presentment[] = []): Promise<void> {
  const now = app.clock.now().getTime();
  const list: Presentment[] = Array.from({ length: n }, (_, i) => ({
    at: formatInstant(new Date(now - spanMs + (i * spanMs) / n)),
    initiated: 'merchant',
    reference: i % 2 === 0 ? 'subscription:earlier' : 'loan_payment:earlier',
    decline_class: 'retry_later',
  }));
  const all = [...extra, ...list];
  for (const [i, presentment] of all.entries()) {
    await app.deps.instruments.write({ user_id: userId, presentments: [{ instrument_id: cardOf(userId), presentment }], ...(i === 0 ? { seen: [{ instrument_id: cardOf(userId), rail: 'pinless', fingerprint: defaultInstruments(userId).pinless!.fingerprint, brand: 'visa' }] } : {}) });
  }
}

const pinlessLoan = (userId: string, loanId = `loan-${randomUUID().slice(0, 8)}`) => ({
  user_id: userId,
  loan_id: loanId,
  payment_id: `pay_${randomUUID().replaceAll('-', '')}`,
  amount_cents: 4200,
  payment_method: 'pinless' as const,
});

describe('Visa 20 declines in 30 days, over a subscription and a loan on the same card', () => {
  it('the loan retry and the period each add a decline; then the schedule and the loan retry wait for the window, a manual pay does not', async () => {
    const first = dueRecord(app.clock.now(), 'pinless');
    const earlier = formatInstant(new Date(app.clock.now().getTime() - 2 * HOUR));
    // Another chain of the same user on the same card.
    const [a, second] = await seedRecords(app, first, dueRecord(app.clock.now(), 'pinless', { user_id: first.user_id, billing_date: earlier, last_run_date: earlier }));
    const userId = a!.user_id;
    await declinedBefore(userId, 18, 20 * DAY);
    app.simulator.configure({ default: 'approve', users: { [userId]: 'decline:insufficient_funds' } });

    // A customer's loan payment declines: customer-initiated, counted apart.
    const loan = await makeLoanPayment(app.depsFor('api'), pinlessLoan(userId));
    expect(loan.payment.loc_status).toBe('RETRY');
    // The loan's automatic retry declines: merchant decline 19.
    app.clock.set(loan.payment.loc_next_attempt_at!);
    const retried = await retryLoanPayment(app.depsFor('batch-worker'), { user_id: userId, loan_id: loan.payment.loc_loan_id, payment_id: loan.payment.loc_payment_id, owner: 'test' });
    expect(retried.kind).toBe('retry_scheduled');
    // The first period's scheduled attempt declines: merchant decline 20.
    await scheduled(a!);
    expect((await reread(a!)).billing_status).toBe('FAILED');
    const item = await app.deps.instruments.get(userId);
    const declines = item.presentments[cardOf(userId)]!.filter((p) => p.decline_class !== undefined);
    expect(declines.filter((p) => p.initiated === 'merchant')).toHaveLength(20);
    expect(declines.filter((p) => p.initiated === 'customer')).toHaveLength(1);
    expect(new Set(declines.slice(-3).map((p) => p.reference?.split(':')[0]))).toEqual(new Set(['loan_payment', 'subscription']));
    const charged = chargesOf(userId).length;

    // The other period on the same card: refused by Visa's ceiling, written once, keyed when it frees up.
    await scheduled(second!);
    const refused = await reread(second!);
    const freeAt = Date.parse(declines.find((p) => p.initiated === 'merchant')!.at) + 30 * DAY;
    expect(refused).toMatchObject({ billing_status: 'PENDING', decided_by: 'visa.ceiling_30d', ceiling_until: formatInstant(new Date(freeAt)) });
    expect(refused.held_on).toBeUndefined();
    const raw = await app.db.client.send(new GetItemCommand({ TableName: app.db.tables.billingActivity, Key: { user_id: { S: userId }, billing_date: { S: second!.billing_date } } }));
    expect(raw.Item?.due_at?.S).toBe(refused.ceiling_until);
    expect(raw.Item?.held_shard).toBeUndefined();
    const history = (await app.deps.billing.history(second!.subscription_id)).items;
    expect(history[0]).toMatchObject({ billing_event: 'CEILING_REACHED', decided_by: 'visa.ceiling_30d' });
    // Read again before it frees up (a redelivery): nothing more written.
    await scheduled(second!);
    expect((await reread(second!)).version).toBe(refused.version);

    // The loan's next retry waits for the same window; its audit row names the rule.
    const current = (await app.deps.payments.get(userId, loan.payment.loc_loan_id, loan.payment.loc_payment_id))!;
    app.clock.set(formatInstant(new Date(Math.max(app.clock.now().getTime(), Date.parse(current.loc_next_attempt_at!)))));
    const waits = await retryLoanPayment(app.depsFor('batch-worker'), { user_id: userId, loan_id: loan.payment.loc_loan_id, payment_id: loan.payment.loc_payment_id, owner: 'test' });
    expect(waits).toMatchObject({ kind: 'ceiling', payment: { loc_status: 'RETRY', loc_next_attempt_at: formatInstant(new Date(freeAt)) } });
    const loanHistory = (await app.deps.payments.listHistory(userId, loan.payment.loc_loan_id, loan.payment.loc_payment_id)).items;
    expect(loanHistory[0]).toMatchObject({ decided_by: 'visa.ceiling_30d' });
    expect(chargesOf(userId)).toHaveLength(charged);

    // The customer asking is counted apart: one customer decline is far from the ceiling.
    app.simulator.configure({ default: 'approve' });
    const pay = await callerFor(app)('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: second!.subscription_id }, headers: { 'Idempotency-Key': `pay-${userId}` } });
    expect(pay.status).toBe(200);
    expect(chargesOf(userId)).toHaveLength(charged + 1);
  });

  it('a person asking at the customer-initiated ceiling is refused 409 network_ceiling with decided_by, and the refusal is audited', async () => {
    const [period] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    const userId = period!.user_id;
    const customer: Presentment[] = Array.from({ length: 20 }, (_, i) => ({ at: formatInstant(new Date(app.clock.now().getTime() - (i + 1) * HOUR)), initiated: 'customer', decline_class: 'retry_later' }));
    await declinedBefore(userId, 0, DAY, customer);
    const pay = await callerFor(app)('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: period!.subscription_id }, headers: { 'Idempotency-Key': `pay-${userId}` } });
    expect([pay.status, pay.body.error?.code, pay.body.error?.decided_by]).toEqual([409, 'network_ceiling', 'visa.ceiling_30d']);
    expect(chargesOf(userId)).toHaveLength(0);
    const audit = (await app.deps.billing.history(period!.subscription_id)).items[0];
    expect(audit).toMatchObject({ billing_event: 'PAYMENT_REFUSED', decided_by: 'visa.ceiling_30d', billing_status: 'PENDING' });
    const loan = makeLoanPayment(app.depsFor('api'), pinlessLoan(userId));
    await expect(loan).rejects.toMatchObject({ code: 'network_ceiling', decidedBy: 'visa.ceiling_30d' });
    // The schedule (merchant-initiated) is not bound by the customer's count.
    await scheduled(period!);
    expect((await reread(period!)).billing_status).toBe('COMPLETED');
  });
});

describe('Mastercard 10 declines in 24 hours', () => {
  it('the 11th merchant attempt within a day is refused with mastercard.ceiling_24h and keyed 24 hours after the oldest', async () => {
    const [period] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    const userId = period!.user_id;
    const fingerprint = defaultInstruments(userId).pinless!.fingerprint;
    app.simulator.configure({ default: 'approve', accounts: { [userId]: { status: 'active', instruments: { pinless: { fingerprint, brand: 'mastercard' } } } } });
    await declinedBefore(userId, 10, 20 * HOUR);
    await scheduled(period!);
    const refused = await reread(period!);
    expect(refused).toMatchObject({ billing_status: 'PENDING', decided_by: 'mastercard.ceiling_24h', ceiling_until: formatInstant(new Date(app.clock.now().getTime() - 20 * HOUR + DAY)) });
    expect(chargesOf(userId)).toHaveLength(0);
    // Once the window frees up the period is collected as any due period is.
    app.clock.set(refused.ceiling_until!);
    await scheduled(period!);
    expect((await reread(period!)).billing_status).toBe('COMPLETED');
  });
});

describe('presentments pruned past 30 days', () => {
  it('the attempt that read the item writes the list back without what is past the window, in the same request', async () => {
    const [period] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    const userId = period!.user_id;
    const old: Presentment[] = Array.from({ length: 5 }, (_, i) => ({ at: formatInstant(new Date(app.clock.now().getTime() - (31 + i) * DAY)), initiated: 'merchant', decline_class: 'retry_later' }));
    await declinedBefore(userId, 2, 2 * DAY, old);
    expect((await app.deps.instruments.get(userId)).presentments[cardOf(userId)]).toHaveLength(7);
    await scheduled(period!);
    expect((await reread(period!)).billing_status).toBe('COMPLETED');
    const list = (await app.deps.instruments.get(userId)).presentments[cardOf(userId)]!;
    expect(list).toHaveLength(3);
    expect(list.every((p) => Date.parse(p.at) > app.clock.now().getTime() - 30 * DAY)).toBe(true);
    expect(list.at(-1)).toMatchObject({ at: formatInstant(app.clock.now()), initiated: 'merchant', reference: `subscription:${period!.subscription_id}` });
    expect(list.at(-1)?.decline_class).toBeUndefined();
  });
});
