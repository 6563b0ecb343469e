import { QueryCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DunningState } from '../../../domain/dunning.js';
import type { BillingIndexes } from '../../../domain/ports/billing-indexes.js';
import type { Page, PageRequest } from '../../../domain/ports/page.js';
import type { BillingRecord } from '../../../domain/records.js';
import { addNanos, normalizeInstant } from '../../../domain/time.js';
import type { Item } from '../attribute-codec.js';
import { dueShardOf, recordFromItem } from '../billing-item.js';
import { DEFAULT_PAGE_LIMIT, listAcrossShards, pageLimit, streamAcrossShards, type ShardQueryResult, type StartKey } from '../pagination.js';
import { BILLING_ACTIVITY_INDEXES } from '../table-definitions.js';
import { send, type BillingTables } from './tables.js';

/** A sparse, sharded GSI of billing-activity: one partition per shard, sorted by `sortKey`. */
interface ShardedIndex {
  readonly indexName: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  /** The operation named in errors. */
  readonly operation: string;
}

/** Every index the planner and the API list read (table-definitions.ts holds their key schemas). */
const INDEXES = {
  failing: { indexName: BILLING_ACTIVITY_INDEXES.failing, partitionKey: 'failing_shard', sortKey: 'billing_failed_at', operation: 'billing.listFailing' },
  exceptions: { indexName: BILLING_ACTIVITY_INDEXES.exceptions, partitionKey: 'exception_shard', sortKey: 'exception_at', operation: 'billing.listExceptions' },
  dunning: { indexName: BILLING_ACTIVITY_INDEXES.dunning, partitionKey: 'dunning_shard', sortKey: 'dunning_due_at', operation: 'billing.listDunning' },
  due: { indexName: BILLING_ACTIVITY_INDEXES.due, partitionKey: 'due_shard', sortKey: 'due_at', operation: 'billing.streamDue' },
  held: { indexName: BILLING_ACTIVITY_INDEXES.held, partitionKey: 'held_shard', sortKey: 'held_at', operation: 'billing.listHeld' },
} as const satisfies Record<string, ShardedIndex>;

/** One read of an index: its partition of each shard, an optional exclusive upper bound on the sort key. */
interface IndexRead {
  readonly index: ShardedIndex;
  readonly partitionOf: (shard: number) => string;
  readonly before?: string | undefined;
}

/**
 * The sparse indexes, all read the same way: every shard queried, merged oldest first by the sort
 * key (pagination.ts). Eventually consistent: the caller trusts each record's own status.
 */
export class DynamoBillingIndexes implements BillingIndexes {
  constructor(private readonly t: BillingTables) {}

  async listFailing(page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.list({ index: INDEXES.failing, partitionOf: (n) => `FAILING#${n}` }, 'failing', page);
  }

  async listExceptions(page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.list({ index: INDEXES.exceptions, partitionOf: (n) => `EXCEPTION#${n}` }, 'exceptions', page);
  }

  async listHeld(page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.list({ index: INDEXES.held, partitionOf: (n) => `HELD#${n}` }, 'held', page);
  }

  async listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>> {
    const partition = state === 'retrying' ? 'RETRYING' : 'EXHAUSTED';
    const read = { index: INDEXES.dunning, partitionOf: (n: number) => `${partition}#${n}`, before: nextAttemptBefore };
    return this.list(read, `dunning|${state}${nextAttemptBefore === undefined ? '' : '|before'}`, page);
  }

  /**
   * Each shard read as one stream of large Queries (pagination.ts `streamAcrossShards`): only due
   * work is read. `queryLimit` (items per Query) is for tests.
   */
  async *streamDue(
    dueAtOrBefore: string,
    options: { readonly pageSize?: number; readonly queryLimit?: number } = {},
  ): AsyncGenerator<readonly BillingRecord[], void, undefined> {
    // `due_at < due + 1 ns` is `<= due`, said so that a resume key tied at the bound still matches.
    const read: IndexRead = { index: INDEXES.due, partitionOf: dueShardOf, before: addNanos(normalizeInstant(dueAtOrBefore), 1) };
    const pages = streamAcrossShards({
      shardCount: this.t.shardCount,
      pageSize: options.pageSize ?? DEFAULT_PAGE_LIMIT,
      ...(options.queryLimit !== undefined ? { queryLimit: options.queryLimit } : {}),
      query: (shard, startKey, limit) => this.queryShard(read, shard, startKey, limit),
      sortValue: (item) => item[read.index.sortKey]?.S ?? '',
      resumeKeyOf: (item) => resumeKeyOf(read.index, item),
    });
    for await (const items of pages) yield items.map((item) => recordFromItem(item, this.t.table));
  }

  /** A page across every shard; `query` names the listing in its cursor, so a cursor of another listing is refused. */
  private async list(read: IndexRead, query: string, page: PageRequest | undefined): Promise<Page<BillingRecord>> {
    const { items, next } = await listAcrossShards({
      shardCount: this.t.shardCount,
      fingerprint: `${query}|${this.t.shardCount}`,
      limit: pageLimit(page),
      cursor: page?.cursor,
      query: (shard, startKey, limit) => this.queryShard(read, shard, startKey, limit),
      sortValue: (item) => item[read.index.sortKey]?.S ?? '',
      resumeKeyOf: (item) => resumeKeyOf(read.index, item),
    });
    return { items: items.map((item) => recordFromItem(item, this.t.table)), next };
  }

  private async queryShard(read: IndexRead, shard: number, startKey: Record<string, AttributeValue> | undefined, limit: number): Promise<ShardQueryResult> {
    const { index, before } = read;
    const out = await send(index.operation, () =>
      this.t.client.send(
        new QueryCommand({
          TableName: this.t.table,
          IndexName: index.indexName,
          KeyConditionExpression: before === undefined ? `${index.partitionKey} = :p` : `${index.partitionKey} = :p AND ${index.sortKey} < :before`,
          ExpressionAttributeValues: { ':p': { S: read.partitionOf(shard) }, ...(before === undefined ? {} : { ':before': { S: before } }) },
          Limit: limit,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
  }
}

/** The ExclusiveStartKey that resumes a shard right after `item`: the index key and the table key. */
function resumeKeyOf(index: ShardedIndex, item: Item): StartKey {
  return {
    [index.partitionKey]: item[index.partitionKey]?.S ?? '',
    [index.sortKey]: item[index.sortKey]?.S ?? '',
    user_id: item.user_id?.S ?? '',
    billing_date: item.billing_date?.S ?? '',
  };
}
