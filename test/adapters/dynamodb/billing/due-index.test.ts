import { processorOfRail } from '../../../../src/domain/processor-budget.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { primaryKey } from '../../../../src/adapters/dynamodb/billing-item.js';
import { DynamoBillingStore } from '../../../../src/adapters/dynamodb/billing/store.js';
import { shardOf } from '../../../../src/adapters/dynamodb/sharding.js';
import { nextEligibleAt } from '../../../../src/domain/due-work.js';
import { historyRowOf } from '../../../../src/domain/billing-record.js';
import type { BillingRecord } from '../../../../src/domain/records.js';
import { formatInstant } from '../../../../src/domain/time.js';
import { saveFailure } from '../../../../src/domain/use-cases/collect.js';
import { makeRecord } from '../../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../../support/dynamo.js';
import { BILLING_RETRY_WAITS_MS, HOUR } from '../../../support/time.js';

/** The ladder's first wait: where a first counted failure saves its next attempt. */
const FIRST_WAIT = BILLING_RETRY_WAITS_MS[0]!;

async function streamed(store: DynamoBillingStore, bound: string): Promise<BillingRecord[]> {
  const all: BillingRecord[] = [];
  for await (const page of store.streamDue(bound, { pageSize: 1000 })) all.push(...page);
  return all;
}

/** Issue 13 part 3: the sparse due-index holds each open record at its next eligible instant, through every kind of write. */
describe('due-index on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoBillingStore;
  const NOW = Date.parse('2026-12-01T12:00:00.000Z');
  const at = (offsetMs: number) => formatInstant(new Date(NOW + offsetMs));

  beforeAll(async () => {
    db = await createTestDynamo('due-index');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory, statusShardCount: 4 });
  });

  const add = async (record: BillingRecord) => {
    await store.addAll([record], [historyRowOf(record)]);
    return record;
  };
  const dueRecords = (offsetMs: number) => streamed(store, at(offsetMs));
  /** The due records of `status` (the index holds every status in one partition per shard). */
  const dueIds = async (status: BillingRecord['billing_status'], offsetMs: number) =>
    (await dueRecords(offsetMs)).filter((r) => r.billing_status === status).map((r) => r.subscription_id);
  const stored = async (record: BillingRecord) =>
    (await db.client.send(new GetItemCommand({ TableName: db.tables.billingActivity, Key: primaryKey(record), ConsistentRead: true }))).Item!;

  it('answers only records due at the bound, across shards, oldest first', async () => {
    const records = await Promise.all([-3, -2, -1, 1].map((h) => add(makeRecord({ billing_date: at(h * HOUR) }))));
    const due = (await dueRecords(0)).filter((r) => records.some((x) => x.subscription_id === r.subscription_id));
    expect(due.map((r) => r.billing_date)).toEqual([at(-3 * HOUR), at(-2 * HOUR), at(-HOUR)]);
    expect(await dueIds('PENDING', 2 * HOUR)).toContain(records[3]!.subscription_id);
  });

  it('keys every status on one partition per processor and shard, DUE#{processor}#n: a status change moves the record in time, not across partitions', async () => {
    const pending = await add(makeRecord({ billing_date: at(-HOUR) }));
    const paused = await add(makeRecord({ billing_status: 'PAUSED', billing_date: at(-HOUR), paused_months: 1 }));
    const shard = (r: BillingRecord) => `DUE#${processorOfRail(r.payment_method)}#${shardOf(r.user_id, 4)}`;
    expect((await stored(pending)).due_shard).toEqual({ S: shard(pending) });
    expect((await stored(paused)).due_shard).toEqual({ S: shard(paused) });
    // Declined: FAILED, due again 24 h after the attempt, in the same partition.
    const failed = { ...pending, billing_status: 'FAILED' as const, payment_attempts: 1, last_attempt_date: at(0), version: pending.version + 1, last_run_date: at(0) };
    await store.commit({ writes: [{ kind: 'update', read: pending, record: failed }], history: [historyRowOf(failed)] });
    expect(await stored(pending)).toMatchObject({ due_shard: { S: shard(pending) }, due_at: { S: at(24 * HOUR) } });
    expect(await dueIds('FAILED', 0)).not.toContain(pending.subscription_id);
    expect(await dueIds('FAILED', 24 * HOUR)).toContain(pending.subscription_id);
  });

  it('streams every shard in large queries, merged oldest first, resuming exactly through ties at the bound', async () => {
    // Its own table: exactly these records, many tied at one instant (DynamoDB Local omits
    // LastEvaluatedKey on a page that ends on items tied at the range bound).
    const own = await createTestDynamo('due-index-stream');
    const ownStore = new DynamoBillingStore({ client: own.client, tableName: own.tables.billingActivity, historyTableName: own.tables.billingActivityHistory, statusShardCount: 4 });
    const records = [
      // Tied at the bound, cards and ACH: both processors' partitions.
      ...Array.from({ length: 13 }, (_, i) => makeRecord({ billing_date: at(0), ...(i % 2 ? { payment_method: 'card' as const } : {}) })),
      ...Array.from({ length: 6 }, (_, i) => makeRecord({ billing_date: at(-(i + 1) * HOUR) })),
      makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-24 * HOUR - 30 * 60_000) }),
      makeRecord({ billing_status: 'PAUSED', billing_date: at(-90 * 60_000), paused_months: 1 }),
    ];
    const later = makeRecord({ billing_date: at(1) });
    await ownStore.addAll([...records, later], [...records, later].map((r) => historyRowOf(r)));
    expect(new Set(records.map((r) => shardOf(r.user_id, 4))).size).toBe(4);
    const pages: (readonly BillingRecord[])[] = [];
    // Two items per query: every shard is resumed many times, inside the tie too.
    for await (const page of ownStore.streamDue(at(0), { pageSize: 5, queryLimit: 2 })) pages.push(page);
    const seen = pages.flat();
    expect(pages.map((p) => p.length)).toEqual([5, 5, 5, 5, 1]);
    expect(seen.map((r) => r.subscription_id).sort()).toEqual(records.map((r) => r.subscription_id).sort());
    const order = seen.map((r) => nextEligibleAt(r)!);
    expect(order).toEqual([...order].sort());
    // A consumer that stops asks for nothing more.
    let queries = 0;
    own.client.middlewareStack.add((next) => async (args) => {
      queries += 1;
      return next(args);
    }, { step: 'initialize', name: 'countQueries' });
    for await (const page of ownStore.streamDue(at(0), { pageSize: 3, queryLimit: 1000 })) {
      expect(page).toHaveLength(3);
      break;
    }
    expect(queries).toBe(8); // one query per processor and shard (2 x 4), and nothing after the break
    queries = 0;
    expect(await streamed(ownStore, at(0))).toHaveLength(records.length);
    expect(queries).toBe(8); // every processor's shard's due work in one query
    // One processor's stream reads only its own partitions and records.
    queries = 0;
    const cards: BillingRecord[] = [];
    for await (const page of ownStore.streamDue(at(0), { processor: 'stripe' })) cards.push(...page);
    expect(queries).toBe(4);
    expect(cards).toHaveLength(6);
    expect(cards.map((r) => r.subscription_id).sort()).toEqual(records.filter((r) => r.payment_method === 'card').map((r) => r.subscription_id).sort());
  });

  it('RecordBillingFailure moves a record to the ladder’s next attempt and, once parked, out of the index', async () => {
    let record = await add(makeRecord({ billing_date: at(-HOUR) }));
    expect(await dueIds('PENDING', 0)).toContain(record.subscription_id);
    const deps = { billing: store };
    const saved = await saveFailure(deps, record, 'boom', new Date(NOW), { process: 'SCHEDULED' });
    expect(saved?.billing_next_attempt_at).toBe(at(FIRST_WAIT));
    expect(await dueIds('PENDING', 0)).not.toContain(record.subscription_id);
    expect(await dueIds('PENDING', FIRST_WAIT)).toContain(record.subscription_id);
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
    expect((await dueRecords(3650 * 24 * HOUR)).map((r) => r.subscription_id)).not.toContain(done.subscription_id);
    // The dunning views still find the exhausted one (its own index).
    expect((await store.listDunning('exhausted', { limit: 1000 })).items.map((r) => r.subscription_id)).toContain(exhausted.subscription_id);
  });
});

describe('countFailing on DynamoDB Local (the failing gauge from the counters its writes keep)', () => {
  it('counts live failures by state, the records created by addAll included', async () => {
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
