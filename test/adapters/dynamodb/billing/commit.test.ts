import { GetItemCommand, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../../src/adapters/dynamodb/billing/store.js';
import { InvalidTransactionError, CorruptItemError } from '../../../../src/adapters/dynamodb/errors.js';
import { AlreadyExistsError, ConcurrentModificationError, TransientError } from '../../../../src/domain/errors.js';
import type { BillingRecord } from '../../../../src/domain/records.js';
import { dayAt, historyOf, makeRecord, nextVersion, freshStamp } from '../../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../../support/dynamo.js';

describe('DynamoBillingStore writes on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoBillingStore;
  beforeAll(async () => {
    db = await createTestDynamo('billing-w');
    store = new DynamoBillingStore({
      client: db.client,
      tableName: db.tables.billingActivity,
      historyTableName: db.tables.billingActivityHistory,
    });
  });

  async function rawPrimary(r: Pick<BillingRecord, 'user_id' | 'billing_date'>) {
    const out = await db.client.send(
      new GetItemCommand({
        TableName: db.tables.billingActivity,
        Key: { user_id: { S: r.user_id }, billing_date: { S: r.billing_date } },
        ConsistentRead: true,
      }),
    );
    return out.Item;
  }

  async function historyRows(userId: string) {
    const out = await db.client.send(
      new QueryCommand({
        TableName: db.tables.billingActivityHistory,
        KeyConditionExpression: 'user_id = :u',
        ExpressionAttributeValues: { ':u': { S: userId } },
        ConsistentRead: true,
      }),
    );
    return out.Items ?? [];
  }

  async function created(overrides: Partial<BillingRecord> = {}): Promise<BillingRecord> {
    const record = makeRecord(overrides);
    await store.commit({ writes: [{ kind: 'create', record }], history: [historyOf(record)] });
    return record;
  }

  describe('amounts', () => {
    it.each([
      [1, '0.01'],
      [1999, '19.99'],
      [0, '0'],
      [1990, '19.9'],
      [100_000_010, '1000000.1'],
      [999_999_999_999_99, '999999999999.99'],
    ])('stores %i cents as the exact N %s and reads it back exactly', async (cents, storedText) => {
      const record = await created({ amount_cents: cents });
      // DynamoDB normalises numbers (trailing zeros dropped), so 19.90 is stored as N "19.9".
      expect((await rawPrimary(record))?.amount).toEqual({ N: storedText });
      expect((await store.get(record))?.amount_cents).toBe(cents);
      const [history] = await historyRows(record.user_id);
      expect(history?.amount).toEqual({ N: storedText });
    });

    it('never stores amount_cents, and writes N "19.99" for 1999 cents', async () => {
      const record = await created({ amount_cents: 1999 });
      const raw = await rawPrimary(record);
      expect(raw?.amount).toEqual({ N: '19.99' });
      expect(raw?.amount_cents).toBeUndefined();
    });
  });

  it('keeps data_*, actor and reason off the primary item, and writes no status_shard', async () => {
    const record = makeRecord();
    const row = historyOf(record, { data_available_balance_cents: 0, data_blocklisted: false, actor: 'op-1', reason: 'test' });
    // A history row passed as the record must not leak its history-only attributes.
    await store.commit({ writes: [{ kind: 'create', record: row }], history: [row] });
    const raw = await rawPrimary(record);
    expect(raw?.status_shard).toBeUndefined();
    expect(Object.keys(raw ?? {}).filter((k) => k.startsWith('data_') || k === 'actor' || k === 'reason')).toEqual([]);
    const [history] = await historyRows(record.user_id);
    expect(history?.status_shard).toBeUndefined();
    expect(history?.data_available_balance_cents).toEqual({ N: '0' });
    expect(history?.data_blocklisted).toEqual({ BOOL: false });
    expect(history?.actor).toEqual({ S: 'op-1' });
    expect(history?.reason).toEqual({ S: 'test' });
  });

  it('refuses to create a period that exists (AlreadyExistsError) and writes no history for it', async () => {
    const record = await created();
    const again = { ...record, last_run_date: freshStamp() };
    await expect(store.commit({ writes: [{ kind: 'create', record: again }], history: [historyOf(again)] })).rejects.toBeInstanceOf(
      AlreadyExistsError,
    );
    expect(await historyRows(record.user_id)).toHaveLength(1);
  });

  describe('the version fence', () => {
    it('lets one of two writers that read the same version commit; the other gets ConcurrentModificationError', async () => {
      const record = await created();
      const read1 = (await store.get(record))!;
      const read2 = (await store.get(record))!;
      const first = nextVersion(read1, { billing_status: 'ACHSENT', payment_attempts: 1 });
      const second = nextVersion(read2, { billing_status: 'WAIVED' });
      await store.commit({ writes: [{ kind: 'update', read: read1, record: first }], history: [historyOf(first)] });
      const loser = store.commit({ writes: [{ kind: 'update', read: read2, record: second }], history: [historyOf(second)] });
      await expect(loser).rejects.toBeInstanceOf(ConcurrentModificationError);
      const stored = await store.get(record);
      expect(stored?.billing_status).toBe('ACHSENT');
      expect(stored?.version).toBe(2);
      // The loser's audit row went down with its transaction.
      const rows = await historyRows(record.user_id);
      expect(rows.map((r) => r.last_run_date?.S).sort()).toEqual([record.last_run_date, first.last_run_date].sort());
    });

    it('lets exactly one of 10 concurrent writers of the same version land, with exactly one audit row', async () => {
      const record = await created();
      const attempts = Array.from({ length: 10 }, () => nextVersion(record, { billing_status: 'ACHSENT' }));
      const results = await Promise.allSettled(
        attempts.map((r) => store.commit({ writes: [{ kind: 'update', read: record, record: r }], history: [historyOf(r)] })),
      );
      const fulfilled = results.filter((r) => r.status === 'fulfilled');
      // DynamoDB may cancel every contender with TransactionConflict (TransientError); never two winners.
      expect(fulfilled.length).toBeLessThanOrEqual(1);
      if (fulfilled.length === 0) expect(results.some((r) => r.status === 'rejected' && r.reason instanceof TransientError)).toBe(true);
      for (const r of results) {
        if (r.status === 'rejected') expect(r.reason instanceof ConcurrentModificationError || r.reason instanceof TransientError).toBe(true);
      }
      const stored = await store.get(record);
      expect(stored?.version).toBe(fulfilled.length === 1 ? 2 : 1);
      expect(await historyRows(record.user_id)).toHaveLength(1 + fulfilled.length);
    });

    it('fences a delete on version', async () => {
      const record = await created();
      await expect(
        store.commit({ writes: [{ kind: 'delete', read: { ...record, version: record.version + 5 } }], history: [] }),
      ).rejects.toBeInstanceOf(ConcurrentModificationError);
      expect(await store.get(record)).toBeDefined();
    });

    it('treats an update of a record that no longer exists as a concurrent modification', async () => {
      const record = makeRecord();
      const after = nextVersion(record);
      await expect(
        store.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyOf(after)] }),
      ).rejects.toBeInstanceOf(ConcurrentModificationError);
      expect(await rawPrimary(record)).toBeUndefined();
    });

    it('refuses an update whose version does not advance by one', async () => {
      const record = await created();
      await expect(
        store.commit({ writes: [{ kind: 'update', read: record, record: { ...record } }], history: [] }),
      ).rejects.toBeInstanceOf(InvalidTransactionError);
    });
  });

  describe('history rows', () => {
    it('never overwrites an audit row: a colliding last_run_date fails the whole transaction', async () => {
      const record = await created({ payment_error: 'original' });
      const after = { ...nextVersion(record, { billing_status: 'ACHSENT' }), last_run_date: record.last_run_date };
      await expect(
        store.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyOf(after, { payment_error: 'overwritten?' })] }),
      ).rejects.toBeInstanceOf(ConcurrentModificationError);
      expect((await store.get(record))?.billing_status).toBe('PENDING');
      const rows = await historyRows(record.user_id);
      expect(rows).toHaveLength(1);
      expect(rows[0]?.payment_error).toEqual({ S: 'original' });
    });
  });

  describe('createIfAbsent (the next period)', () => {
    it('creates the next period with its history row when it is absent', async () => {
      const record = await created();
      const after = nextVersion(record, { billing_status: 'ACHSENT', payment_attempts: 1 });
      const next = makeRecord({ user_id: record.user_id, billing_date: dayAt(30), last_run_date: freshStamp() });
      const result = await store.commit({
        writes: [{ kind: 'update', read: record, record: after }],
        history: [historyOf(after)],
        createIfAbsent: { record: next, history: historyOf(next) },
      });
      expect(result).toEqual({ created: true });
      expect((await store.get(next))?.subscription_id).toBe(next.subscription_id);
      expect(await historyRows(record.user_id)).toHaveLength(3);
    });

    it('skips the next period when it exists and still commits the rest', async () => {
      const record = await created();
      const existing = await created({ user_id: record.user_id, billing_date: dayAt(30), amount_cents: 500 });
      const after = nextVersion(record, { billing_status: 'ACHSENT', payment_attempts: 1 });
      const next = makeRecord({ user_id: record.user_id, billing_date: dayAt(30), amount_cents: 777, last_run_date: freshStamp() });
      const result = await store.commit({
        writes: [{ kind: 'update', read: record, record: after }],
        history: [historyOf(after)],
        createIfAbsent: { record: next, history: historyOf(next) },
      });
      expect(result).toEqual({ created: false });
      expect((await store.get(record))?.billing_status).toBe('ACHSENT');
      expect((await store.get(existing))?.amount_cents).toBe(500);
      const stamps = (await historyRows(record.user_id)).map((r) => r.last_run_date?.S);
      expect(stamps).toContain(after.last_run_date);
      expect(stamps).not.toContain(next.last_run_date);
    });

    it('does not retry when the version fence fails beside an existing next period', async () => {
      const record = await created();
      await created({ user_id: record.user_id, billing_date: dayAt(30) });
      const after = { ...nextVersion(record), version: record.version + 8 };
      const next = makeRecord({ user_id: record.user_id, billing_date: dayAt(30), last_run_date: freshStamp() });
      await expect(
        store.commit({
          writes: [{ kind: 'update', read: { ...record, version: record.version + 7 }, record: after }],
          history: [historyOf(after)],
          createIfAbsent: { record: next, history: historyOf(next) },
        }),
      ).rejects.toBeInstanceOf(ConcurrentModificationError);
      expect(await historyRows(record.user_id)).toHaveLength(2);
    });

    describe('another chain’s record at the key (chain identity, F10)', () => {
      /** A period of chain `chain` that just left PENDING, and its successor at day 30 of the same chain. */
      async function attemptOf(chain: string) {
        const record = await created({ chain_id: chain });
        const after = nextVersion(record, { billing_status: 'COMPLETED', payment_attempts: 1 });
        const next = makeRecord({ user_id: record.user_id, billing_date: dayAt(30), chain_id: chain, last_run_date: freshStamp() });
        return { record, after, next, tx: { writes: [{ kind: 'update' as const, read: record, record: after }], history: [historyOf(after)], createIfAbsent: { record: next, history: historyOf(next) } } };
      }

      it('moves the next period to the next free instant, with its history row, and leaves the other chain’s record alone', async () => {
        const { record, next, tx } = await attemptOf('chain-new');
        const closed = await created({ user_id: record.user_id, billing_date: dayAt(30), chain_id: 'chain-old', billing_status: 'WAIVED' });
        expect(await store.commit(tx)).toEqual({ created: true });
        expect(await store.get(closed)).toEqual(closed);
        const moved = await store.get({ user_id: record.user_id, billing_date: dayAt(30).replace('000000000Z', '000000001Z') });
        expect(moved).toMatchObject({ subscription_id: next.subscription_id, chain_id: 'chain-new', billing_status: 'PENDING' });
        const row = (await historyRows(record.user_id)).find((r) => r.last_run_date?.S === next.last_run_date);
        expect(row?.billing_date?.S).toBe(moved!.billing_date);
        expect((await store.get(record))?.billing_status).toBe('COMPLETED');
      });

      it('moves past every instant another chain holds (a legacy record, without chain_id, is another chain)', async () => {
        const { record, next, tx } = await attemptOf('chain-new');
        await created({ user_id: record.user_id, billing_date: dayAt(30), billing_status: 'CANCELLED' });
        await created({ user_id: record.user_id, billing_date: dayAt(30).replace('000000000Z', '000000001Z'), chain_id: 'chain-b', billing_status: 'WAIVED' });
        expect(await store.commit(tx)).toEqual({ created: true });
        expect((await store.get({ user_id: record.user_id, billing_date: dayAt(30).replace('000000000Z', '000000002Z') }))?.subscription_id).toBe(next.subscription_id);
      });

      it('finds its own chain’s period at a moved instant and creates nothing more', async () => {
        const { record, tx } = await attemptOf('chain-new');
        await created({ user_id: record.user_id, billing_date: dayAt(30), chain_id: 'chain-old', billing_status: 'WAIVED' });
        const ahead = await created({ user_id: record.user_id, billing_date: dayAt(30).replace('000000000Z', '000000001Z'), chain_id: 'chain-new', amount_cents: 500 });
        expect(await store.commit(tx)).toEqual({ created: false });
        expect(await store.get(ahead)).toEqual(ahead);
        expect((await store.listByUser(record.user_id)).items).toHaveLength(3);
        expect((await store.get(record))?.billing_status).toBe('COMPLETED');
      });

      it('moves a displaceable create (a membership’s new period) but refuses a plain one, and one of the same chain', async () => {
        const closed = await created({ chain_id: 'chain-old', billing_status: 'CANCELLED' });
        const plain = makeRecord({ user_id: closed.user_id, billing_date: closed.billing_date, chain_id: 'chain-new' });
        await expect(store.commit({ writes: [{ kind: 'create', record: plain }], history: [historyOf(plain)] })).rejects.toBeInstanceOf(AlreadyExistsError);
        const same = makeRecord({ user_id: closed.user_id, billing_date: closed.billing_date, chain_id: 'chain-old' });
        await expect(store.commit({ writes: [{ kind: 'create', record: same, displace: true }], history: [historyOf(same)] })).rejects.toBeInstanceOf(AlreadyExistsError);
        await store.commit({ writes: [{ kind: 'create', record: plain, displace: true }], history: [historyOf(plain)] });
        const moved = await store.get({ user_id: closed.user_id, billing_date: closed.billing_date.replace('000000000Z', '000000001Z') });
        expect(moved?.subscription_id).toBe(plain.subscription_id);
        expect((await historyRows(closed.user_id)).filter((r) => r.subscription_id?.S === plain.subscription_id).map((r) => r.billing_date?.S)).toEqual([moved!.billing_date]);
      });
    });

    it('answers created: false for a transaction that is only an existing next period', async () => {
      const existing = await created();
      const next = { ...existing, last_run_date: freshStamp() };
      expect(await store.commit({ writes: [], history: [], createIfAbsent: { record: next, history: historyOf(next) } })).toEqual({ created: false });
    });
  });

  it('changes a due date as delete + create in one commit: old gone, new present, two history rows', async () => {
    const record = await created();
    const deleted = nextVersion(record, { updated_event: 'DUE_DATE_CHANGED' });
    const moved = { ...nextVersion(deleted, { billing_date: dayAt(5), updated_event: 'DUE_DATE_CHANGED' }), version: 1 };
    await store.commit({
      writes: [
        { kind: 'delete', read: record },
        { kind: 'create', record: moved },
      ],
      history: [historyOf(deleted, { actor: 'user-self' }), historyOf(moved, { actor: 'user-self' })],
    });
    expect(await store.get(record)).toBeUndefined();
    expect((await store.get(moved))?.subscription_id).toBe(record.subscription_id);
    expect(await historyRows(record.user_id)).toHaveLength(3);
    expect((await store.findBySubscriptionId(record.subscription_id))?.billing_date).toBe(dayAt(5));
  });

  it('leaves everything as it was when the new due date is taken', async () => {
    const record = await created();
    await created({ user_id: record.user_id, billing_date: dayAt(5) });
    const moved = { ...nextVersion(record, { billing_date: dayAt(5) }), version: 1 };
    await expect(
      store.commit({
        writes: [
          { kind: 'delete', read: record },
          { kind: 'create', record: moved },
        ],
        history: [historyOf(moved)],
      }),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
    expect(await store.get(record)).toBeDefined();
    expect(await historyRows(record.user_id)).toHaveLength(2);
  });

  describe('transaction limits', () => {
    it('refuses more than 100 items before calling DynamoDB', async () => {
      const user = `user-big`;
      const records = Array.from({ length: 51 }, (_, i) => makeRecord({ user_id: user, billing_date: dayAt(i) }));
      await expect(
        store.commit({ writes: records.map((record) => ({ kind: 'create' as const, record })), history: records.map((r) => historyOf(r)) }),
      ).rejects.toBeInstanceOf(InvalidTransactionError);
    });

    it('refuses a transaction that writes one item twice', async () => {
      const record = makeRecord();
      await expect(store.commit({ writes: [{ kind: 'create', record }], history: [historyOf(record), historyOf(record)] })).rejects.toBeInstanceOf(
        InvalidTransactionError,
      );
    });
  });

  describe('addAll', () => {
    it('writes 60 records and their 60 history rows (120 items) in chunks', async () => {
      const user = `user-addall-${Date.now()}`;
      const records = Array.from({ length: 60 }, (_, i) => makeRecord({ user_id: user, billing_date: dayAt(i) }));
      await store.addAll(records, records.map((r) => historyOf(r)));
      const page = await store.listByUser(user, { limit: 1000 });
      expect(page.items).toHaveLength(60);
      expect(await historyRows(user)).toHaveLength(60);
    });

    it('is atomic per chunk: a conflict in the second chunk writes none of it, and the first chunk stands', async () => {
      const user = `user-addall-conflict-${Date.now()}`;
      const records = Array.from({ length: 120 }, (_, i) => makeRecord({ user_id: user, billing_date: dayAt(i) }));
      // Record 70 is in the second chunk (records 50..99, two items each).
      await store.commit({ writes: [{ kind: 'create', record: records[70]! }], history: [historyOf(records[70]!)] });
      await expect(store.addAll(records, records.map((r) => historyOf(r)))).rejects.toBeInstanceOf(AlreadyExistsError);
      const stored = new Set((await store.listByUser(user, { limit: 1000 })).items.map((r) => r.billing_date));
      expect(stored.size).toBe(51);
      for (let i = 0; i < 50; i++) expect(stored.has(dayAt(i))).toBe(true);
      expect(stored.has(dayAt(70))).toBe(true);
      expect(stored.has(dayAt(50))).toBe(false);
      expect(stored.has(dayAt(110))).toBe(false);
      // Exactly the first chunk's 50 history rows plus the pre-existing one.
      expect(await historyRows(user)).toHaveLength(51);
    });

    it('keeps several history rows with their record and refuses a record without one', async () => {
      const record = makeRecord();
      const second = historyOf(record, { last_run_date: freshStamp(), actor: 'op' });
      await store.addAll([record], [historyOf(record), second]);
      expect(await historyRows(record.user_id)).toHaveLength(2);
      await expect(store.addAll([makeRecord()], [])).rejects.toBeInstanceOf(InvalidTransactionError);
      await expect(store.addAll([makeRecord()], [historyOf(makeRecord())])).rejects.toBeInstanceOf(InvalidTransactionError);
    });
  });

  it('reports a corrupt item as CorruptItemError naming its key', async () => {
    const record = makeRecord();
    await db.client.send(
      new PutItemCommand({
        TableName: db.tables.billingActivity,
        Item: { user_id: { S: record.user_id }, billing_date: { S: record.billing_date }, amount: { S: '19.99' }, version: { N: '1' } },
      }),
    );
    const error = await store.get(record).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptItemError);
    expect((error as Error).message).toContain(record.user_id);
    expect((error as Error).message).toContain(record.billing_date);
  });
});
