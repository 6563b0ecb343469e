import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../src/adapters/dynamodb/billing/store.js';
import { GAUGE_PARTITION } from '../../../src/adapters/dynamodb/gauge-counters.js';
import { countGaugesFromIndexes, reconcileGauges } from '../../../src/adapters/dynamodb/gauge-reconcile.js';
import { historyRowOf } from '../../../src/domain/billing-record.js';
import { ConcurrentModificationError } from '../../../src/domain/errors.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { retryBilling } from '../../../src/domain/use-cases/retry-billing.js';
import { runCollectionAttempt, saveFailure } from '../../../src/domain/use-cases/collect.js';
import { waive } from '../../../src/domain/use-cases/waive.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { dueRecord, makeRecord, nextVersion } from '../../support/billing-fixtures.js';
import { HOUR } from '../../support/time.js';

/**
 * Issue 13: the failing and dunning gauges are counters kept by the writes themselves (in the
 * record's own transaction), read by one Query. After every kind of write they equal what COUNT
 * queries over the failing-index and dunning-index find.
 */
describe('gauge counters on DynamoDB Local', () => {
  let app: TestApp;
  let store: DynamoBillingStore;
  let client: DynamoDBClient;
  let table: string;
  const SHARDS = 4;
  const NOW = Date.parse('2026-12-01T12:00:00.000Z');
  const at = (offsetMs: number) => formatInstant(new Date(NOW + offsetMs));
  /** Transactions sent, with how many items each. */
  const transactions: number[] = [];

  beforeAll(async () => {
    app = await createTestApp({ label: 'gauges', statusShardCount: SHARDS, now: at(0) });
    client = app.db.client;
    table = app.db.tables.billingActivity;
    store = app.deps.billing as DynamoBillingStore;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if ((context as { commandName?: string }).commandName === 'TransactWriteItemsCommand') {
          transactions.push((args.input as { TransactItems: unknown[] }).TransactItems.length);
        }
        return next(args);
      },
      { step: 'initialize', name: 'countTransactions' },
    );
  });
  beforeEach(() => {
    app.clock.set(at(0));
    app.simulator.configure({ default: 'approve', users: {}, accounts: {} } as never);
  });

  /** The gauges as the counters say, beside what the indexes hold. */
  const expectCountersMatchIndexes = async () => {
    const counted = await countGaugesFromIndexes(client, table, SHARDS);
    const failing = await store.countFailing();
    const dunning = await store.countDunning();
    expect({ failing, dunning }).toEqual({
      failing: { retrying: counted.failing_retrying, parked: counted.failing_parked },
      dunning: { retrying: counted.dunning_retrying, exhausted: counted.dunning_exhausted },
    });
    return counted;
  };

  const failed = (overrides: Partial<BillingRecord> = {}) =>
    makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-2 * HOUR), payment_method: 'card', ...overrides });
  const inDunning = { decline_code: 'insufficient_funds', decline_class: 'retry_later' as const, dunning_first_declined_at: at(-2 * HOUR), dunning_attempts: 1 };

  it('a failure, its ladder to parked and an operator retry move the failing gauge, each in the record’s own transaction', async () => {
    const before = await expectCountersMatchIndexes();
    const record = dueRecord(new Date(NOW), 'card');
    await store.addAll([record], [historyRowOf(record)]);
    // The processor is down: the attempt saves a counted failure (healthy -> retrying).
    app.simulator.configure({ default: 'error', users: {}, accounts: {} } as never);
    transactions.length = 0;
    await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner: 'worker' });
    // One transaction: the update, its audit row and the counter (the lock release is apart on this path).
    expect(transactions).toEqual([3]);
    let counted = await expectCountersMatchIndexes();
    expect(counted.failing_retrying).toBe(before.failing_retrying + 1);
    let read = (await store.get(record))!;
    for (let i = 0; i < 7; i++) read = (await saveFailure(app.deps, read, 'boom', new Date(NOW), { process: 'SCHEDULED' }))!;
    expect(read.billing_next_attempt_at).toBeUndefined();
    counted = await expectCountersMatchIndexes();
    expect(counted.failing_parked).toBe(before.failing_parked + 1);
    expect(counted.failing_retrying).toBe(before.failing_retrying);
    // retry-billing clears it and bills it (parked -> healthy).
    app.simulator.configure({ default: 'approve', users: {}, accounts: {} } as never);
    await retryBilling(app.deps, { subscriptionId: record.subscription_id, owner: 'operator' });
    counted = await expectCountersMatchIndexes();
    expect(counted).toEqual(before);
  });

  it('a successful scheduled attempt writes no counter: one transaction of record, row, successor, row, lock release, movement row and the card\'s presentment', async () => {
    const record = dueRecord(new Date(NOW), 'card');
    await store.addAll([record], [historyRowOf(record)]);
    transactions.length = 0;
    await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner: 'worker' });
    expect(transactions).toEqual([7]);
    await expectCountersMatchIndexes();
  });

  it('a decline into dunning, its exhaustion and a waive move the dunning gauge', async () => {
    const before = await expectCountersMatchIndexes();
    const record = dueRecord(new Date(NOW), 'card');
    await store.addAll([record], [historyRowOf(record)]);
    app.simulator.configure({ default: 'decline:insufficient_funds', users: {}, accounts: {} } as never);
    await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner: 'worker' });
    let read = (await store.get(record))!;
    expect(read.billing_status).toBe('FAILED');
    let counted = await expectCountersMatchIndexes();
    expect(counted.dunning_retrying).toBe(before.dunning_retrying + 1);
    // The cycle's budget spent: no next attempt (retrying -> exhausted), through the normal update path.
    const { dunning_next_attempt_at: _slot, ...rest } = read;
    const exhausted = nextVersion(rest as BillingRecord);
    await store.commit({ writes: [{ kind: 'update', read, record: exhausted }], history: [historyRowOf(exhausted)] });
    counted = await expectCountersMatchIndexes();
    expect(counted.dunning_exhausted).toBe(before.dunning_exhausted + 1);
    expect(counted.dunning_retrying).toBe(before.dunning_retrying);
    read = (await store.get(record))!;
    await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'operator', reason: 'goodwill' });
    expect(await expectCountersMatchIndexes()).toEqual(before);
  });

  it('creates count their record (commit, createIfAbsent, addAll); a delete and its moved create (due-date change) count both', async () => {
    const before = await expectCountersMatchIndexes();
    const retrying = failed({ ...inDunning, dunning_next_attempt_at: at(24 * HOUR) });
    const exhausted = failed(inDunning);
    await store.commit({ writes: [{ kind: 'create', record: retrying }], history: [historyRowOf(retrying)] });
    const paid = nextVersion(makeRecord(), { billing_status: 'COMPLETED', payment_attempts: 1 });
    await store.addAll([paid], [historyRowOf(paid)]);
    const done = nextVersion(paid, { version: paid.version + 1 });
    await store.commit({ writes: [{ kind: 'update', read: paid, record: done }], history: [historyRowOf(done)], createIfAbsent: { record: exhausted, history: historyRowOf(exhausted) } });
    const live = (r: BillingRecord, next?: string): BillingRecord => ({
      ...r,
      billing_failed_for: `${r.billing_date}#${r.payment_attempts}`,
      billing_failure_count: 3,
      billing_failed_at: at(0),
      billing_last_error: 'x',
      ...(next ? { billing_next_attempt_at: next } : {}),
    });
    const many = [live(makeRecord({ billing_date: at(-HOUR) }), at(HOUR)), live(makeRecord({ billing_date: at(-HOUR) })), live(failed({ ...inDunning }))];
    await store.addAll(many, many.map((r) => historyRowOf(r)));
    let counted = await expectCountersMatchIndexes();
    expect(counted).toEqual({
      failing_retrying: before.failing_retrying + 1,
      failing_parked: before.failing_parked + 2,
      dunning_retrying: before.dunning_retrying + 1,
      dunning_exhausted: before.dunning_exhausted + 2,
    });
    // A due-date change: the old key deleted, the period created at the new one (its failure, keyed to the old date, is void).
    const old = many[0]!;
    const moved = { ...old, billing_date: at(30 * 24 * HOUR), version: 0, last_run_date: at(2) };
    await store.commit({ writes: [{ kind: 'delete', read: old }, { kind: 'create', record: moved }], history: [historyRowOf({ ...old, last_run_date: at(1), version: old.version + 1 }), historyRowOf(moved)] });
    counted = await expectCountersMatchIndexes();
    expect(counted.failing_retrying).toBe(before.failing_retrying);
  });

  it('a write whose condition fails adds nothing', async () => {
    const record = failed({ ...inDunning, dunning_next_attempt_at: at(24 * HOUR) });
    await store.addAll([record], [historyRowOf(record)]);
    const before = await expectCountersMatchIndexes();
    const stale = { ...record, version: record.version - 1 };
    const waived = nextVersion(stale, { billing_status: 'WAIVED' });
    await expect(store.commit({ writes: [{ kind: 'update', read: stale, record: waived }], history: [historyRowOf(waived)] })).rejects.toBeInstanceOf(ConcurrentModificationError);
    expect(await expectCountersMatchIndexes()).toEqual(before);
  });

  it('the gauges are one Query of the counters, whatever the indexes hold', async () => {
    const sent: string[] = [];
    const probe = new DynamoBillingStore({ client, tableName: table, historyTableName: app.db.tables.billingActivityHistory, statusShardCount: SHARDS });
    client.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(String((context as { commandName?: string }).commandName));
        return next(args);
      },
      { step: 'initialize', name: 'countGaugeReads' },
    );
    try {
      await probe.countFailing();
      await probe.countDunning();
    } finally {
      client.middlewareStack.remove('countGaugeReads');
    }
    expect(sent).toEqual(['QueryCommand', 'QueryCommand']);
  });

  describe('reconcile (an existing table)', () => {
    const counterItems = async () =>
      (await client.send(new QueryCommand({ TableName: table, KeyConditionExpression: 'user_id = :p', ExpressionAttributeValues: { ':p': { S: GAUGE_PARTITION } }, ConsistentRead: true }))).Items ?? [];
    /** Counters lost: as on a table written before they existed. */
    const dropCounters = async () => {
      for (const item of await counterItems()) await client.send(new DeleteItemCommand({ TableName: table, Key: { user_id: item.user_id!, billing_date: item.billing_date! } }));
    };

    it('counts the indexes once, adds the difference, and a second run finds nothing to correct', async () => {
      const truth = await countGaugesFromIndexes(client, table, SHARDS);
      expect(truth.failing_parked + truth.dunning_exhausted).toBeGreaterThan(0);
      await dropCounters();
      expect(await store.countFailing()).toEqual({ retrying: 0, parked: 0 });
      const dry = await reconcileGauges({ client, table, shardCount: SHARDS, settleMs: 0, dryRun: true });
      expect(dry).toMatchObject({ written: false, correction: truth });
      expect(await store.countFailing()).toEqual({ retrying: 0, parked: 0 });
      const report = await reconcileGauges({ client, table, shardCount: SHARDS, settleMs: 0 });
      expect(report).toMatchObject({ written: true, counted: truth, correction: truth, rounds: 1 });
      await expectCountersMatchIndexes();
      const again = await reconcileGauges({ client, table, shardCount: SHARDS, settleMs: 0 });
      expect(again.written).toBe(false);
      expect(again.correction).toEqual({ failing_retrying: 0, failing_parked: 0, dunning_retrying: 0, dunning_exhausted: 0 });
    });

    it('counts again when a class-changing write lands while it counts, and keeps that write’s delta', async () => {
      await dropCounters();
      let writes = 0;
      const report = await reconcileGauges({
        client,
        table,
        shardCount: SHARDS,
        settleMs: 0,
        onCounting: async () => {
          if (writes++ > 0) return;
          const record = failed({ ...inDunning });
          await store.addAll([record], [historyRowOf(record)]);
        },
      });
      expect(report.rounds).toBe(2);
      await expectCountersMatchIndexes();
      // A write after the reconcile adds to the corrected counters.
      const later = failed({ ...inDunning });
      await store.addAll([later], [historyRowOf(later)]);
      await expectCountersMatchIndexes();
    });

    it('gives up without writing when writes keep landing', async () => {
      const before = await store.countDunning();
      await expect(
        reconcileGauges({
          client,
          table,
          shardCount: SHARDS,
          settleMs: 0,
          maxRounds: 2,
          onCounting: async () => {
            const record = failed({ ...inDunning });
            await store.addAll([record], [historyRowOf(record)]);
          },
        }),
      ).rejects.toThrow(/nothing written/);
      expect((await store.countDunning()).exhausted).toBe(before.exhausted + 2);
      await expectCountersMatchIndexes();
    });
  });
});
