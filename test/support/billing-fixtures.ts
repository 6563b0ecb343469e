import { randomUUID } from 'node:crypto';
import type { BillingRecord, HistoryRow } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { DAY, HOUR } from './time.js';

/** Instants for fixtures: `instantAt(0)` is 2026-11-01T00:00:00Z, `instantAt(n)` n ms later. */
export function instantAt(offsetMs: number): string {
  return formatInstant(new Date(Date.UTC(2026, 10, 1) + offsetMs));
}

export const dayAt = (day: number) => instantAt(day * DAY);

let clockMs = 0;
/** A fresh, strictly increasing last_run_date for every write a test makes. */
export function freshStamp(): string {
  clockMs += 1;
  return instantAt(DAY * 40 + clockMs);
}

/** A valid PENDING record for a fresh user, overridable field by field. */
export function makeRecord(overrides: Partial<BillingRecord> = {}): BillingRecord {
  return {
    user_id: `user-${randomUUID()}`,
    billing_date: dayAt(0),
    subscription_id: randomUUID(),
    amount_cents: 1999,
    billing_status: 'PENDING',
    last_run_date: freshStamp(),
    created_date: instantAt(0),
    process: 'SCHEDULED',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: 'ach',
    account_last_four: '6789',
    payment_attempts: 0,
    version: 1,
    ...overrides,
  };
}

/** The record as its history row, optionally with decision context and audit fields. */
export function historyOf(record: BillingRecord, extra: Partial<HistoryRow> = {}): HistoryRow {
  return { ...record, ...extra };
}

/** The same record after one more write: version + 1 and a fresh last_run_date. */
export function nextVersion(record: BillingRecord, changes: Partial<BillingRecord> = {}): BillingRecord {
  return { ...record, ...changes, version: record.version + 1, last_run_date: freshStamp() };
}

/** A PENDING period of a fresh user, due an hour before `now`, shaped like the memberships consumer writes them. */
export function dueRecord(now: Date, rail: BillingRecord['payment_method'] = 'pinless', overrides: Partial<BillingRecord> = {}): BillingRecord {
  const due = new Date(now.getTime() - HOUR);
  const at = formatInstant(due);
  return {
    user_id: `user-${randomUUID()}`,
    billing_date: at,
    subscription_id: randomUUID(),
    amount_cents: 1999,
    billing_status: 'PENDING',
    last_run_date: at,
    created_date: formatInstant(new Date(now.getTime() - 40 * DAY)),
    process: 'UNKNOWN',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: rail,
    account_last_four: '6789',
    payment_attempts: 0,
    billing_anchor_day: due.getUTCDate(),
    version: 0,
    ...overrides,
  };
}

/** A PENDING card period due at `billingDate` (anchor day from it), created a month earlier, overridable. */
export function cardPeriod(billingDate: string, overrides: Partial<BillingRecord> = {}): BillingRecord {
  return {
    user_id: `user-${randomUUID()}`,
    billing_date: billingDate,
    subscription_id: randomUUID(),
    amount_cents: 1999,
    billing_status: 'PENDING',
    last_run_date: '2026-11-01T00:00:00.000000001Z',
    created_date: '2026-11-01T00:00:00.000000000Z',
    process: 'SCHEDULED',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: 'card',
    payment_attempts: 0,
    version: 1,
    billing_anchor_day: Number(billingDate.slice(8, 10)),
    ...overrides,
  };
}
