import { beforeEach, describe, expect, it } from 'vitest';
import { userLockKey } from '../../../src/domain/lock.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { manualPay } from '../../../src/domain/use-cases/manual-pay.js';
import { dueRecord } from '../../support/billing-fixtures.js';
import { memoryAttempt, type MemoryAttempt } from '../../support/memory-ledger.js';
import { seedRecords } from '../../support/seed.js';

const NOW = '2026-12-01T12:00:00.000Z';

describe('manual pay, on the in-memory ledger', () => {
  let m: MemoryAttempt;
  beforeEach(() => {
    m = memoryAttempt(NOW);
  });

  const pay = (record: BillingRecord, idempotencyKey = 'key-1') =>
    manualPay(m.deps, { subscriptionId: record.subscription_id, owner: 'call-1', actor: 'user-self', idempotencyKey });

  it('collects a due period once, stores the Idempotency-Key and releases the lock in its commit', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    const result = await pay(record);
    expect(result.replayed).toBe(false);
    expect(result.outcome.kind).toBe('collected');
    expect(result.subscription).toMatchObject({ billing_status: 'COMPLETED', process: 'MANUAL', payment_attempts: 1, last_request_key: 'key-1' });
    expect(await m.ledger.get(record)).toEqual(result.subscription);
    expect(m.processor.charges().map((c) => c.idempotency_key)).toEqual([`${record.subscription_id}:1`]);
    expect(m.ledger.calls.commit).toBe(2);
    expect(m.locks.calls.release).toBe(1);
    expect(m.locks.get(userLockKey(record.user_id))).toBeUndefined();
  });

  it('answers a repeat of the same Idempotency-Key from the record, with no second charge or write', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    const first = await pay(record);
    const again = await pay(record);
    expect(again.replayed).toBe(true);
    expect(again.subscription).toEqual(first.subscription);
    expect(m.processor.charges()).toHaveLength(1);
    expect(m.ledger.calls.commit).toBe(2);
  });

  it('records a decline as a FAILED period with the bank’s message, never as a billing failure', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'card'));
    m.processor.configure({ users: { [record.user_id]: 'decline:insufficient_funds' } });
    const result = await pay(record);
    expect(result.outcome.kind).toBe('declined');
    const stored = await m.ledger.get(record);
    expect(stored).toMatchObject({ billing_status: 'FAILED', payment_attempts: 1, decline_code: 'insufficient_funds', payment_error: 'The payment was declined by the bank.' });
    expect(stored?.billing_failure_count).toBeUndefined();
    expect(m.ledger.calls.recordBillingFailure).toBe(0);
  });
});
