import {
  GetItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { isFailureLive, dueKey, type BillingFailureFields } from '../../domain/ladder.js';
import type { BillingStore, BillingTransaction, LockRelease, Page, PageRequest } from '../../domain/ports.js';
import { MAX_PLACEMENT_PROBES, nextFreeInstant, sameChain } from '../../domain/chain.js';
import { addNanos, normalizeInstant } from '../../domain/time.js';
import { keyOf, type BillingKey, type BillingRecord, type BillingStatus, type HistoryRow } from '../../domain/records.js';
import { COLLECTIBLE_STATUSES } from '../../domain/statuses.js';
import { counterUpdate, readCounters, type CounterKeyNames } from './ach-rate-counters.js';
import { addGaugeCounts, gaugeCounterAdd, gaugeDelta, gaugeShardSortKey, isNoChange, NO_GAUGE_COUNTS, readGaugeCounters, type GaugeCounts } from './gauge-counters.js';
import { marshallItem } from './attribute-codec.js';
import type { AchRateCounts, AchRateTally } from '../../domain/ach-return-rates.js';
import type { DunningState } from '../../domain/dunning.js';
import {
  DEFAULT_STATUS_SHARD_COUNT,
  type DunningPartition,
  describeKey,
  dueIndexKey,
  dueShardOf,
  failingIndexKey,
  historyFromItem,
  historyItem,
  primaryItem,
  primaryKey,
  recordFromItem,
} from './billing-item.js';
import {
  InvalidTransactionError,
  cancellationCodes,
  toDomainError,
  type TransactionItemDescription,
} from './errors.js';
import { DEFAULT_PAGE_LIMIT, decodeStartKey, encodeStartKey, listAcrossShards, pageLimit, streamAcrossShards } from './pagination.js';
import { assertShardCount } from './sharding.js';
import { BILLING_ACTIVITY_INDEXES } from './table-definitions.js';

/** `:pending`, `:failed`: the collectible statuses (statuses.ts) as condition values. */
const COLLECTIBLE_VALUES = Object.fromEntries([...COLLECTIBLE_STATUSES].map((status) => [`:${status.toLowerCase()}`, status]));

/** The ACH return-rate counters live in billing-activity under these key attributes (ach-rate-counters.ts). */
const COUNTER_KEYS: CounterKeyNames = { partition: 'user_id', sort: 'billing_date' };

/** DynamoDB's limit on items in one TransactWriteItems. */
export const MAX_TRANSACTION_ITEMS = 100;

export interface DynamoBillingStoreOptions {
  readonly client: DynamoDBClient;
  /** billing-activity */
  readonly tableName: string;
  /** billing-activity-history */
  readonly historyTableName: string;
  /** Shards of status-index (DESIGN 2.1). Changing it strands records under the old shard numbers. */
  readonly statusShardCount?: number;
  /** locks: needed for a commit that releases the user's lock in its transaction. */
  readonly locksTableName?: string;
}

/** A create in a planned transaction: where it is, and whether it may move (`displace`) or be dropped (`createIfAbsent`). */
interface PlannedCreate {
  readonly index: number;
  readonly record: BillingRecord;
  readonly movable: boolean;
  readonly optional: boolean;
  /** Its index in `writes` (-1: the createIfAbsent). */
  readonly at: number;
}

interface PlannedWrite {
  readonly item: TransactWriteItem;
  readonly description: TransactionItemDescription;
  /** table + key: DynamoDB refuses two operations on one item in a transaction. */
  readonly identity: string;
}

/**
 * billing-activity + billing-activity-history (DESIGN 2.1, 2.5, 5). Every change to a record and
 * its audit rows go in one TransactWriteItems; every write of a record is conditional (on its
 * absence or on `version`); audit rows are never overwritten.
 */
export class DynamoBillingStore implements BillingStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly historyTable: string;
  private readonly shardCount: number;
  private readonly locksTable: string | undefined;

  constructor(options: DynamoBillingStoreOptions) {
    this.client = options.client;
    this.locksTable = options.locksTableName;
    this.table = options.tableName;
    this.historyTable = options.historyTableName;
    this.shardCount = assertShardCount(options.statusShardCount ?? DEFAULT_STATUS_SHARD_COUNT, 'statusShardCount');
  }

  /* ---------------- reads ---------------- */

  async get(key: BillingKey): Promise<BillingRecord | undefined> {
    const out = await this.send('billing.get', () =>
      this.client.send(new GetItemCommand({ TableName: this.table, Key: primaryKey(key), ConsistentRead: true })),
    );
    return out.Item ? recordFromItem(out.Item, this.table) : undefined;
  }

  /** The GSI is eventually consistent: it only finds the key; the record comes from a consistent get. */
  async findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined> {
    const keys = await this.locateSubscription(subscriptionId);
    // A due-date change keeps the subscription id on a new key; the index may still show the old one.
    const candidates = await Promise.all(keys.map((key) => this.get(key)));
    const current = candidates.filter((r): r is BillingRecord => r !== undefined && r.subscription_id === subscriptionId);
    return current.sort((a, b) => (a.last_run_date < b.last_run_date ? 1 : -1))[0];
  }

  async locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]> {
    const out = await this.send('billing.locateSubscription', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: BILLING_ACTIVITY_INDEXES.bySubscriptionId,
          KeyConditionExpression: 'subscription_id = :s',
          ExpressionAttributeValues: { ':s': { S: subscriptionId } },
          ProjectionExpression: 'user_id, billing_date',
        }),
      ),
    );
    return (out.Items ?? []).map((item) => ({ user_id: item.user_id?.S ?? '', billing_date: item.billing_date?.S ?? '' }));
  }

  async listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>> {
    const out = await this.send('billing.listByUser', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'user_id = :u',
          ExpressionAttributeValues: { ':u': { S: userId } },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['user_id', 'billing_date'], { user_id: userId }),
        }),
      ),
    );
    return {
      items: (out.Items ?? []).map((item) => recordFromItem(item, this.table)),
      next: encodeStartKey(out.LastEvaluatedKey),
    };
  }

  /**
   * Every status shard queried in parallel with `billing_date <= dueAtOrBefore`, merged oldest
   * billing_date first (records with the same billing_date in no particular order). Served from
   * the GSI, so eventually consistent: callers re-read a record before acting on it.
   */
  async listByStatus(status: BillingStatus, dueAtOrBefore: string, page?: PageRequest): Promise<Page<BillingRecord>> {
    const limit = pageLimit(page);
    // Stored dates are nine-digit UTC; a bound in another RFC3339 form would compare wrongly as a string.
    const due = normalizeInstant(dueAtOrBefore);
    // `billing_date < due + 1 ns` is `<= due`, said so that a resume key tied at the bound still
    // matches the range predicate: DynamoDB Local refuses such a key under `<=`.
    const before = addNanos(due, 1);
    const { items, next } = await listAcrossShards({
      shardCount: this.shardCount,
      fingerprint: `billing|${status}|${due}|${this.shardCount}`,
      limit,
      cursor: page?.cursor,
      query: async (shard, startKey, shardLimit) => {
        const out = await this.send('billing.listByStatus', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: BILLING_ACTIVITY_INDEXES.byStatus,
              KeyConditionExpression: 'status_shard = :ss AND billing_date < :before',
              ExpressionAttributeValues: { ':ss': { S: `${status}#${shard}` }, ':before': { S: before } },
              Limit: shardLimit,
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
      },
      sortValue: (item) => item.billing_date?.S ?? '',
      resumeKeyOf: (item) => ({
        status_shard: item.status_shard?.S ?? '',
        billing_date: item.billing_date?.S ?? '',
        user_id: item.user_id?.S ?? '',
      }),
    });
    return { items: items.map((item) => recordFromItem(item, this.table)), next };
  }

  async listFailing(page?: PageRequest): Promise<Page<BillingRecord>> {
    const { items, next } = await listAcrossShards({
      shardCount: this.shardCount,
      fingerprint: `failing|${this.shardCount}`,
      limit: pageLimit(page),
      cursor: page?.cursor,
      query: async (shard, startKey, shardLimit) => {
        const out = await this.send('billing.listFailing', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: BILLING_ACTIVITY_INDEXES.failing,
              KeyConditionExpression: 'failing_shard = :fs',
              ExpressionAttributeValues: { ':fs': { S: `FAILING#${shard}` } },
              Limit: shardLimit,
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
      },
      sortValue: (item) => item.billing_failed_at?.S ?? '',
      resumeKeyOf: (item) => ({
        failing_shard: item.failing_shard?.S ?? '',
        billing_failed_at: item.billing_failed_at?.S ?? '',
        user_id: item.user_id?.S ?? '',
        billing_date: item.billing_date?.S ?? '',
      }),
    });
    return { items: items.map((item) => recordFromItem(item, this.table)), next };
  }

  /** The gauge counters kept by the writes (gauge-counters.ts): one Query of the `GAUGES#` partition. */
  async countFailing(): Promise<{ retrying: number; parked: number }> {
    const counts = await readGaugeCounters(this.client, this.table, COUNTER_KEYS, 'billing.countFailing');
    return { retrying: counts.failing_retrying, parked: counts.failing_parked };
  }

  async listExceptions(page?: PageRequest): Promise<Page<BillingRecord>> {
    const { items, next } = await listAcrossShards({
      shardCount: this.shardCount,
      fingerprint: `exceptions|${this.shardCount}`,
      limit: pageLimit(page),
      cursor: page?.cursor,
      query: async (shard, startKey, shardLimit) => {
        const out = await this.send('billing.listExceptions', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: BILLING_ACTIVITY_INDEXES.exceptions,
              KeyConditionExpression: 'exception_shard = :es',
              ExpressionAttributeValues: { ':es': { S: `EXCEPTION#${shard}` } },
              Limit: shardLimit,
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
      },
      sortValue: (item) => item.exception_at?.S ?? '',
      resumeKeyOf: (item) => ({
        exception_shard: item.exception_shard?.S ?? '',
        exception_at: item.exception_at?.S ?? '',
        user_id: item.user_id?.S ?? '',
        billing_date: item.billing_date?.S ?? '',
      }),
    });
    return { items: items.map((item) => recordFromItem(item, this.table)), next };
  }

  /**
   * Every record whose next eligible instant (due-index `due_at`) is at or before `dueAtOrBefore`,
   * whatever its status (one partition per shard, `DUE#n`), oldest first across shards, in pages
   * of `pageSize`: only due work is read (parked, exhausted and held records are not in the index).
   * Each shard is read as one stream of large Queries (pagination.ts `streamAcrossShards`);
   * `queryLimit` (items per Query) is for tests.
   * Eventually consistent: the caller trusts each item's own status; the attempt re-reads before acting.
   */
  async *streamDue(
    dueAtOrBefore: string,
    options: { readonly pageSize?: number; readonly queryLimit?: number } = {},
  ): AsyncGenerator<readonly BillingRecord[], void, undefined> {
    // `due_at < due + 1 ns` is `<= due`, said so that a resume key tied at the bound still matches.
    const before = addNanos(normalizeInstant(dueAtOrBefore), 1);
    const pages = streamAcrossShards({
      shardCount: this.shardCount,
      pageSize: options.pageSize ?? DEFAULT_PAGE_LIMIT,
      ...(options.queryLimit !== undefined ? { queryLimit: options.queryLimit } : {}),
      query: async (shard, startKey, limit) => {
        const out = await this.send('billing.streamDue', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: BILLING_ACTIVITY_INDEXES.due,
              KeyConditionExpression: 'due_shard = :ds AND due_at < :before',
              ExpressionAttributeValues: { ':ds': { S: dueShardOf(shard) }, ':before': { S: before } },
              Limit: limit,
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
      },
      sortValue: (item) => item.due_at?.S ?? '',
      resumeKeyOf: (item) => ({
        due_shard: item.due_shard?.S ?? '',
        due_at: item.due_at?.S ?? '',
        user_id: item.user_id?.S ?? '',
        billing_date: item.billing_date?.S ?? '',
      }),
    });
    for await (const items of pages) yield items.map((item) => recordFromItem(item, this.table));
  }

  async listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>> {
    const partition = state === 'retrying' ? 'RETRYING' : 'EXHAUSTED';
    return this.listDunningPartitions([partition], `dunning|${state}${nextAttemptBefore === undefined ? '' : '|before'}`, page, nextAttemptBefore);
  }

  /** The gauge counters kept by the writes (gauge-counters.ts): one Query of the `GAUGES#` partition. */
  async countDunning(): Promise<Record<DunningState, number>> {
    const counts = await readGaugeCounters(this.client, this.table, COUNTER_KEYS, 'billing.countDunning');
    return { retrying: counts.dunning_retrying, exhausted: counts.dunning_exhausted };
  }

  /** The dunning index's partitions × every shard, merged by `dunning_due_at` (then the table key). */
  private async listDunningPartitions(
    partitions: readonly DunningPartition[],
    fingerprint: string,
    page: PageRequest | undefined,
    before?: string,
  ): Promise<Page<BillingRecord>> {
    const { items, next } = await listAcrossShards({
      shardCount: this.shardCount * partitions.length,
      fingerprint: `${fingerprint}|${this.shardCount}`,
      limit: pageLimit(page),
      cursor: page?.cursor,
      query: async (virtual, startKey, shardLimit) => {
        const partition = `${partitions[Math.floor(virtual / this.shardCount)]!}#${virtual % this.shardCount}`;
        const out = await this.send('billing.listDunning', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: BILLING_ACTIVITY_INDEXES.dunning,
              KeyConditionExpression: before === undefined ? 'dunning_shard = :ds' : 'dunning_shard = :ds AND dunning_due_at < :before',
              ExpressionAttributeValues: { ':ds': { S: partition }, ...(before === undefined ? {} : { ':before': { S: before } }) },
              Limit: shardLimit,
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
      },
      sortValue: (item) => item.dunning_due_at?.S ?? '',
      resumeKeyOf: (item) => ({
        dunning_shard: item.dunning_shard?.S ?? '',
        dunning_due_at: item.dunning_due_at?.S ?? '',
        user_id: item.user_id?.S ?? '',
        billing_date: item.billing_date?.S ?? '',
      }),
    });
    return { items: items.map((item) => recordFromItem(item, this.table)), next };
  }

  async achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts> {
    return readCounters(this.client, this.table, COUNTER_KEYS, fromDay, toDay, 'billing.achRateCounts');
  }

  /** Audit rows of one subscription from the history table's subscription_id-index, newest first. */
  async history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>> {
    const out = await this.send('billing.history', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.historyTable,
          IndexName: BILLING_ACTIVITY_INDEXES.bySubscriptionId,
          KeyConditionExpression: 'subscription_id = :s',
          ExpressionAttributeValues: { ':s': { S: subscriptionId } },
          ScanIndexForward: false,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['subscription_id', 'last_run_date', 'user_id'], {
            subscription_id: subscriptionId,
          }),
        }),
      ),
    );
    return {
      items: (out.Items ?? []).map((item) => historyFromItem(item, this.historyTable)),
      next: encodeStartKey(out.LastEvaluatedKey),
    };
  }

  /* ---------------- writes ---------------- */

  async commit(tx: BillingTransaction): Promise<{ created: boolean }> {
    let attempt = tx;
    for (let probe = 0; ; probe++) {
      const { planned, creates } = this.planCommit(attempt);
      if (planned.length === 0) throw new InvalidTransactionError('commit: empty transaction');
      try {
        await this.transact('billing.commit', planned);
        return { created: attempt.createIfAbsent !== undefined };
      } catch (error) {
        // Only creates that may move or be dropped (chain.ts) are looked at: every other failure is the caller's.
        const taken = takenCreates(cancellationCodes(error), creates);
        if (!taken || probe >= MAX_PLACEMENT_PROBES) throw error;
        const next = await this.placeAgain(attempt, taken, error);
        // Only the next period was asked for, and its chain's record is there: nothing is left to write.
        if (next.writes.length === 0 && next.history.length === 0 && !next.createIfAbsent && !next.releaseLock && !next.achRates) return { created: false };
        attempt = next;
      }
    }
  }

  private planCommit(tx: BillingTransaction): { planned: PlannedWrite[]; creates: PlannedCreate[] } {
    const planned: PlannedWrite[] = [];
    const creates: PlannedCreate[] = [];
    tx.writes.forEach((write, at) => {
      if (write.kind === 'create') {
        creates.push({ index: planned.length, record: write.record, movable: write.displace === true, optional: false, at });
        planned.push(this.planCreate(write.record));
      } else if (write.kind === 'update') planned.push(this.planUpdate(write.read, write.record));
      else planned.push(this.planDelete(write.read));
    });
    for (const row of tx.history) planned.push(this.planHistory(row));
    if (tx.releaseLock) planned.push(this.planLockRelease(tx.releaseLock));
    if (tx.achRates) planned.push(this.planAchRates(tx.achRates, tx));
    if (tx.createIfAbsent) {
      creates.push({ index: planned.length, record: tx.createIfAbsent.record, movable: true, optional: true, at: -1 });
      planned.push(this.planCreate(tx.createIfAbsent.record), this.planHistory(tx.createIfAbsent.history));
    }
    // Last: the creates' indexes above are positions in the request, which the cancellation reasons follow.
    const gauges = this.planGauges(transactionGaugeDelta(tx), transactionSeed(tx));
    if (gauges) planned.push(gauges);
    return { planned, creates };
  }

  /**
   * The transaction again after `taken` creates found their keys held (chain.ts): a record of
   * another chain there moves the new period (and its history rows) to the next free instant; a
   * record of the same chain is the period already, so the optional successor is dropped (the rest
   * commits alone) and a plain create fails as it did. A key freed meanwhile is tried again as is.
   */
  private async placeAgain(tx: BillingTransaction, taken: readonly PlannedCreate[], error: unknown): Promise<BillingTransaction> {
    let writes = [...tx.writes];
    let history = [...tx.history];
    let createIfAbsent = tx.createIfAbsent;
    for (const create of taken) {
      const holder = await this.chainAt(create.record);
      if (!holder) continue;
      if (sameChain(holder, create.record)) {
        if (!create.optional) throw error;
        createIfAbsent = undefined;
        continue;
      }
      const moved: BillingRecord = { ...create.record, billing_date: nextFreeInstant(create.record.billing_date) };
      const movedRow = (row: HistoryRow): HistoryRow => (isRowOf(row, create.record) ? { ...row, billing_date: moved.billing_date } : row);
      if (create.optional && createIfAbsent) createIfAbsent = { record: moved, history: movedRow(createIfAbsent.history) };
      else {
        writes = writes.map((w, at) => (at === create.at && w.kind === 'create' ? { ...w, record: moved } : w));
        history = history.map(movedRow);
      }
    }
    return {
      writes,
      history,
      ...(createIfAbsent ? { createIfAbsent } : {}),
      ...(tx.releaseLock ? { releaseLock: tx.releaseLock } : {}),
      ...(tx.achRates ? { achRates: tx.achRates } : {}),
    };
  }

  /** The chain of the record at `key` (strongly consistent, two attributes), or undefined when the key is free. */
  private async chainAt(key: BillingKey): Promise<Pick<BillingRecord, 'chain_id'> | undefined> {
    const out = await this.send('billing.chainAt', () =>
      this.client.send(
        new GetItemCommand({
          TableName: this.table,
          Key: primaryKey(key),
          ConsistentRead: true,
          ProjectionExpression: '#u, #c',
          ExpressionAttributeNames: { '#u': 'user_id', '#c': 'chain_id' },
        }),
      ),
    );
    if (!out.Item) return undefined;
    const chainId = out.Item.chain_id?.S;
    return chainId !== undefined ? { chain_id: chainId } : {};
  }

  /**
   * New records with their history rows, in transactions of at most 100 items. A record and its
   * history rows (matched on user_id + billing_date) always share a transaction, so each chunk is
   * atomic; the call as a whole is not (chunks commit in order; a failure stops at its chunk).
   */
  async addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void> {
    const groups = new Map<string, PlannedWrite[]>();
    const recordOf = new Map<string, BillingRecord>();
    for (const record of records) {
      const id = keyId(record);
      if (groups.has(id)) throw new InvalidTransactionError(`addAll: ${describeKey(this.table, record)} appears twice`);
      groups.set(id, [this.planCreate(record)]);
      recordOf.set(id, record);
    }
    for (const row of history) {
      const group = groups.get(keyId(row));
      if (!group) throw new InvalidTransactionError(`addAll: history row ${row.last_run_date} has no record in this call`);
      group.push(this.planHistory(row));
    }
    // A chunk whose records change a gauge carries its counter item too (gauge-counters.ts).
    type Chunk = { items: PlannedWrite[]; first: string; delta: GaugeCounts };
    const chunks: Chunk[] = [];
    let chunk: Chunk | undefined;
    for (const [id, group] of groups) {
      if (group.length < 2) throw new InvalidTransactionError(`addAll: record ${id} has no history row`);
      const record = recordOf.get(id)!;
      const own = gaugeDelta(undefined, record);
      if (group.length + (isNoChange(own) ? 0 : 1) > MAX_TRANSACTION_ITEMS) throw new InvalidTransactionError(`addAll: record ${id} has too many history rows`);
      const delta = chunk ? addGaugeCounts(chunk.delta, own) : own;
      if (chunk && chunk.items.length + group.length + (isNoChange(delta) ? 0 : 1) > MAX_TRANSACTION_ITEMS) {
        chunks.push(chunk);
        chunk = undefined;
      }
      if (!chunk) chunk = { items: [...group], first: record.user_id, delta: own };
      else {
        chunk.items.push(...group);
        chunk.delta = delta;
      }
    }
    if (chunk) chunks.push(chunk);
    for (const { items, first, delta } of chunks) {
      const gauges = this.planGauges(delta, first);
      await this.transact('billing.addAll', gauges ? [...items, gauges] : items);
    }
  }

  /**
   * RecordBillingFailure (DESIGN 5): an Update that sets only the failure attributes, last_run_date
   * and version, proving what the attempt read (version, collectible status, due key and, when a
   * failure was live, its count), with the audit row in the same transaction.
   */
  async recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean> {
    if (after.user_id !== read.user_id || after.billing_date !== read.billing_date) {
      throw new InvalidTransactionError('recordBillingFailure: `after` is another record');
    }
    if (after.version !== read.version + 1) {
      throw new InvalidTransactionError(`recordBillingFailure: version must advance from ${read.version} to ${read.version + 1}`);
    }
    const key = dueKey(read);
    if (after.billing_failed_for !== key) {
      throw new InvalidTransactionError(`recordBillingFailure: the failure must be keyed to the work read (${key})`);
    }
    const live = isFailureLive(read);
    const presents = after.billing_presented_for !== undefined && after.billing_presented_for !== read.billing_presented_for;
    // The item as this update leaves it (the version condition proves it was `read`): its index keys and gauge class.
    const { billing_next_attempt_at: _next, ...readRest } = read;
    const written: BillingRecord = {
      ...readRest,
      billing_failed_for: key,
      billing_failure_count: after.billing_failure_count,
      billing_failed_at: after.billing_failed_at,
      billing_last_error: after.billing_last_error,
      last_run_date: after.last_run_date,
      version: after.version,
      process: after.process,
      ...(presents ? { billing_presented_for: key } : {}),
      ...(after.billing_next_attempt_at !== undefined ? { billing_next_attempt_at: after.billing_next_attempt_at } : {}),
    };
    const sets = [
      'billing_failed_for = :key',
      'billing_failure_count = :newCount',
      'billing_failed_at = :failedAt',
      'billing_last_error = :lastError',
      'last_run_date = :lastRun',
      'version = :next',
      // What last acted on it: the audit row written beside this update is the item as written.
      '#process = :process',
    ];
    const values: Record<string, unknown> = {
      ':key': key,
      ':newCount': after.billing_failure_count,
      ':failedAt': after.billing_failed_at,
      ':lastError': after.billing_last_error,
      ':lastRun': after.last_run_date,
      ':next': after.version,
      ':process': after.process,
      ':readVersion': read.version,
      ...COLLECTIBLE_VALUES,
      ':pa': read.payment_attempts,
      ':bd': read.billing_date,
    };
    const removes: string[] = [];
    // The failing-index follows the failure as written (live: the update proves a collectible status).
    const failing = failingIndexKey(written, this.shardCount);
    if (failing) {
      sets.push('failing_shard = :failingShard');
      values[':failingShard'] = failing.failing_shard;
    } else removes.push('failing_shard');
    // The attempt presented this key before it failed (ports.ts): in the same UpdateItem, no extra request.
    if (presents) {
      if (after.billing_presented_for !== key) throw new InvalidTransactionError(`recordBillingFailure: a presented key must be the work read (${key})`);
      sets.push('billing_presented_for = :key');
    }
    if (after.billing_next_attempt_at !== undefined) {
      sets.push('billing_next_attempt_at = :nextAttempt');
      values[':nextAttempt'] = after.billing_next_attempt_at;
    } else removes.push('billing_next_attempt_at');
    // The due-index follows the failure: the ladder's next attempt, or out of the index when parked.
    const due = dueIndexKey(after, this.shardCount);
    if (due) {
      sets.push('due_shard = :dueShard', 'due_at = :dueAt');
      values[':dueShard'] = due.due_shard;
      values[':dueAt'] = due.due_at;
    } else removes.push('due_shard', 'due_at');
    const proofs = [
      'version = :readVersion',
      `billing_status IN (${Object.keys(COLLECTIBLE_VALUES).join(', ')})`,
      'payment_attempts = :pa',
      'billing_date = :bd',
    ];
    if (live) {
      proofs.push('billing_failed_for = :key', 'billing_failure_count = :count');
      values[':count'] = read.billing_failure_count ?? 0;
    } else {
      proofs.push('(attribute_not_exists(billing_failed_for) OR billing_failed_for <> :key)');
    }
    const update: PlannedWrite = {
      item: {
        Update: {
          TableName: this.table,
          Key: primaryKey(read),
          UpdateExpression: `SET ${sets.join(', ')}` + (removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''),
          ConditionExpression: proofs.join(' AND '),
          ExpressionAttributeNames: { '#process': 'process' },
          ExpressionAttributeValues: marshallItem(values),
        },
      },
      description: { onConditionFailed: 'concurrent', label: describeKey(this.table, read) },
      identity: `${this.table}|${keyId(read)}`,
    };
    // A first failure, a parked ladder or a retry after parking changes the failing gauge: its counter in the same transaction.
    const gauges = this.planGauges(gaugeDelta(read, written), read.user_id);
    try {
      await this.transact('billing.recordBillingFailure', [update, this.planHistory(history), ...(gauges ? [gauges] : [])]);
      return true;
    } catch (error) {
      if (cancellationCodes(error)?.includes('ConditionalCheckFailed')) return false;
      throw error;
    }
  }

  /* ---------------- plumbing ---------------- */

  private planCreate(record: BillingRecord): PlannedWrite {
    return {
      item: {
        Put: {
          TableName: this.table,
          Item: primaryItem(record, this.shardCount),
          ConditionExpression: 'attribute_not_exists(user_id)',
        },
      },
      description: { onConditionFailed: 'exists', label: describeKey(this.table, record) },
      identity: `${this.table}|${keyId(record)}`,
    };
  }

  private planUpdate(read: BillingRecord, record: BillingRecord): PlannedWrite {
    if (keyId(read) !== keyId(record)) {
      throw new InvalidTransactionError(`update of ${describeKey(this.table, record)}: the record read is ${describeKey(this.table, read)}`);
    }
    const expectedVersion = read.version;
    if (record.version !== expectedVersion + 1) {
      throw new InvalidTransactionError(`update of ${describeKey(this.table, record)}: version must be ${expectedVersion + 1}`);
    }
    return {
      item: {
        Put: {
          TableName: this.table,
          Item: primaryItem(record, this.shardCount),
          ConditionExpression: 'version = :expected',
          ExpressionAttributeValues: { ':expected': { N: String(expectedVersion) } },
        },
      },
      description: { onConditionFailed: 'concurrent', label: describeKey(this.table, record) },
      identity: `${this.table}|${keyId(record)}`,
    };
  }

  private planDelete(read: BillingRecord): PlannedWrite {
    const key: BillingKey = read;
    return {
      item: {
        Delete: {
          TableName: this.table,
          Key: primaryKey(key),
          ConditionExpression: 'version = :expected',
          ExpressionAttributeValues: { ':expected': { N: String(read.version) } },
        },
      },
      description: { onConditionFailed: 'concurrent', label: describeKey(this.table, key) },
      identity: `${this.table}|${keyId(key)}`,
    };
  }

  /** The holder's lock, deleted only while it is still ours (the same condition as LockStore.release). */
  private planLockRelease(release: LockRelease): PlannedWrite {
    if (!this.locksTable) throw new InvalidTransactionError('commit: releaseLock needs the locks table');
    return {
      item: {
        Delete: {
          TableName: this.locksTable,
          Key: { PartitionKey: { S: release.key } },
          ConditionExpression: 'record_version_number = :rvn',
          ExpressionAttributeValues: { ':rvn': { S: release.recordVersionNumber } },
        },
      },
      description: { onConditionFailed: 'concurrent', label: `${this.locksTable} lock (${release.key})` },
      identity: `${this.locksTable}|${release.key}`,
    };
  }

  /** The day's ACH return-rate counter, sharded by the user whose record the transaction writes. */
  private planAchRates(tally: AchRateTally, tx: BillingTransaction): PlannedWrite {
    const item = counterUpdate(this.table, COUNTER_KEYS, tally, transactionSeed(tx));
    return {
      item,
      description: { onConditionFailed: 'concurrent', label: `${this.table} ACH return-rate counter (${tally.day})` },
      identity: `${this.table}|${JSON.stringify(item.Update!.Key)}`,
    };
  }

  /** The gauge counters' delta of a transaction (gauge-counters.ts) on the counter shard of `seed`, or nothing when no class changes. */
  private planGauges(delta: GaugeCounts, seed: string): PlannedWrite | undefined {
    if (isNoChange(delta)) return undefined;
    const item = gaugeCounterAdd(this.table, COUNTER_KEYS, delta, gaugeShardSortKey(seed));
    return {
      item,
      description: { onConditionFailed: 'concurrent', label: `${this.table} gauge counter (${item.Update!.Key![COUNTER_KEYS.sort]!.S})` },
      identity: `${this.table}|${JSON.stringify(item.Update!.Key)}`,
    };
  }

  /** A collision means a concurrent writer stamped the same last_run_date: the record moved on. */
  private planHistory(row: HistoryRow): PlannedWrite {
    return {
      item: {
        Put: {
          TableName: this.historyTable,
          Item: historyItem(row),
          ConditionExpression: 'attribute_not_exists(user_id)',
        },
      },
      description: {
        onConditionFailed: 'concurrent',
        label: `${this.historyTable} row (user_id=${row.user_id}, last_run_date=${row.last_run_date})`,
      },
      identity: `${this.historyTable}|${row.user_id}|${row.last_run_date}`,
    };
  }

  private async transact(operation: string, planned: readonly PlannedWrite[]): Promise<void> {
    if (planned.length > MAX_TRANSACTION_ITEMS) {
      throw new InvalidTransactionError(`${operation}: ${planned.length} items exceed the ${MAX_TRANSACTION_ITEMS}-item transaction limit`);
    }
    const seen = new Set<string>();
    for (const p of planned) {
      if (seen.has(p.identity)) throw new InvalidTransactionError(`${operation}: one item written twice (${p.description.label})`);
      seen.add(p.identity);
    }
    try {
      await this.client.send(new TransactWriteItemsCommand({ TransactItems: planned.map((p) => p.item) }));
    } catch (error) {
      throw toDomainError(error, { operation, transactionItems: planned.map((p) => p.description) });
    }
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}

/** The user whose record a transaction writes first (its counter shards' seed). */
function transactionSeed(tx: BillingTransaction): string {
  const first = tx.writes[0];
  return first ? (first.kind === 'delete' ? first.read.user_id : first.record.user_id) : (tx.createIfAbsent?.record.user_id ?? tx.history[0]?.user_id ?? '');
}

/** What the transaction's record writes add to the gauge counters: each record's class after minus before. */
function transactionGaugeDelta(tx: BillingTransaction): GaugeCounts {
  let delta = NO_GAUGE_COUNTS;
  for (const write of tx.writes) {
    if (write.kind === 'create') delta = addGaugeCounts(delta, gaugeDelta(undefined, write.record));
    else if (write.kind === 'update') delta = addGaugeCounts(delta, gaugeDelta(write.read, write.record));
    else delta = addGaugeCounts(delta, gaugeDelta(write.read, undefined));
  }
  if (tx.createIfAbsent) delta = addGaugeCounts(delta, gaugeDelta(undefined, tx.createIfAbsent.record));
  return delta;
}

function keyId(key: BillingKey): string {
  const k = keyOf(key);
  return `${k.user_id}|${k.billing_date}`;
}

/**
 * The creates whose key was held, when those are the only conditions that failed and each may move
 * or be dropped (chain.ts); undefined otherwise (the caller gets the error as it is).
 */
function takenCreates(codes: (string | undefined)[] | undefined, creates: readonly PlannedCreate[]): PlannedCreate[] | undefined {
  if (!codes) return undefined;
  const taken: PlannedCreate[] = [];
  for (const [index, code] of codes.entries()) {
    if (code === undefined || code === 'None') continue;
    const create = code === 'ConditionalCheckFailed' ? creates.find((c) => c.index === index) : undefined;
    if (!create || !create.movable) return undefined;
    taken.push(create);
  }
  return taken.length > 0 ? taken : undefined;
}

/** A history row of `record` (the row written beside its create). */
function isRowOf(row: HistoryRow, record: BillingRecord): boolean {
  return row.user_id === record.user_id && row.billing_date === record.billing_date && row.subscription_id === record.subscription_id;
}
