import { historyRowOf } from '../../src/domain/billing-record.js';
import { userLockKey } from '../../src/domain/lock.js';
import type { BillingRecord } from '../../src/domain/records.js';
import type { TestApp } from './app.js';
import { LOCK_LEASE_MS } from './time.js';

/** Puts records (each with its audit row) through the real BillingStore. */
export async function seedRecords(app: TestApp, ...records: BillingRecord[]): Promise<void> {
  for (const record of records) {
    await app.deps.billing.commit({ writes: [{ kind: 'create', record }], history: [historyRowOf(record)] });
  }
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
