import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../src/adapters/dynamodb/billing-store.js';
import { historyRowOf } from '../../../src/domain/billing-record.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { saveFailure } from '../../../src/domain/use-cases/collect.js';
import { makeRecord } from '../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';

/** Issue 13 part 3: the sparse due-index holds each open record at its next eligible instant, through every kind of write. */
describe('due-index on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoBillingStore;
  const NOW = Date.parse('2026-12-01T12:00:00.000Z');
  const HOUR = 3_600_000;
  const at = (offsetMs: number) => formatInstant(new Date(NOW + offsetMs));

  beforeAll(async () => {
    db = await createTestDynamo('due-index');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory, statusShardCount: 4 });
  });

  const add = async (record: BillingRecord) => {
    await store.addAll([record], [historyRowOf(record)]);
    return record;
  };
  const dueIds = async (status: BillingRecord['billing_status'], offsetMs: number) =>
    (await store.listDue(status, at(offsetMs), { limit: 1000 })).items.map((r) => r.subscription_id);

  it('answers only records due at the bound, across shards, oldest first', async () => {
    const records = await Promise.all([-3, -2, -1, 1].map((h) => add(makeRecord({ billing_date: at(h * HOUR) }))));
    const due = (await store.listDue('PENDING', at(0), { limit: 1000 })).items.filter((r) => records.some((x) => x.subscription_id === r.subscription_id));
    expect(due.map((r) => r.billing_date)).toEqual([at(-3 * HOUR), at(-2 * HOUR), at(-HOUR)]);
    expect(await dueIds('PENDING', 2 * HOUR)).toContain(records[3]!.subscription_id);
  });

  it('RecordBillingFailure moves a record to the ladder’s next attempt and, once parked, out of the index', async () => {
    let record = await add(makeRecord({ billing_date: at(-HOUR) }));
    expect(await dueIds('PENDING', 0)).toContain(record.subscription_id);
    const deps = { billing: store };
    const saved = await saveFailure(deps, record, 'boom', new Date(NOW), { process: 'SCHEDULED' });
    expect(saved?.billing_next_attempt_at).toBe(at(15 * 60_000));
    expect(await dueIds('PENDING', 0)).not.toContain(record.subscription_id);
    expect(await dueIds('PENDING', 15 * 60_000)).toContain(record.subscription_id);
    record = saved!;
    // Seven more counted failures: the eighth parks it, and no run reads it again.
    for (let i = 0; i < 7; i++) record = (await saveFailure(deps, record, 'boom', new Date(NOW), { process: 'SCHEDULED' }))!;
    expect(record.billing_next_attempt_at).toBeUndefined();
    expect(await dueIds('PENDING', 365 * 24 * HOUR)).not.toContain(record.subscription_id);
    // A full put that voids the failure (a new attempt count) keys it again.
    const moved = { ...record, payment_attempts: 1, version: record.version + 1, last_run_date: at(1) };
    await store.commit({ writes: [{ kind: 'update', read: record, record: moved }], history: [historyRowOf(moved)] });
    expect(await dueIds('PENDING', 0)).toContain(record.subscription_id);
  });

  it('FAILED records are keyed on their daily retry or dunning slot; exhausted, held and terminal ones are not keyed', async () => {
    const failed = { billing_status: 'FAILED' as const, billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-2 * HOUR) };
    const daily = await add(makeRecord(failed));
    const dunning = { decline_code: 'insufficient_funds', dunning_first_declined_at: at(-2 * HOUR), dunning_attempts: 1 };
    const scheduled = await add(makeRecord({ ...failed, ...dunning, decline_class: 'retry_later', dunning_next_attempt_at: at(48 * HOUR) }));
    const exhausted = await add(makeRecord({ ...failed, ...dunning, decline_class: 'retry_later' }));
    const held = await add(makeRecord({ ...failed, payment_method: 'ach', ach_unauthorized: true }));
    const done = await add(makeRecord({ billing_status: 'COMPLETED', billing_date: at(-HOUR), payment_attempts: 1 }));
    expect(await dueIds('FAILED', 22 * HOUR - 1)).not.toContain(daily.subscription_id);
    expect(await dueIds('FAILED', 22 * HOUR)).toContain(daily.subscription_id);
    expect(await dueIds('FAILED', 48 * HOUR - 1)).not.toContain(scheduled.subscription_id);
    expect(await dueIds('FAILED', 48 * HOUR)).toContain(scheduled.subscription_id);
    const forever = await dueIds('FAILED', 3650 * 24 * HOUR);
    expect(forever).not.toContain(exhausted.subscription_id);
    expect(forever).not.toContain(held.subscription_id);
    expect(await dueIds('COMPLETED', 3650 * 24 * HOUR)).not.toContain(done.subscription_id);
    // The dunning views still find the exhausted one (its own index).
    expect((await store.listDunning('exhausted', { limit: 1000 })).items.map((r) => r.subscription_id)).toContain(exhausted.subscription_id);
  });
});

describe('countFailing on DynamoDB Local (the failing gauge without reading the failures)', () => {
  it('counts live failures by state from COUNT queries on every shard', async () => {
    const db = await createTestDynamo('count-failing');
    const store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory, statusShardCount: 4 });
    const at = (ms: number) => formatInstant(new Date(Date.parse('2026-12-01T12:00:00.000Z') + ms));
    const failing = (next?: string) => {
      const r = makeRecord({ billing_date: at(-3_600_000) });
      return { ...r, billing_failed_for: `${r.billing_date}#0`, billing_failure_count: 2, billing_failed_at: at(0), billing_last_error: 'x', ...(next ? { billing_next_attempt_at: next } : {}) };
    };
    const records = [failing(at(60_000)), failing(at(120_000)), failing(), failing(), failing(), makeRecord()];
    await store.addAll(records, records.map((r) => historyRowOf(r)));
    expect(await store.countFailing()).toEqual({ retrying: 2, parked: 3 });
  });
});
