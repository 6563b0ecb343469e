import { processorOfRail } from '../../../src/domain/processor-budget.js';
import { GetItemCommand, PutItemCommand, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { primaryItem, primaryKey } from '../../../src/adapters/dynamodb/billing-item.js';
import { DynamoBillingStore } from '../../../src/adapters/dynamodb/billing/store.js';
import { shardOf } from '../../../src/adapters/dynamodb/sharding.js';
import { backfillDueIndex, backfillHeldIndex, backfillItem, type DueIndexBackfillReport } from '../../../src/adapters/dynamodb/due-index-backfill.js';
import { historyRowOf } from '../../../src/domain/billing-record.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { makeRecord } from '../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';
import { HOUR } from '../../support/time.js';

async function streamed(store: DynamoBillingStore, bound: string): Promise<BillingRecord[]> {
  const all: BillingRecord[] = [];
  for await (const page of store.streamDue(bound, { pageSize: 1000 })) all.push(...page);
  return all;
}

/**
 * The due-index backfill (docs/runbook.md): records written before the sparse due-index existed
 * carry no key, so the planner never reads them; the backfill keys them as the writers would.
 */
describe('due-index backfill on DynamoDB Local', () => {
  const SHARDS = 4;
  const NOW = Date.parse('2026-12-01T12:00:00.000Z');
  const at = (offsetMs: number) => formatInstant(new Date(NOW + offsetMs));
  const far = at(3650 * 24 * HOUR);
  let db: TestDynamo;
  let store: DynamoBillingStore;

  beforeAll(async () => {
    db = await createTestDynamo('due-backfill');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory, statusShardCount: SHARDS });
  });

  /** The item as a release before the due-index wrote it: every attribute of today's put except the due-index key. */
  const putLegacy = async (record: BillingRecord): Promise<BillingRecord> => {
    const { due_shard: _shard, due_at: _at, ...item } = primaryItem(record, SHARDS);
    await db.client.send(new PutItemCommand({ TableName: db.tables.billingActivity, Item: item }));
    return record;
  };
  const stored = async (record: BillingRecord): Promise<Record<string, AttributeValue>> =>
    (await db.client.send(new GetItemCommand({ TableName: db.tables.billingActivity, Key: primaryKey(record), ConsistentRead: true }))).Item!;
  const planned = async (status: BillingRecord['billing_status']) => (await streamed(store, far)).filter((r) => r.billing_status === status).map((r) => r.subscription_id);
  const historyCount = async () => (await db.client.send(new ScanCommand({ TableName: db.tables.billingActivityHistory, Select: 'COUNT', ConsistentRead: true }))).Count;
  const run = (extra: { dryRun?: boolean; totalSegments?: number; segment?: number; pageSize?: number } = {}) =>
    backfillDueIndex({ client: db.client, table: db.tables.billingActivity, shardCount: SHARDS, pageSize: 3, ...extra });

  it('keys pre-release records as the writers would, leaves the rest alone, writes no history, and a second run writes nothing', async () => {
    const failed = { billing_status: 'FAILED' as const, billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-2 * HOUR) };
    const pending = await putLegacy(makeRecord({ billing_date: at(-HOUR) }));
    const waiting = await putLegacy(makeRecord(failed));
    const paused = await putLegacy(makeRecord({ billing_status: 'PAUSED', billing_date: at(24 * HOUR) }));
    const parked = await putLegacy(
      makeRecord({ billing_date: at(-10 * 24 * HOUR), billing_failed_for: `${at(-10 * 24 * HOUR)}#0`, billing_failure_count: 8, billing_failed_at: at(-HOUR), billing_last_error: 'An internal error occurred.' }),
    );
    const completed = await putLegacy(makeRecord({ billing_status: 'COMPLETED', billing_date: at(-HOUR), payment_attempts: 1 }));
    // Not a billing record: an ACH return-rate counter shares the table.
    await db.client.send(new PutItemCommand({ TableName: db.tables.billingActivity, Item: { user_id: { S: 'ACH_RATES#' }, billing_date: { S: 'DAY#2026-12-01#00' }, debits: { N: '3' } } }));
    // A record that does not decode is reported and left as it is.
    await db.client.send(new PutItemCommand({ TableName: db.tables.billingActivity, Item: { user_id: { S: 'user-corrupt' }, billing_date: { S: at(0) }, billing_status: { S: 'PENDING' }, version: { N: '1' } } }));
    const historyBefore = await historyCount();

    // Before the backfill the planner sees none of them.
    expect(await planned('PENDING')).not.toContain(pending.subscription_id);
    expect(await planned('FAILED')).not.toContain(waiting.subscription_id);

    const dry = await run({ dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, scanned: 7, records: 6, keyed: 3, rekeyed: 0, unkeyed: 0, unchanged: 2, raced: 0, corrupt: 1 });
    expect(dry.corruptKeys).toEqual([expect.objectContaining({ user_id: 'user-corrupt' })]);
    expect((await stored(pending)).due_shard).toBeUndefined();

    const real = await run();
    expect(real).toMatchObject({ dryRun: false, records: 6, keyed: 3, unkeyed: 0, unchanged: 2, corrupt: 1 });
    for (const record of [pending, waiting, paused, parked, completed]) {
      const item = await stored(record);
      const written = primaryItem(record, SHARDS);
      // Exactly the key today's writers derive (nextEligibleAt), or none; the version is the one read.
      expect({ due_shard: item.due_shard, due_at: item.due_at }).toEqual({ due_shard: written.due_shard, due_at: written.due_at });
      expect(item.version).toEqual({ N: String(record.version) });
    }
    expect((await stored(pending)).due_at).toEqual({ S: pending.billing_date });
    expect((await stored(waiting)).due_at).toEqual({ S: at(22 * HOUR) }); // the daily retry, 24 h after the last attempt
    expect((await stored(parked)).due_shard).toBeUndefined();
    expect(await planned('PENDING')).toContain(pending.subscription_id);
    expect(await planned('FAILED')).toContain(waiting.subscription_id);
    expect(await planned('PAUSED')).toContain(paused.subscription_id);
    expect(await planned('PENDING')).not.toContain(parked.subscription_id);
    expect(await historyCount()).toBe(historyBefore);

    expect(await run()).toMatchObject({ records: 6, keyed: 0, unkeyed: 0, unchanged: 5, corrupt: 1 });
  });

  it('rewrites the previous release\'s per-status keys ({billing_status}#n) to DUE#{processor}#n, so the planner sees them again; a second run writes nothing', async () => {
    const own = await createTestDynamo('due-backfill-rekey');
    const ownStore = new DynamoBillingStore({ client: own.client, tableName: own.tables.billingActivity, historyTableName: own.tables.billingActivityHistory, statusShardCount: SHARDS });
    const failed = { billing_status: 'FAILED' as const, billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-26 * HOUR) };
    const records = [
      makeRecord({ billing_date: at(-HOUR) }),
      makeRecord(failed),
      makeRecord({ billing_status: 'PAUSED', billing_date: at(-HOUR), paused_months: 1 }),
    ];
    // As the previous release wrote them: the same due_at, partition `{billing_status}#{n}`.
    for (const r of records) {
      const item = primaryItem(r, SHARDS);
      await own.client.send(new PutItemCommand({ TableName: own.tables.billingActivity, Item: { ...item, due_shard: { S: `${r.billing_status}#${shardOf(r.user_id, SHARDS)}` } } }));
    }
    // A record the new release already wrote is left alone.
    const fresh = makeRecord({ billing_date: at(-2 * HOUR) });
    await own.client.send(new PutItemCommand({ TableName: own.tables.billingActivity, Item: primaryItem(fresh, SHARDS) }));
    expect((await streamed(ownStore, at(0))).map((r) => r.subscription_id)).toEqual([fresh.subscription_id]);

    const report = await backfillDueIndex({ client: own.client, table: own.tables.billingActivity, shardCount: SHARDS });
    expect(report).toMatchObject({ records: 4, keyed: 3, rekeyed: 3, unkeyed: 0, unchanged: 1, corrupt: 0 });
    for (const r of records) {
      const item = (await own.client.send(new GetItemCommand({ TableName: own.tables.billingActivity, Key: primaryKey(r), ConsistentRead: true }))).Item!;
      expect(item.due_shard).toEqual({ S: `DUE#${processorOfRail(r.payment_method)}#${shardOf(r.user_id, SHARDS)}` });
      expect(item.due_at).toEqual(primaryItem(r, SHARDS).due_at);
      expect(item.version).toEqual({ N: String(r.version) });
    }
    expect(new Set((await streamed(ownStore, at(0))).map((r) => r.subscription_id))).toEqual(new Set([fresh, ...records].map((r) => r.subscription_id)));
    expect(await backfillDueIndex({ client: own.client, table: own.tables.billingActivity, shardCount: SHARDS })).toMatchObject({ keyed: 0, rekeyed: 0, unchanged: 4 });
  });

  it('never overwrites a newer write: a lost race is judged again on the record as it now is', async () => {
    const record = await putLegacy(makeRecord({ billing_date: at(-HOUR) }));
    const seen = await stored(record); // what a scan page held
    // Meanwhile a release writer updates it (it derives the key itself): completed, out of the index.
    const done = { ...record, billing_status: 'COMPLETED' as const, payment_attempts: 1, version: record.version + 1, last_run_date: at(1) };
    await store.commit({ writes: [{ kind: 'update', read: record, record: done }], history: [historyRowOf(done)] });

    const report: DueIndexBackfillReport = { dryRun: false, scanned: 1, records: 0, keyed: 0, rekeyed: 0, unkeyed: 0, unchanged: 0, raced: 0, corrupt: 0, corruptKeys: [] };
    await backfillItem({ client: db.client, table: db.tables.billingActivity, shardCount: SHARDS }, seen, report);
    expect(report).toMatchObject({ records: 1, raced: 1, keyed: 0, unchanged: 1 });
    const item = await stored(record);
    expect(item.billing_status).toEqual({ S: 'COMPLETED' });
    expect(item.version).toEqual({ N: String(done.version) });
    expect(item.due_shard).toBeUndefined();
  });

  it('splits the table into scan segments that together key every record once', async () => {
    const own = await createTestDynamo('due-backfill-seg');
    const records = Array.from({ length: 12 }, (_, i) => makeRecord({ billing_date: at(-(i + 1) * HOUR) }));
    for (const r of records) {
      const { due_shard: _s, due_at: _a, ...item } = primaryItem(r, SHARDS);
      await own.client.send(new PutItemCommand({ TableName: own.tables.billingActivity, Item: item }));
    }
    const segment = (i: number) => backfillDueIndex({ client: own.client, table: own.tables.billingActivity, shardCount: SHARDS, totalSegments: 3, segment: i, pageSize: 2 });
    const reports = [await segment(0), await segment(1), await segment(2)];
    expect(reports.reduce((n, r) => n + r.scanned, 0)).toBe(12);
    expect(reports.reduce((n, r) => n + r.keyed, 0)).toBe(12);
    const ownStore = new DynamoBillingStore({ client: own.client, tableName: own.tables.billingActivity, historyTableName: own.tables.billingActivityHistory, statusShardCount: SHARDS });
    const due = (await streamed(ownStore, at(0))).map((r) => r.subscription_id);
    expect(new Set(due)).toEqual(new Set(records.map((r) => r.subscription_id)));
    // All segments at once, concurrently: nothing left to do.
    expect(await backfillDueIndex({ client: own.client, table: own.tables.billingActivity, shardCount: SHARDS, totalSegments: 3 })).toMatchObject({ scanned: 12, keyed: 0, unchanged: 12 });
    await expect(backfillDueIndex({ client: own.client, table: own.tables.billingActivity, shardCount: SHARDS, totalSegments: 3, segment: 3 })).rejects.toThrow(RangeError);
  });
});

/**
 * The held-index backfill: a period a record's own hold kept off the schedule before the held index
 * existed carries no `held_shard`, so the daily sweep and an operator's release never see it.
 */
describe('held-index backfill on DynamoDB Local', () => {
  const SHARDS = 4;
  const NOW = Date.parse('2026-12-01T12:00:00.000Z');
  const at = (offsetMs: number) => formatInstant(new Date(NOW + offsetMs));
  let db: TestDynamo;
  let store: DynamoBillingStore;

  beforeAll(async () => {
    db = await createTestDynamo('held-backfill');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory, statusShardCount: SHARDS });
  });

  /** As a release before the held index wrote it: every attribute but the held-index key. */
  const putLegacy = async (record: BillingRecord): Promise<BillingRecord> => {
    const { held_shard: _shard, held_at: _at, ...item } = primaryItem(record, SHARDS);
    await db.client.send(new PutItemCommand({ TableName: db.tables.billingActivity, Item: item }));
    return record;
  };
  const listed = async () => (await store.listHeld({ limit: 100, cursor: null })).items.map((r) => r.subscription_id);
  const run = (dryRun = false) => backfillHeldIndex({ client: db.client, table: db.tables.billingActivity, shardCount: SHARDS, pageSize: 2, dryRun });

  it('keys the periods a record hold keeps off the schedule, leaves every other record alone, and a second run writes nothing', async () => {
    const returned = { payment_method: 'ach' as const, billing_status: 'FAILED' as const, billing_date: at(-40 * 24 * HOUR), payment_attempts: 1, last_attempt_date: at(-39 * 24 * HOUR), last_run_date: at(-38 * 24 * HOUR) };
    const unauthorized = await putLegacy(makeRecord({ ...returned, ach_unauthorized: true, ach_return_code: 'R10' }));
    const closedAccount = await putLegacy(makeRecord({ ...returned, ach_blocked: true, ach_return_code: 'R02' }));
    const plain = await putLegacy(makeRecord({ billing_date: at(-HOUR) }));
    const completed = await putLegacy(makeRecord({ billing_status: 'COMPLETED', billing_date: at(-HOUR), payment_attempts: 1, ach_unauthorized: true }));
    expect(await listed()).toEqual([]);

    expect(await run(true)).toMatchObject({ dryRun: true, records: 4, keyed: 2, unchanged: 2 });
    expect(await listed()).toEqual([]);

    const report = await run();
    expect(report).toMatchObject({ records: 4, keyed: 2, rekeyed: 0, unkeyed: 0, unchanged: 2, corrupt: 0 });
    expect(new Set(await listed())).toEqual(new Set([unauthorized.subscription_id, closedAccount.subscription_id]));
    for (const r of [unauthorized, closedAccount]) {
      const item = (await db.client.send(new GetItemCommand({ TableName: db.tables.billingActivity, Key: primaryKey(r), ConsistentRead: true }))).Item!;
      expect(item.held_shard).toEqual({ S: `HELD#${shardOf(r.user_id, SHARDS)}` });
      expect(item.held_at).toEqual({ S: r.last_run_date });
      // Only the derived key changed: no version bump, so a writer that read the record still commits.
      expect(item.version).toEqual({ N: String(r.version) });
    }
    for (const r of [plain, completed]) {
      const item = (await db.client.send(new GetItemCommand({ TableName: db.tables.billingActivity, Key: primaryKey(r), ConsistentRead: true }))).Item!;
      expect(item.held_shard).toBeUndefined();
    }
    expect(await run()).toMatchObject({ keyed: 0, unkeyed: 0, unchanged: 4 });
  });
});
