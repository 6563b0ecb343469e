import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../src/adapters/dynamodb/billing-store.js';
import { statusShard } from '../../../src/adapters/dynamodb/billing-item.js';
import { InvalidPageRequestError } from '../../../src/adapters/dynamodb/errors.js';
import { encodeCursor } from '../../../src/adapters/dynamodb/pagination.js';
import type { BillingRecord, BillingStatus } from '../../../src/domain/records.js';
import type { Page } from '../../../src/domain/ports/page.js';
import { dayAt, freshStamp, historyOf, makeRecord, nextVersion } from '../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';

async function collectAll<T>(fetch: (cursor: string | null) => Promise<Page<T>>): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: Page<T> = await fetch(cursor);
    items.push(...page.items);
    cursor = page.next;
    pages++;
    if (pages > 100) throw new Error('pagination does not end');
  } while (cursor);
  return { items, pages };
}

describe('DynamoBillingStore reads on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoBillingStore;
  beforeAll(async () => {
    db = await createTestDynamo('billing-r');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory });
  });

  it('lists a user\'s records newest billing_date first, across pages', async () => {
    const user = `user-${randomUUID()}`;
    const records = Array.from({ length: 7 }, (_, i) => makeRecord({ user_id: user, billing_date: dayAt(i * 30) }));
    await store.addAll(records, records.map((r) => historyOf(r)));
    const { items, pages } = await collectAll((cursor) => store.listByUser(user, { limit: 3, cursor }));
    expect(items.map((r) => r.billing_date)).toEqual(records.map((r) => r.billing_date).reverse());
    expect(pages).toBeGreaterThanOrEqual(3);
  });

  it('refuses a cursor from another user\'s listing and a malformed one', async () => {
    const a = makeRecord();
    const b = makeRecord();
    await store.addAll([a, { ...a, billing_date: dayAt(30) }, b], [historyOf(a), historyOf({ ...a, billing_date: dayAt(30), last_run_date: freshStamp() }), historyOf(b)]);
    const page = await store.listByUser(a.user_id, { limit: 1 });
    expect(page.next).not.toBeNull();
    await expect(store.listByUser(b.user_id, { limit: 1, cursor: page.next })).rejects.toBeInstanceOf(InvalidPageRequestError);
    await expect(store.listByUser(a.user_id, { cursor: 'not a cursor' })).rejects.toBeInstanceOf(InvalidPageRequestError);
    await expect(store.listByUser(a.user_id, { limit: 0 })).rejects.toBeInstanceOf(InvalidPageRequestError);
  });

  it('finds a record by subscription id with current data', async () => {
    const record = makeRecord();
    await store.addAll([record], [historyOf(record)]);
    const after = nextVersion(record, { billing_status: 'ACHSENT' });
    await store.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyOf(after)] });
    const found = await store.findBySubscriptionId(record.subscription_id);
    expect(found?.billing_status).toBe('ACHSENT');
    expect(found?.version).toBe(2);
    expect(await store.findBySubscriptionId(randomUUID())).toBeUndefined();
  });

  it('pages a subscription\'s history newest first', async () => {
    let record = makeRecord();
    await store.addAll([record], [historyOf(record)]);
    const stamps = [record.last_run_date];
    for (let i = 0; i < 4; i++) {
      const after = nextVersion(record);
      await store.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyOf(after, { actor: `op-${i}` })] });
      stamps.push(after.last_run_date);
      record = after;
    }
    const { items, pages } = await collectAll((cursor) => store.history(record.subscription_id, { limit: 2, cursor }));
    expect(items.map((r) => r.last_run_date)).toEqual([...stamps].reverse());
    expect(items[0]?.actor).toBe('op-3');
    expect(pages).toBe(3);
    await expect(store.history(randomUUID(), { cursor: encodeCursor({ subscription_id: 'x', last_run_date: 'y', user_id: 'z' }) })).rejects.toBeInstanceOf(
      InvalidPageRequestError,
    );
  });

  describe('listByStatus across status shards', () => {
    const status: BillingStatus = 'FAILED'; // a status no other test in this file writes
    const due = dayAt(10);
    let expected: BillingRecord[];

    beforeAll(async () => {
      const records: BillingRecord[] = [];
      for (let i = 0; i < 48; i++) {
        records.push(makeRecord({ billing_status: status, billing_date: dayAt(i % 16), payment_attempts: 1 }));
      }
      records.push(makeRecord({ billing_status: 'PENDING', billing_date: dayAt(1) }));
      await store.addAll(records, records.map((r) => historyOf(r)));
      expected = records.filter((r) => r.billing_status === status && r.billing_date <= due);
    });

    it('spreads one status over several shards', async () => {
      const shards = new Set(expected.map((r) => statusShard(status, r.user_id, 16)));
      expect(shards.size).toBeGreaterThan(4);
      const [one] = expected;
      const raw = await db.client.send(
        new GetItemCommand({ TableName: db.tables.billingActivity, Key: { user_id: { S: one!.user_id }, billing_date: { S: one!.billing_date } } }),
      );
      expect(raw.Item?.status_shard).toEqual({ S: statusShard(status, one!.user_id, 16) });
    });

    it('finds every record due by the bound, in every shard, oldest first', async () => {
      const page = await store.listByStatus(status, due, { limit: 1000 });
      expect(page.next).toBeNull();
      expect(page.items.map((r) => r.subscription_id).sort()).toEqual(expected.map((r) => r.subscription_id).sort());
      const dates = page.items.map((r) => r.billing_date);
      expect(dates).toEqual([...dates].sort());
      expect(page.items.every((r) => r.billing_date <= due)).toBe(true);
      // The same bound written another way (offset, fewer digits) finds the same records.
      const other = await store.listByStatus(status, '2026-11-10T19:00:00-05:00', { limit: 1000 });
      expect(other.items.map((r) => r.subscription_id).sort()).toEqual(expected.map((r) => r.subscription_id).sort());
    });

    it('pages through all shards without gaps or repeats, keeping the order', async () => {
      const { items, pages } = await collectAll((cursor) => store.listByStatus(status, due, { limit: 5, cursor }));
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(expected.length / 5));
      const ids = items.map((r) => r.subscription_id);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(expected.map((r) => r.subscription_id).sort());
      const dates = items.map((r) => r.billing_date);
      expect(dates).toEqual([...dates].sort());
    });

    it('pages through records tied at the due bound, many per shard, without losing one', async () => {
      // Regression: DynamoDB Local drops LastEvaluatedKey, and refuses the resume key, when a page
      // ends on items tied at a `<=` range bound; a collections run at exactly a billing date lost records.
      for (const tied of ['SKIPPED', 'REFUNDED'] as const) {
        const bound = dayAt(3);
        const records = Array.from({ length: 40 }, (_, i) => makeRecord({ billing_status: tied, billing_date: i < 36 ? bound : dayAt(4) }));
        await store.addAll(records, records.map((r) => historyOf(r)));
        const { items } = await collectAll((cursor) => store.listByStatus(tied, bound, { limit: 3, cursor }));
        expect(items.map((r) => r.subscription_id).sort()).toEqual(records.slice(0, 36).map((r) => r.subscription_id).sort());
      }
    });

    it('refuses a cursor from another status or bound', async () => {
      const page = await store.listByStatus(status, due, { limit: 2 });
      expect(page.next).not.toBeNull();
      await expect(store.listByStatus(status, dayAt(11), { limit: 2, cursor: page.next })).rejects.toBeInstanceOf(InvalidPageRequestError);
      await expect(store.listByStatus('PENDING', due, { limit: 2, cursor: page.next })).rejects.toBeInstanceOf(InvalidPageRequestError);
    });

    it('finds records after a status change in the new status only', async () => {
      const moved = expected[0]!;
      const after = nextVersion(moved, { billing_status: 'COMPLETED' });
      await store.commit({ writes: [{ kind: 'update', read: moved, record: after }], history: [historyOf(after)] });
      const failedIds = (await store.listByStatus(status, due, { limit: 1000 })).items.map((r) => r.subscription_id);
      expect(failedIds).not.toContain(moved.subscription_id);
      const completed = (await store.listByStatus('COMPLETED', due, { limit: 1000 })).items.map((r) => r.subscription_id);
      expect(completed).toContain(moved.subscription_id);
      expected = expected.slice(1);
    });

    it('honours a store configured with a different shard count', async () => {
      const small = new DynamoBillingStore({
        client: db.client,
        tableName: db.tables.billingActivity,
        historyTableName: db.tables.billingActivityHistory,
        statusShardCount: 2,
      });
      const record = makeRecord({ billing_status: 'INACTIVE' });
      await small.addAll([record], [historyOf(record)]);
      expect((await small.listByStatus('INACTIVE', dayAt(0))).items.map((r) => r.subscription_id)).toEqual([record.subscription_id]);
    });
  });
});
