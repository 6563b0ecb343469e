import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCollectionAttempt, type AttemptRequest } from '../../../src/domain/use-cases/collect.js';
import type { UseCaseDeps } from '../../../src/domain/use-cases/deps.js';
import { TransientError } from '../../../src/domain/errors.js';
import { acquireUserLock } from '../../../src/domain/lock.js';
import { retryBilling } from '../../../src/domain/use-cases/retry-billing.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { makeRecord } from '../../support/billing-fixtures.js';
import { seedRecords } from '../../support/seed.js';
import { BILLING_RETRY_WAITS_MS, HOUR } from '../../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';

/** A processor that can be told to fail once after the simulator accepted (a crash before the write). */
class CrashAfterAccept implements PaymentProcessor {
  crashNext = false;
  constructor(private readonly inner: PaymentProcessor) {}
  async submit(request: PaymentRequest): Promise<PaymentResult> {
    const result = await this.inner.submit(request);
    if (this.crashNext) {
      this.crashNext = false;
      throw new TransientError('connection lost after the processor accepted');
    }
    return result;
  }
}

describe('the collection attempt on DynamoDB Local', () => {
  let app: TestApp;
  let deps: UseCaseDeps;
  let crashing: CrashAfterAccept;

  beforeAll(async () => {
    app = await createTestApp({ label: 'attempt', now: NOW });
    crashing = new CrashAfterAccept(app.simulator);
    deps = { ...app.deps, processor: crashing, onError: (e, c) => { if (process.env.DEBUG_ATTEMPT) console.error(c, e); } };
  });

  beforeEach(() => {
    app.clock.set(NOW);
    app.simulator.configure({ default: 'approve' });
  });

  /** A fresh member's period, due an hour before NOW. */
  const duePeriod = (overrides: Partial<BillingRecord> = {}) =>
    makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) - HOUR)), version: 0, ...overrides });

  const attempt = (record: BillingRecord, extra: Partial<AttemptRequest> = {}) =>
    runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test', ...extra });

  const chargesFor = (record: BillingRecord) => app.simulator.charges().filter((c) => c.user_id === record.user_id);

  it('collects a due pinless record, completes it and opens the next period in the same transaction', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    const outcome = await attempt(record);
    expect(outcome.kind).toBe('collected');
    const stored = await app.deps.billing.get(record);
    expect(stored).toMatchObject({ billing_status: 'COMPLETED', payment_attempts: 1, payment_error: '', version: 1 });
    expect(stored?.transaction_id).toBe(chargesFor(record)[0]?.confirmation_id);
    const { items } = await app.deps.billing.listByUser(record.user_id);
    expect(items.map((r) => r.billing_date)).toEqual(['2027-01-01T11:00:00.000000000Z', record.billing_date]);
    expect(items[0]).toMatchObject({ billing_status: 'PENDING', payment_attempts: 0 });
    const history = await app.deps.billing.history(record.subscription_id);
    expect(history.items[0]).toMatchObject({ billing_status: 'COMPLETED', data_payment_method: 'pinless' });
  });

  it('submits an ACH debit as ACHSENT with the idempotency key {subscription_id}:1', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'ach' }));
    expect((await attempt(record)).kind).toBe('submitted');
    expect((await app.deps.billing.get(record))?.billing_status).toBe('ACHSENT');
    expect(chargesFor(record).map((c) => c.idempotency_key)).toEqual([`${record.subscription_id}:1`]);
  });

  it('records a decline as FAILED with the decline text, due again 24 h after the attempt', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    app.simulator.configure({ users: { [record.user_id]: 'decline' } });
    expect((await attempt(record)).kind).toBe('declined');
    const failed = await app.deps.billing.get(record);
    expect(failed).toMatchObject({ billing_status: 'FAILED', payment_error: 'The payment was declined by the bank.' });
    app.clock.advance(23 * HOUR);
    expect(await attempt(record, { process: 'RETRY' })).toMatchObject({ kind: 'not_due', reason: 'not_yet_due' });
    app.clock.advance(HOUR);
    app.simulator.configure({ default: 'approve' });
    expect((await attempt(record, { process: 'RETRY' })).kind).toBe('collected');
    const { items } = await app.deps.billing.listByUser(record.user_id);
    expect(items).toHaveLength(2); // the next period was opened once, when the record left PENDING
  });

  it('answers not_due for a future record and writes nothing', async () => {
    const [record] = await seedRecords(app, duePeriod({ billing_date: '2026-12-05T00:00:00.000000000Z' }));
    expect(await attempt(record)).toMatchObject({ kind: 'not_due', reason: 'not_yet_due' });
    expect((await app.deps.billing.get(record))?.version).toBe(0);
    expect(chargesFor(record)).toHaveLength(0);
  });

  it('skips without touching the record when another invocation holds the lock', async () => {
    const [record] = await seedRecords(app, duePeriod());
    const held = await acquireUserLock(app.deps.locks, app.clock, record.user_id, 'other', { newVersion: () => crypto.randomUUID() });
    try {
      expect((await attempt(record)).kind).toBe('skipped_locked');
      expect((await app.deps.billing.get(record))?.version).toBe(0);
    } finally {
      await held.release();
    }
  });

  it('repairs a crash after the processor accepted: the next attempt re-sends the same key and records one charge', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    crashing.crashNext = true;
    expect(await attempt(record)).toMatchObject({ kind: 'failed_uncounted', class: 'transient' });
    expect((await app.deps.billing.get(record))?.billing_status).toBe('PENDING');
    expect((await attempt(record)).kind).toBe('collected');
    expect(chargesFor(record)).toHaveLength(1);
    expect((await app.deps.billing.get(record))?.transaction_id).toBe(chargesFor(record)[0]?.confirmation_id);
  });

  it('saves counted failures on the ladder, skips while waiting, and parks on the eighth', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    for (let n = 1; n <= 8; n++) {
      const outcome = await attempt(record);
      expect(outcome.kind).toBe('failed_counted');
      if (outcome.kind !== 'failed_counted') return;
      expect(outcome.failure.count).toBe(n);
      expect(outcome.failure.last_error).toBe('The payment processor is unavailable.');
      if (n < 8) {
        expect(outcome.failure.state).toBe('retrying');
        expect(await attempt(record)).toMatchObject({ kind: 'not_due', reason: 'waiting' });
        app.clock.advance(BILLING_RETRY_WAITS_MS[n - 1]!);
      } else {
        expect(outcome.failure.state).toBe('parked');
      }
    }
    app.clock.advance(30 * 24 * HOUR);
    expect(await attempt(record)).toMatchObject({ kind: 'not_due', reason: 'parked' });
    expect(chargesFor(record)).toHaveLength(0);

    app.simulator.configure({ default: 'approve' });
    const retried = await retryBilling(deps, { subscriptionId: record.subscription_id, owner: 'operator', actor: 'ops@example.com', reason: 'processor fixed' });
    expect(retried).toMatchObject({ outcome: 'billed', still_due: false });
    expect(retried.billing_failure).toBeUndefined();
    const history = await app.deps.billing.history(record.subscription_id, { limit: 100 });
    expect(history.items.some((row) => row.updated_event === 'BILLING_RETRY_REQUESTED' && row.actor === 'ops@example.com')).toBe(true);
  });

  it('does not count a transient failure on the ladder', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    const flaky: UseCaseDeps = {
      ...deps,
      processor: { submit: async () => Promise.reject(new TransientError('throttled')) },
    };
    expect(await runCollectionAttempt(flaky, { key: record, process: 'SCHEDULED', owner: 't' })).toMatchObject({ kind: 'failed_uncounted' });
    const stored = await app.deps.billing.get(record);
    expect(stored?.billing_failure_count).toBeUndefined();
    expect(stored?.version).toBe(0);
  });

  it('operator retry answers failed with a fresh count of 1 when the attempt fails again', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    await attempt(record);
    await attempt(record, {}); // waiting: not counted
    const retried = await retryBilling(deps, { subscriptionId: record.subscription_id, owner: 'operator', actor: 'ops' });
    expect(retried.outcome).toBe('failed');
    expect(retried.billing_failure).toMatchObject({ count: 1, state: 'retrying' });
    expect(retried.still_due).toBe(false);
  });

  it('operator retry answers still_due when the attempt fails transiently after the clear', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'pinless' }));
    const flaky: UseCaseDeps = { ...deps, processor: { submit: async () => Promise.reject(new TransientError('connection reset')) } };
    const retried = await retryBilling(flaky, { subscriptionId: record.subscription_id, owner: 'operator' });
    expect(retried).toMatchObject({ outcome: 'still_due', still_due: true });
    expect(retried.billing_failure).toBeUndefined();
  });

  it('closes the balance gate on the scheduled path as a decline without presenting to the bank', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'ach', amount_cents: 5000 }));
    app.simulator.configure({ accounts: { [record.user_id]: { status: 'active', available_balance_cents: 1000, institution_id: 'ins_1' } } });
    const outcome = await attempt(record);
    expect(outcome.kind).toBe('declined');
    expect(chargesFor(record)).toHaveLength(0);
    const stored = await app.deps.billing.get(record);
    expect(stored).toMatchObject({ billing_status: 'FAILED', payment_error: 'Insufficient available balance.', payment_attempts: 0 });
    const [row] = (await app.deps.billing.history(record.subscription_id)).items;
    expect(row).toMatchObject({ data_available_balance_cents: 1000, data_balance_source: 'available', data_institution_id: 'ins_1' });
    expect(row?.data_calc_available_balance_cents).toBeUndefined();
  });

  it('writes nothing when the balance-webhook gate is closed', async () => {
    const [record] = await seedRecords(app, duePeriod({ payment_method: 'ach', amount_cents: 5000 }));
    const outcome = await attempt(record, {
      process: 'BALANCE_WEBHOOK',
      balance: { available_balance_cents: 100, current_balance_cents: 100, threshold_cents: 2000 },
    });
    expect(outcome.kind).toBe('gate_closed');
    expect((await app.deps.billing.get(record))?.version).toBe(0);
  });

  it('marks the record INACTIVE when the account is banned', async () => {
    const [record] = await seedRecords(app, duePeriod());
    app.simulator.configure({ accounts: { [record.user_id]: { status: 'banned' } } });
    expect((await attempt(record)).kind).toBe('inactive');
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'INACTIVE', updated_event: 'USER_BANNED' });
    expect(chargesFor(record)).toHaveLength(0);
  });

  it('completes a requested cancel at its billing date instead of collecting', async () => {
    const [record] = await seedRecords(app, duePeriod({ updated_event: 'CANCEL_REQUESTED' }));
    expect((await attempt(record)).kind).toBe('cancelled');
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED' });
    expect((await app.deps.billing.listByUser(record.user_id)).items).toHaveLength(1);
    expect(chargesFor(record)).toHaveLength(0);
  });

  it('advances an expired pause: SKIPPED, and the next period (a calendar month later) stays PAUSED while months remain', async () => {
    const [record] = await seedRecords(app, duePeriod({ billing_status: 'PAUSED', paused_months: 2 }));
    expect((await attempt(record, { process: 'PAUSE' })).kind).toBe('pause_advanced');
    const { items } = await app.deps.billing.listByUser(record.user_id);
    expect(items.map((r) => [r.billing_status, r.paused_months])).toEqual([
      ['PAUSED', 1],
      ['SKIPPED', undefined],
    ]);
  });

  it('never skips a paused period on a payment path: manual pay and the balance webhook leave it alone', async () => {
    const [record] = await seedRecords(app, duePeriod({ billing_status: 'PAUSED', paused_months: 1 }));
    expect(await attempt(record, { process: 'MANUAL' })).toMatchObject({ kind: 'not_due', reason: 'status' });
    expect(
      await attempt(record, { process: 'BALANCE_WEBHOOK', balance: { available_balance_cents: 10_000, current_balance_cents: 10_000, threshold_cents: 0 } }),
    ).toMatchObject({ kind: 'not_due', reason: 'status' });
    expect((await app.deps.billing.get(record))?.version).toBe(0);
  });
});
