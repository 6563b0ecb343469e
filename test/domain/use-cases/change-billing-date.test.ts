import { beforeEach, describe, expect, it } from 'vitest';
import { PreconditionFailedError, UnbilledPeriodError } from '../../../src/domain/errors.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { changeBillingDate } from '../../../src/domain/use-cases/change-billing-date.js';
import { dueRecord } from '../../support/billing-fixtures.js';
import { memoryAttempt, type MemoryAttempt } from '../../support/memory-ledger.js';
import { seedRecords } from '../../support/seed.js';
import { DAY } from '../../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const daysFromNow = (days: number) => formatInstant(new Date(Date.parse(NOW) + days * DAY));

describe('change billing date, on the in-memory ledger', () => {
  let m: MemoryAttempt;
  beforeEach(() => {
    m = memoryAttempt(NOW);
  });

  const change = (record: BillingRecord, billingDate: string) =>
    changeBillingDate(m.deps, { subscriptionId: record.subscription_id, owner: 'op-call', actor: 'op-1', reason: 'payday moved', billingDate });

  it('moves a future period to the new date in one commit: old key gone, anchor day moved, version kept counting, two audit rows', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'ach', { billing_date: daysFromNow(10), billing_anchor_day: 11 }));
    const moved = await change(record, daysFromNow(17));
    expect(await m.ledger.get(record)).toBeUndefined();
    expect(await m.ledger.get(moved)).toMatchObject({ subscription_id: record.subscription_id, billing_date: daysFromNow(17), version: record.version + 1, billing_anchor_day: 18 });
    expect(m.ledger.recordsOf(record.user_id)).toHaveLength(1);
    const rows = m.ledger.rowsOf(record.user_id).filter((r) => r.billing_event === 'DUE_DATE_CHANGED');
    expect(rows.map((r) => r.billing_date)).toEqual([daysFromNow(10), daysFromNow(17)]);
    expect(rows.every((r) => r.actor === 'op-1' && r.reason === 'payday moved')).toBe(true);
  });

  it('refuses a period that is due and unbilled, and changes nothing', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'ach'));
    await expect(change(record, daysFromNow(5))).rejects.toBeInstanceOf(UnbilledPeriodError);
    expect(m.ledger.recordsOf(record.user_id)).toEqual([record]);
    expect(m.ledger.rowsOf(record.user_id)).toHaveLength(1);
  });

  it('refuses a new date in the past', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'ach', { billing_date: daysFromNow(10) }));
    await expect(change(record, daysFromNow(-1))).rejects.toMatchObject({ constructor: PreconditionFailedError, code: 'billing_date_in_past' });
    expect(await m.ledger.get(record)).toEqual(record);
  });
});
