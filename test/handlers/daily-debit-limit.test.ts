import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { personDebitKeyOf } from '../../src/adapters/dynamodb/person-debit-store.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { loanPaymentId } from '../../src/handlers/api/loans.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { ConfigError, DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS, personDebitLimitSetting } from '../../src/runtime/config.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { seedRecords } from '../support/seed.js';
import { DAY, HOUR } from '../support/time.js';
import { billingRecord, callerFor, instantAt, newUserId, type Caller } from './api-fixtures.js';

/**
 * DESIGN 15: what paths a person starts (manual pay, retry-billing, loan payments) may debit one
 * member in a UTC day is capped by PERSON_DAILY_DEBIT_LIMIT_CENTS (here $50): above it, 409
 * `daily_debit_limit`, nothing presented and nothing written. Attempts that move no money give
 * their reservation back; the scheduled path never touches the counter.
 */

const LIMIT = 5000;
let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'daily-debit-limit', settings: { personDailyDebitLimitCents: LIMIT } });
  call = callerFor(app);
});

beforeEach(() => {
  app.clock.set('2026-12-03T12:00:00.000Z');
  app.simulator.configure({});
});

const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const pay = (record: BillingRecord) =>
  call('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: record.subscription_id }, headers: { 'idempotency-key': `k-${randomUUID()}` } });
const retry = (record: BillingRecord) => call('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'operator retry' } });
const loanPayment = (userId: string, cents: number, key: string) =>
  call('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId, loanId: 'loan-1' }, body: { amount_cents: cents, payment_method: 'pinless', account_last_four: '4242' }, headers: { 'idempotency-key': key } });

async function counted(userId: string): Promise<number | undefined> {
  const day = app.clock.now().toISOString().slice(0, 10);
  const item = (await app.db.client.send(new GetItemCommand({ TableName: app.db.tables.locks, Key: { PartitionKey: { S: personDebitKeyOf(userId, day) } }, ConsistentRead: true }))).Item;
  return item?.debited_cents?.N !== undefined ? Number(item.debited_cents.N) : undefined;
}

/** Two due periods of one member, $30 each: together past the $50 cap. */
async function twoDuePeriods(): Promise<[BillingRecord, BillingRecord]> {
  const userId = newUserId();
  const [a, b] = await seedRecords(
    app,
    billingRecord(app, { user_id: userId, amount_cents: 3000, billing_date: instantAt(app, -2 * DAY) }),
    billingRecord(app, { user_id: userId, amount_cents: 3000, billing_date: instantAt(app, -DAY) }),
  );
  return [a!, b!];
}

describe('daily cap on debits people start (409 daily_debit_limit)', () => {
  it('refuses a manual pay that would pass the cap: nothing presented, the period and its history unchanged', async () => {
    const [first, second] = await twoDuePeriods();
    expect((await pay(first)).body).toMatchObject({ outcome: 'collected' });
    expect(await counted(first.user_id)).toBe(3000);
    const history = (await app.deps.billing.history(second.subscription_id)).items;

    const refused = await pay(second);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('daily_debit_limit');
    expect(chargesOf(first.user_id)).toHaveLength(1);
    expect(await app.deps.billing.get(second)).toEqual(second);
    expect((await app.deps.billing.history(second.subscription_id)).items).toEqual(history);
    expect(await counted(first.user_id)).toBe(3000);
  });

  it('counts a new UTC day from zero', async () => {
    const [first, second] = await twoDuePeriods();
    expect((await pay(first)).body).toMatchObject({ outcome: 'collected' });
    expect((await pay(second)).status).toBe(409);
    app.clock.advance(DAY);
    expect((await pay(second)).body).toMatchObject({ outcome: 'collected' });
  });

  it('gives back what a declined attempt reserved: the member may pay after a decline', async () => {
    const [first, second] = await twoDuePeriods();
    app.simulator.configure({ users: { [first.user_id]: 'decline' } });
    expect((await pay(first)).body).toMatchObject({ outcome: 'declined' });
    expect(await counted(first.user_id)).toBe(0);
    app.simulator.configure({});
    expect((await pay(first)).body).toMatchObject({ outcome: 'collected' });
    expect((await pay(second)).status).toBe(409);
  });

  it('counts an operator retry-billing and refuses one past the cap before the failure is cleared', async () => {
    const userId = newUserId();
    const failed = { billing_status: 'FAILED' as const, payment_attempts: 1, billing_failure_count: 1, billing_failed_for: 'x:1', billing_failed_at: instantAt(app, -HOUR), billing_last_error: 'The payment processor is unavailable.' };
    const [a, b] = await seedRecords(
      app,
      billingRecord(app, { user_id: userId, amount_cents: 3000, billing_date: instantAt(app, -2 * DAY), ...failed }),
      billingRecord(app, { user_id: userId, amount_cents: 3000, billing_date: instantAt(app, -DAY), ...failed }),
    );
    expect((await retry(a!)).body).toMatchObject({ outcome: 'billed' });
    const refused = await retry(b!);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('daily_debit_limit');
    expect(await app.deps.billing.get(b!)).toEqual(b);
    expect(chargesOf(userId)).toHaveLength(1);
  });

  it('counts each item of an operator\'s bulk retry run: the one past the cap is skipped daily_debit_limit, nothing charged or cleared', async () => {
    const userId = newUserId();
    const parked = (due: string) => ({ billing_date: due, billing_failed_for: `${due}#0`, billing_failure_count: 8, billing_failed_at: instantAt(app, -DAY), billing_last_error: 'The payment processor is unavailable.' });
    const [a, b] = await seedRecords(
      app,
      billingRecord(app, { user_id: userId, amount_cents: 3000, ...parked(instantAt(app, -5 * DAY)) }),
      billingRecord(app, { user_id: userId, amount_cents: 3000, ...parked(instantAt(app, -4 * DAY)) }),
    );
    app.retryRunsQueue.clear();
    const started = await call('POST', { route: '/v1/billing/retry-runs', body: { state: 'parked', reason: 'bulk after an outage' }, headers: { 'Idempotency-Key': randomUUID() } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const ids = new Set([a!.subscription_id, b!.subscription_id]);
    const mine = app.retryRunsQueue.sent
      .filter((m) => [...ids].some((id) => m.body.includes(id)))
      .map((m) => sqsRecord(m.body, { messageId: randomUUID(), queue: 'test-retry-runs' }));
    expect(mine).toHaveLength(2);
    const out = await createRetryRunWorkerHandler(app.depsFor('retry-run-worker'))(sqsEvent(mine), lambdaContext());
    expect(out.batchItemFailures).toEqual([]);
    expect(chargesOf(userId)).toHaveLength(1);
    expect(await counted(userId)).toBe(3000);
    const untouched = [await app.deps.billing.get(a!), await app.deps.billing.get(b!)].filter((r) => r?.billing_failure_count === 8);
    expect(untouched).toHaveLength(1);
  });

  it('counts loan payments with manual pays, and refuses one past the cap without creating it', async () => {
    const [period] = await twoDuePeriods();
    expect((await pay(period)).body).toMatchObject({ outcome: 'collected' });
    expect((await loanPayment(period.user_id, 2000, 'loan-key-1')).status).toBe(201);
    expect(await counted(period.user_id)).toBe(5000);
    const refused = await loanPayment(period.user_id, 1, 'loan-key-2');
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('daily_debit_limit');
    expect(await app.deps.payments.get(period.user_id, 'loan-1', loanPaymentId(period.user_id, 'loan-1', 'loan-key-2'))).toBeUndefined();
    // A repeat of a payment already made is answered as it was: nothing new is debited.
    expect((await loanPayment(period.user_id, 2000, 'loan-key-1')).status).toBe(200);
  });

  it('refuses a single payment above the cap', async () => {
    const refused = await loanPayment(newUserId(), LIMIT + 1, 'too-much');
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('daily_debit_limit');
  });

  it('leaves the scheduled path alone: a batch-worker collection neither reads nor writes the counter', async () => {
    const [first, second] = await twoDuePeriods();
    const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
    for (const record of [first, second]) {
      const body = JSON.stringify({ user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: instantAt(app, 0) });
      expect((await worker(sqsEvent([sqsRecord(body)]), lambdaContext())).batchItemFailures).toEqual([]);
    }
    expect(chargesOf(first.user_id)).toHaveLength(2);
    expect(await counted(first.user_id)).toBeUndefined();
  });
});

describe('PERSON_DAILY_DEBIT_LIMIT_CENTS', () => {
  it('defaults when absent or empty, takes whole cents, refuses anything else at cold start', () => {
    expect(personDebitLimitSetting({})).toBe(DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS);
    expect(personDebitLimitSetting({ PERSON_DAILY_DEBIT_LIMIT_CENTS: '' })).toBe(DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS);
    expect(personDebitLimitSetting({ PERSON_DAILY_DEBIT_LIMIT_CENTS: '500000' })).toBe(500_000);
    for (const bad of ['0', '-1', '5.5', '5e3', 'lots']) expect(() => personDebitLimitSetting({ PERSON_DAILY_DEBIT_LIMIT_CENTS: bad })).toThrow(ConfigError);
  });
});
