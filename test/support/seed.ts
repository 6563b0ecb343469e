import { historyRowOf } from '../../src/domain/billing-record.js';
import { userLockKey } from '../../src/domain/lock.js';
import type { BillingLedger } from '../../src/domain/ports/billing-ledger.js';
import type { BillingRecord } from '../../src/domain/records.js';
import type { TestApp } from './app.js';
import { LOCK_LEASE_MS } from './time.js';

/** Where records are seeded: a TestApp (DynamoDB Local) or a memoryAttempt (the in-memory ledger). */
export interface SeedTarget {
  readonly deps: { readonly billing: Pick<BillingLedger, 'commit'> };
}

/**
 * Puts a member's billing periods into the ledger as the memberships consumer leaves them: each
 * record created with its audit row, one transaction each. Answers the records in order, so
 * `const [record] = await seedRecords(app, dueRecord(now, 'ach'))`; the shapes are billing-fixtures'.
 */
export async function seedRecords<T extends BillingRecord[]>(target: SeedTarget, ...records: T): Promise<T> {
  for (const record of records) {
    await target.deps.billing.commit({ writes: [{ kind: 'create', record }], history: [historyRowOf(record)] });
  }
  return records;
}

/** Another invocation holds the user's billing lock for one lease of the test clock. */
export async function holdUserLock(app: TestApp, userId: string): Promise<void> {
  const nowMs = app.clock.now().getTime();
  const taken = await app.deps.locks.tryAcquire(
    { key: userLockKey(userId), owner_name: 'another-invocation', record_version_number: 'held-elsewhere', lease_duration_ms: LOCK_LEASE_MS, lease_expires_at: nowMs + LOCK_LEASE_MS },
    nowMs,
  );
  if (!taken) throw new Error(`lock for ${userId} was already held`);
}

export async function releaseUserLock(app: TestApp, userId: string): Promise<void> {
  await app.deps.locks.release(userLockKey(userId), 'held-elsewhere');
}

/** Every record of the user, newest billing_date first. */
export async function recordsOf(app: TestApp, userId: string): Promise<BillingRecord[]> {
  return (await app.deps.billing.listByUser(userId, { limit: 50 })).items;
}

export async function historyCount(app: TestApp, subscriptionId: string): Promise<number> {
  return (await app.deps.billing.history(subscriptionId, { limit: 100 })).items.length;
}
