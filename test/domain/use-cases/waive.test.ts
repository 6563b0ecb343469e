import { beforeEach, describe, expect, it } from 'vitest';
import { LockedError, PaymentHoldError } from '../../../src/domain/errors.js';
import { dueKey } from '../../../src/domain/ladder.js';
import { userLockKey } from '../../../src/domain/lock.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { waive } from '../../../src/domain/use-cases/waive.js';
import { dueRecord } from '../../support/billing-fixtures.js';
import { memoryAttempt, type MemoryAttempt } from '../../support/memory-ledger.js';
import { seedRecords } from '../../support/seed.js';

const NOW = '2026-12-01T12:00:00.000Z';

describe('waive, on the in-memory ledger', () => {
  let m: MemoryAttempt;
  beforeEach(() => {
    m = memoryAttempt(NOW);
  });

  const request = (record: BillingRecord) => ({ subscriptionId: record.subscription_id, owner: 'op-call', actor: 'op-1', reason: 'goodwill' });

  it('writes a due period off with its actor and reason, opens the next period and frees the lock', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'pinless'));
    const after = await waive(m.deps, request(record));
    expect(after).toMatchObject({ billing_status: 'WAIVED', version: record.version + 1 });
    const [waived, next] = m.ledger.recordsOf(record.user_id);
    expect(waived).toMatchObject({ billing_status: 'WAIVED', subscription_id: record.subscription_id });
    expect(next).toMatchObject({ billing_status: 'PENDING', user_id: record.user_id, version: 0 });
    expect(next!.subscription_id).not.toBe(record.subscription_id);
    expect(Date.parse(next!.billing_date)).toBeGreaterThan(Date.parse(record.billing_date));
    expect(m.ledger.rowsOf(record.user_id).filter((r) => r.billing_status === 'WAIVED')).toEqual([
      expect.objectContaining({ actor: 'op-1', reason: 'goodwill', subscription_id: record.subscription_id }),
    ]);
    expect(m.processor.charges()).toHaveLength(0);
    expect(m.locks.get(userLockKey(record.user_id))).toBeUndefined();
  });

  it('opens no second successor for a FAILED period (it opened one when it left PENDING)', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'pinless', { billing_status: 'FAILED', payment_attempts: 1 }));
    await waive(m.deps, request(record));
    expect(m.ledger.recordsOf(record.user_id).map((r) => r.billing_status)).toEqual(['WAIVED']);
  });

  it('refuses a period whose key the processor may hold, and writes nothing', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'pinless', { billing_status: 'FAILED', payment_attempts: 1 }));
    const presented = { ...record, billing_presented_for: dueKey(record) };
    m.ledger.put(presented);
    const refused = waive(m.deps, request(record));
    await expect(refused).rejects.toBeInstanceOf(PaymentHoldError);
    await expect(refused).rejects.toMatchObject({ code: 'attempt_outcome_unknown' });
    expect(m.ledger.recordsOf(record.user_id)).toEqual([presented]);
    expect(m.ledger.calls.commit).toBe(1);
    expect(m.locks.get(userLockKey(record.user_id))).toBeUndefined();
  });

  it('answers LockedError while another invocation holds the user, and changes nothing', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'pinless'));
    const held = { key: userLockKey(record.user_id), owner_name: 'other', record_version_number: 'v-other', lease_duration_ms: 60_000, lease_expires_at: Date.parse(NOW) + 60_000 };
    m.locks.put(held);
    await expect(waive(m.deps, request(record))).rejects.toBeInstanceOf(LockedError);
    expect(m.ledger.recordsOf(record.user_id)).toEqual([record]);
    expect(m.locks.get(held.key)).toEqual(held);
  });
});
