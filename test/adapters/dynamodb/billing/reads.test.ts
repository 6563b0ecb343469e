import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../../src/adapters/dynamodb/billing/store.js';
import { failingShard } from '../../../../src/adapters/dynamodb/billing-item.js';
import { InvalidPageRequestError } from '../../../../src/adapters/dynamodb/errors.js';
import { encodeCursor } from '../../../../src/adapters/dynamodb/pagination.js';
import { shardOf } from '../../../../src/adapters/dynamodb/sharding.js';
import { nextFailure } from '../../../../src/domain/ladder.js';
import type { BillingRecord } from '../../../../src/domain/records.js';
import { formatInstant } from '../../../../src/domain/time.js';
import type { Page } from '../../../../src/domain/ports/page.js';
import { dayAt, freshStamp, historyOf, instantAt, makeRecord, nextVersion } from '../../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../../support/dynamo.js';

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

  describe('the sparse indexes across their shards', () => {
    /** A FAILED period of a fresh user whose saved failure (at `failedAt`) is live: on the failing-index only. */
    function failing(failedAt: string, overrides: Partial<BillingRecord> = {}): BillingRecord {
      const record = makeRecord({ billing_status: 'FAILED', payment_attempts: 1, ...overrides });
      return { ...record, ...nextFailure(record, new Date(failedAt), 'The payment processor is unavailable.', formatInstant) };
    }
    let expected: BillingRecord[];

    beforeAll(async () => {
      expected = Array.from({ length: 48 }, (_, i) => failing(instantAt(i * 60_000)));
      const healthy = makeRecord({ billing_status: 'FAILED', payment_attempts: 1 });
      await store.addAll([...expected, healthy], [...expected, healthy].map((r) => historyOf(r)));
    });

    it('spreads the failing-index over several shards and lists every entry, oldest failure first', async () => {
      expect(new Set(expected.map((r) => failingShard(r.user_id, 16))).size).toBeGreaterThan(4);
      const page = await store.listFailing({ limit: 1000 });
      expect(page.next).toBeNull();
      expect(page.items.map((r) => r.subscription_id)).toEqual(expected.map((r) => r.subscription_id));
    });

    it('pages through all shards without gaps or repeats, keeping the order', async () => {
      const { items, pages } = await collectAll((cursor) => store.listFailing({ limit: 5, cursor }));
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(expected.length / 5));
      expect(items.map((r) => r.subscription_id)).toEqual(expected.map((r) => r.subscription_id));
    });

    it('refuses a cursor from another index or another dunning state', async () => {
      const page = await store.listFailing({ limit: 2 });
      expect(page.next).not.toBeNull();
      await expect(store.listExceptions({ limit: 2, cursor: page.next })).rejects.toBeInstanceOf(InvalidPageRequestError);
      await expect(store.listDunning('retrying', { limit: 2, cursor: page.next })).rejects.toBeInstanceOf(InvalidPageRequestError);
    });

    it('drops a record from the failing-index when its failure is no longer live', async () => {
      const cleared = expected[0]!;
      const after = nextVersion(cleared, { billing_status: 'COMPLETED' });
      await store.commit({ writes: [{ kind: 'update', read: cleared, record: after }], history: [historyOf(after)] });
      const ids = (await store.listFailing({ limit: 1000 })).items.map((r) => r.subscription_id);
      expect(ids).not.toContain(cleared.subscription_id);
      expect(ids).toHaveLength(expected.length - 1);
      expected = expected.slice(1);
    });

    it('honours a store configured with a different shard count', async () => {
      const small = new DynamoBillingStore({
        client: db.client,
        tableName: db.tables.billingActivity,
        historyTableName: db.tables.billingActivityHistory,
        statusShardCount: 2,
      });
      // A user past shard 1 of 16: found by a 2-shard reader only when the 2-shard writer keyed it.
      let record = failing(instantAt(0));
      while (shardOf(record.user_id, 16) < 2) record = failing(instantAt(0));
      await small.addAll([record], [historyOf(record)]);
      expect((await small.listFailing({ limit: 1000 })).items.map((r) => r.subscription_id)).toContain(record.subscription_id);
    });
  });
});
