import { randomUUID } from 'node:crypto';
import { userLockKey } from '../../src/domain/lock.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createApiHandler } from '../../src/handlers/api.js';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import type { TestApp } from '../support/app.js';
import { httpEvent, responseOf, type HttpEventOptions } from '../support/http-events.js';
import { DAY, LOCK_LEASE_MS } from '../support/time.js';

/** Records and calling helpers for the api handler tests (seed them with support/seed.ts). */

export function instantAt(app: TestApp, offsetMs: number): string {
  return formatInstant(new Date(app.clock.now().getTime() + offsetMs));
}

export function newUserId(): string {
  return `user-${randomUUID().slice(0, 8)}`;
}

let stamp = 0;

/** A billing record as the memberships consumer would have written it; due yesterday by default. */
export function billingRecord(app: TestApp, overrides: Partial<BillingRecord> = {}): BillingRecord {
  stamp += 1;
  return {
    user_id: newUserId(),
    billing_date: instantAt(app, -DAY),
    subscription_id: randomUUID(),
    amount_cents: 1999,
    billing_status: 'PENDING',
    // Distinct per record: two records of one user never share a history key.
    last_run_date: formatInstant(new Date(app.clock.now().getTime() - 40 * DAY), stamp % 1_000_000),
    created_date: instantAt(app, -40 * DAY),
    process: 'UNKNOWN',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: 'pinless',
    account_last_four: '6789',
    payment_attempts: 0,
    version: 0,
    ...overrides,
  };
}

/** Holds the user's billing lock as another invocation would. */
export async function holdLock(app: TestApp, userId: string): Promise<void> {
  const now = app.clock.now().getTime();
  await app.deps.locks.tryAcquire(
    { key: userLockKey(userId), owner_name: 'someone-else', record_version_number: randomUUID(), lease_duration_ms: LOCK_LEASE_MS, lease_expires_at: now + LOCK_LEASE_MS },
    now,
  );
}

export type Caller = (method: string, options?: HttpEventOptions) => Promise<ReturnType<typeof responseOf>>;

/** Calls the api handler with an HTTP API v2 event and parses the answer. */
export function callerFor(app: TestApp): Caller & { raw: (event: HttpEvent) => Promise<ReturnType<typeof responseOf>> } {
  const handler = createApiHandler(app.depsFor('api'));
  const raw = async (event: HttpEvent) => responseOf(await handler(event));
  const call = (async (method: string, options: HttpEventOptions = {}) =>
    raw(httpEvent(method, { timeEpoch: app.clock.now().getTime(), ...options }))) as Caller & { raw: typeof raw };
  call.raw = raw;
  return call;
}
