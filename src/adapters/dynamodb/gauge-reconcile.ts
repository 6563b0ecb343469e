import { QueryCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DunningPartition } from './billing-item.js';
import type { CounterKeyNames } from './ach-rate-counters.js';
import { GAUGE_FIELDS, GAUGE_RECONCILE_SORT_KEY, gaugeCounterKey, isNoChange, readGaugeCounters, type GaugeCounts, type GaugeTotals } from './gauge-counters.js';
import { BILLING_ACTIVITY_INDEXES } from './table-definitions.js';

/**
 * The gauges counted from the indexes (COUNT queries, billed by every item read: for the reconcile
 * and tests only), and the reconcile that makes the counters agree with them (docs/runbook.md).
 */

/** billing-activity's key attributes, under which the counters live. */
const KEYS: CounterKeyNames = { partition: 'user_id', sort: 'billing_date' };

type Item = Record<string, AttributeValue>;

async function countPartition(client: DynamoDBClient, input: { table: string; index: string; keyName: string; key: string; filter?: string }): Promise<{ scanned: number; count: number }> {
  let scanned = 0;
  let count = 0;
  let startKey: Item | undefined;
  do {
    const out = await client.send(
      new QueryCommand({
        TableName: input.table,
        IndexName: input.index,
        KeyConditionExpression: '#k = :k',
        ExpressionAttributeNames: { '#k': input.keyName },
        ExpressionAttributeValues: { ':k': { S: input.key } },
        ...(input.filter ? { FilterExpression: input.filter } : {}),
        Select: 'COUNT',
        ExclusiveStartKey: startKey,
      }),
    );
    scanned += out.ScannedCount ?? 0;
    count += out.Count ?? 0;
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return { scanned, count };
}

/** The four gauges as the indexes hold them now: 3 × shardCount COUNT queries (paged), eventually consistent. */
export async function countGaugesFromIndexes(client: DynamoDBClient, table: string, shardCount: number): Promise<GaugeCounts> {
  const shards = Array.from({ length: shardCount }, (_, n) => n);
  const failing = await Promise.all(
    shards.map((n) =>
      countPartition(client, {
        table,
        index: BILLING_ACTIVITY_INDEXES.failing,
        keyName: 'failing_shard',
        key: `FAILING#${n}`,
        filter: 'attribute_exists(billing_next_attempt_at)',
      }),
    ),
  );
  const dunning = async (partition: DunningPartition): Promise<number> => {
    const counts = await Promise.all(
      shards.map((n) => countPartition(client, { table, index: BILLING_ACTIVITY_INDEXES.dunning, keyName: 'dunning_shard', key: `${partition}#${n}` })),
    );
    return counts.reduce((sum, c) => sum + c.count, 0);
  };
  const [retrying, exhausted] = await Promise.all([dunning('RETRYING'), dunning('EXHAUSTED')]);
  return {
    failing_retrying: failing.reduce((sum, c) => sum + c.count, 0),
    failing_parked: failing.reduce((sum, c) => sum + c.scanned - c.count, 0),
    dunning_retrying: retrying,
    dunning_exhausted: exhausted,
  };
}

export interface GaugeReconcileOptions {
  readonly client: DynamoDBClient;
  /** The billing-activity table's name. */
  readonly table: string;
  /** STATUS_SHARD_COUNT of the deployed functions (the indexes' partitions depend on it). */
  readonly shardCount: number;
  readonly dryRun?: boolean;
  /**
   * Wait between the first counter read and the COUNT (default 2000 ms): the indexes are
   * eventually consistent, and a write just before the counters were read must be in them when
   * they are counted. DynamoDB Local updates its indexes in the write (0 there).
   */
  readonly settleMs?: number;
  /** Tries before giving up when class-changing writes keep landing during the count (default 5). */
  readonly maxRounds?: number;
  /** Called between the first counter read and the COUNT (tests: a write that lands meanwhile). */
  readonly onCounting?: () => Promise<void>;
}

export interface GaugeReconcileReport {
  readonly dryRun: boolean;
  /** The indexes' counts. */
  readonly counted: GaugeCounts;
  /** The counters' sums before the correction. */
  readonly counters: GaugeCounts;
  /** counted - counters: added to the correction item (nothing when all zero). */
  readonly correction: GaugeCounts;
  /** Rounds it took to count while no class-changing write landed. */
  readonly rounds: number;
  readonly written: boolean;
}

function fieldsOf(totals: GaugeTotals): GaugeCounts {
  return Object.fromEntries(GAUGE_FIELDS.map((f) => [f, totals[f]])) as unknown as GaugeCounts;
}

/**
 * Counters, settle, COUNT, counters again: when no write landed between the reads, the difference is
 * the counters' error, ADDed to the reconcile's own item; otherwise it counts again, then gives up.
 */
export async function reconcileGauges(options: GaugeReconcileOptions): Promise<GaugeReconcileReport> {
  const maxRounds = options.maxRounds ?? 5;
  const settleMs = options.settleMs ?? 2000;
  for (let round = 1; round <= maxRounds; round++) {
    const before = await readGaugeCounters(options.client, options.table, KEYS, 'gauges.reconcile', { consistent: true });
    if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
    await options.onCounting?.();
    const counted = await countGaugesFromIndexes(options.client, options.table, options.shardCount);
    const after = await readGaugeCounters(options.client, options.table, KEYS, 'gauges.reconcile', { consistent: true });
    if (after.changes !== before.changes) continue;
    const counters = fieldsOf(after);
    const correction = Object.fromEntries(GAUGE_FIELDS.map((f) => [f, counted[f] - counters[f]])) as unknown as GaugeCounts;
    const write = !options.dryRun && !isNoChange(correction);
    if (write) {
      const adds = GAUGE_FIELDS.filter((f) => correction[f] !== 0);
      await options.client.send(
        new UpdateItemCommand({
          TableName: options.table,
          Key: gaugeCounterKey(KEYS, GAUGE_RECONCILE_SORT_KEY),
          UpdateExpression: `ADD ${adds.map((f) => `#${f} :${f}`).join(', ')} SET #at = :at`,
          ExpressionAttributeNames: { ...Object.fromEntries(adds.map((f) => [`#${f}`, f])), '#at': 'reconciled_at' },
          ExpressionAttributeValues: { ...Object.fromEntries(adds.map((f) => [`:${f}`, { N: String(correction[f]) }])), ':at': { S: new Date().toISOString() } },
        }),
      );
    }
    return { dryRun: options.dryRun ?? false, counted, counters, correction, rounds: round, written: write };
  }
  throw new Error(`gauge reconcile: class-changing writes landed during each of ${maxRounds} counts; run it again at a quieter time (nothing written)`);
}
