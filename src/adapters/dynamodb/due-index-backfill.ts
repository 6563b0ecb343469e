import { ConditionalCheckFailedException, GetItemCommand, ScanCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { BillingRecord } from '../../domain/records.js';
import { dueIndexKey, heldIndexKey, primaryKey, recordFromItem } from './billing-item.js';

/**
 * The due-index and held-index backfills (docs/runbook.md): give every record the key its writers
 * derive now (`dueIndexKey`, `heldIndexKey`), in one UpdateItem per differing record conditioned on
 * the version it read, so a newer write wins. No version bump and no history row: only a derived
 * index attribute changes (docs/decisions.md). Idempotent; counters and undecodable items are left alone.
 */

/** A sparse index's two key attributes and the function the writers derive them with. */
export interface IndexKeySpec {
  readonly name: string;
  readonly shardAttribute: string;
  readonly atAttribute: string;
  derive(record: BillingRecord, shardCount: number): { shard: string; at: string } | undefined;
}

export const DUE_INDEX: IndexKeySpec = {
  name: 'due-index',
  shardAttribute: 'due_shard',
  atAttribute: 'due_at',
  derive: (record, shardCount) => {
    const key = dueIndexKey(record, shardCount);
    return key && { shard: key.due_shard, at: key.due_at };
  },
};

/** Periods a hold kept off the schedule before the held index existed carry no key: the sweep never sees them. */
export const HELD_INDEX: IndexKeySpec = {
  name: 'held-index',
  shardAttribute: 'held_shard',
  atAttribute: 'held_at',
  derive: (record, shardCount) => {
    const key = heldIndexKey(record, shardCount);
    return key && { shard: key.held_shard, at: key.held_at };
  },
};

export interface DueIndexBackfillOptions {
  readonly client: DynamoDBClient;
  /** The billing-activity table's name. */
  readonly table: string;
  /** STATUS_SHARD_COUNT of the deployed functions (the key's partition depends on it). */
  readonly shardCount: number;
  readonly dryRun?: boolean;
  /** Parallel scan: how many segments the table is split into (default 1). */
  readonly totalSegments?: number;
  /** Only this segment (0-based); default every segment, concurrently. */
  readonly segment?: number;
  /** Items per Scan page (default 500). */
  readonly pageSize?: number;
  /** Updates in flight per segment (default 16). */
  readonly concurrency?: number;
  /** Called after each page with the running totals. */
  readonly onProgress?: (report: DueIndexBackfillReport) => void;
}

export interface DueIndexBackfillReport {
  readonly dryRun: boolean;
  /** Items the scan returned. */
  scanned: number;
  /** Billing records among them. */
  records: number;
  /** Records given a key (or that would be, in a dry run), `rekeyed` among them. */
  keyed: number;
  /** Of `keyed`: records whose stored key was another one (an earlier release's `{billing_status}#{n}`). */
  rekeyed: number;
  /** Records whose key was removed (it should not carry one). */
  unkeyed: number;
  /** Records whose key was already as derived. */
  unchanged: number;
  /** Lost races resolved by reading the record again (a newer write came first). */
  raced: number;
  /** Records that did not decode: left alone (at most 20 listed). */
  corrupt: number;
  readonly corruptKeys: { user_id: string; billing_date: string; error: string }[];
}

type Item = Record<string, AttributeValue>;

const MAX_RACE_ROUNDS = 5;

export async function backfillDueIndex(options: DueIndexBackfillOptions): Promise<DueIndexBackfillReport> {
  return backfillIndex(options, DUE_INDEX);
}

export async function backfillHeldIndex(options: DueIndexBackfillOptions): Promise<DueIndexBackfillReport> {
  return backfillIndex(options, HELD_INDEX);
}

async function backfillIndex(options: DueIndexBackfillOptions, index: IndexKeySpec): Promise<DueIndexBackfillReport> {
  const totalSegments = options.totalSegments ?? 1;
  if (!Number.isInteger(totalSegments) || totalSegments < 1) throw new RangeError('totalSegments must be a positive integer');
  if (options.segment !== undefined && !(Number.isInteger(options.segment) && options.segment >= 0 && options.segment < totalSegments)) {
    throw new RangeError(`segment must be an integer in 0..${totalSegments - 1}`);
  }
  const report: DueIndexBackfillReport = { dryRun: options.dryRun ?? false, scanned: 0, records: 0, keyed: 0, rekeyed: 0, unkeyed: 0, unchanged: 0, raced: 0, corrupt: 0, corruptKeys: [] };
  const segments = options.segment !== undefined ? [options.segment] : Array.from({ length: totalSegments }, (_, i) => i);
  await Promise.all(segments.map((segment) => scanSegment(options, totalSegments, segment, report, index)));
  return report;
}

async function scanSegment(options: DueIndexBackfillOptions, totalSegments: number, segment: number, report: DueIndexBackfillReport, index: IndexKeySpec): Promise<void> {
  let startKey: Item | undefined;
  do {
    const page = await options.client.send(
      new ScanCommand({
        TableName: options.table,
        ConsistentRead: true,
        Limit: options.pageSize ?? 500,
        ExclusiveStartKey: startKey,
        ...(totalSegments > 1 ? { Segment: segment, TotalSegments: totalSegments } : {}),
      }),
    );
    const items = page.Items ?? [];
    report.scanned += items.length;
    await inPool(items, options.concurrency ?? 16, (item) => backfillItem(options, item, report, index));
    options.onProgress?.(report);
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** One item: compare its stored key with the derived one, write the difference if any (retrying a lost race on a fresh read). */
export async function backfillItem(
  options: Pick<DueIndexBackfillOptions, 'client' | 'table' | 'shardCount' | 'dryRun'>,
  scanned: Item,
  report: DueIndexBackfillReport,
  index: IndexKeySpec = DUE_INDEX,
): Promise<void> {
  // Billing records only: the ACH counters and anything else in the table have no status or version.
  if (scanned.billing_status?.S === undefined || scanned.version?.N === undefined) return;
  report.records += 1;
  let item: Item | undefined = scanned;
  for (let round = 1; item !== undefined; round++) {
    let wanted: { shard: string; at: string } | undefined;
    try {
      wanted = index.derive(recordFromItem(item, options.table), options.shardCount);
    } catch (error) {
      report.corrupt += 1;
      if (report.corruptKeys.length < 20) report.corruptKeys.push({ user_id: item.user_id?.S ?? '?', billing_date: item.billing_date?.S ?? '?', error: String((error as Error).message).slice(0, 200) });
      return;
    }
    const storedShard = item[index.shardAttribute]?.S;
    const storedAt = item[index.atAttribute]?.S;
    if (wanted ? storedShard === wanted.shard && storedAt === wanted.at : storedShard === undefined && storedAt === undefined) {
      report.unchanged += 1;
      return;
    }
    const rekey = wanted !== undefined && storedShard !== undefined;
    if (options.dryRun) {
      if (wanted) report.keyed += 1;
      else report.unkeyed += 1;
      if (rekey) report.rekeyed += 1;
      return;
    }
    const key: { user_id: string; billing_date: string } = { user_id: item.user_id!.S!, billing_date: item.billing_date!.S! };
    try {
      await options.client.send(
        new UpdateItemCommand({
          TableName: options.table,
          Key: primaryKey(key),
          UpdateExpression: wanted ? 'SET #shard = :shard, #at = :at' : 'REMOVE #shard, #at',
          ConditionExpression: 'version = :version',
          ExpressionAttributeNames: { '#shard': index.shardAttribute, '#at': index.atAttribute },
          ExpressionAttributeValues: {
            ':version': { N: item.version!.N! },
            ...(wanted ? { ':shard': { S: wanted.shard }, ':at': { S: wanted.at } } : {}),
          },
        }),
      );
      if (wanted) report.keyed += 1;
      else report.unkeyed += 1;
      if (rekey) report.rekeyed += 1;
      return;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // A newer write came first (or the record was deleted): judge the record as it is now.
      report.raced += 1;
      if (round >= MAX_RACE_ROUNDS) throw new Error(`${index.name} backfill: ${options.table} (user_id=${key.user_id}, billing_date=${key.billing_date}) kept changing under ${MAX_RACE_ROUNDS} attempts`, { cause: error });
      item = (await options.client.send(new GetItemCommand({ TableName: options.table, Key: primaryKey(key), ConsistentRead: true }))).Item;
    }
  }
}

async function inPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
