import type { AttributeValue, DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { BillingRecord } from '../../domain/records.js';
import { gaugeClassOf, type GaugeClass } from './billing-item.js';
import type { CounterKeyNames } from './ach-rate-counters.js';
import { sumCounterItems } from './counter-query.js';
import { randomInt } from 'node:crypto';

/**
 * The collections-job's gauges kept by the writes (docs/decisions.md): each write adds the change of
 * its record's gauge class (`gaugeClassOf`) in its own transaction, so a gauge is one Query, not
 * COUNTs over the indexes. Each write adds to a shard (`GAUGES#`) taken at random, to keep
 * transactions apart; only the partition's sum means anything. `changes` only grows: the
 * reconcile sees writes land with it.
 */
export const GAUGE_PARTITION = 'GAUGES#';
/** Counter items written by records' writes, each write taking one at random. Changing it is safe (every item of the partition is summed). */
export const GAUGE_COUNTER_SHARDS = 128;
/** The reconcile's correction item (gauge-reconcile.ts). */
export const GAUGE_RECONCILE_SORT_KEY = 'RECONCILE';

export interface GaugeCounts {
  readonly failing_retrying: number;
  readonly failing_parked: number;
  readonly dunning_retrying: number;
  readonly dunning_exhausted: number;
}

export const GAUGE_FIELDS = ['failing_retrying', 'failing_parked', 'dunning_retrying', 'dunning_exhausted'] as const satisfies readonly (keyof GaugeCounts)[];

export const NO_GAUGE_COUNTS: GaugeCounts = { failing_retrying: 0, failing_parked: 0, dunning_retrying: 0, dunning_exhausted: 0 };

/** The counters one record in `cls` adds (each field 0 or 1). */
export function gaugeCountsOf(cls: GaugeClass): GaugeCounts {
  return {
    failing_retrying: cls.failing === 'retrying' ? 1 : 0,
    failing_parked: cls.failing === 'parked' ? 1 : 0,
    dunning_retrying: cls.dunning === 'retrying' ? 1 : 0,
    dunning_exhausted: cls.dunning === 'exhausted' ? 1 : 0,
  };
}

export function addGaugeCounts(a: GaugeCounts, b: GaugeCounts, sign: 1 | -1 = 1): GaugeCounts {
  return {
    failing_retrying: a.failing_retrying + sign * b.failing_retrying,
    failing_parked: a.failing_parked + sign * b.failing_parked,
    dunning_retrying: a.dunning_retrying + sign * b.dunning_retrying,
    dunning_exhausted: a.dunning_exhausted + sign * b.dunning_exhausted,
  };
}

/** What a write of a record from `before` (undefined: a create) to `after` (undefined: a delete) adds to the counters. */
export function gaugeDelta(before: BillingRecord | undefined, after: BillingRecord | undefined): GaugeCounts {
  const added = after === undefined ? NO_GAUGE_COUNTS : gaugeCountsOf(gaugeClassOf(after));
  return before === undefined ? added : addGaugeCounts(added, gaugeCountsOf(gaugeClassOf(before)), -1);
}

export function isNoChange(delta: GaugeCounts): boolean {
  return GAUGE_FIELDS.every((f) => delta[f] === 0);
}

export function gaugeCounterKey(keys: CounterKeyNames, sortKey: string): Record<string, AttributeValue> {
  return { [keys.partition]: { S: GAUGE_PARTITION }, [keys.sort]: { S: sortKey } };
}

/** The sort key of a counter shard taken at random: concurrent writes rarely meet on one item. */
export function gaugeShardSortKey(): string {
  return `SHARD#${String(randomInt(GAUGE_COUNTER_SHARDS)).padStart(3, '0')}`;
}

/** ADD `delta` (and one `changes`) to the item at `sortKey`, created by the first ADD. */
export function gaugeCounterAdd(table: string, keys: CounterKeyNames, delta: GaugeCounts, sortKey: string): TransactWriteItem {
  if (isNoChange(delta)) throw new RangeError('a gauge delta with nothing to add');
  const adds = ['#changes :one'];
  const names: Record<string, string> = { '#changes': 'changes' };
  const values: Record<string, AttributeValue> = { ':one': { N: '1' } };
  for (const field of GAUGE_FIELDS) {
    if (delta[field] === 0) continue;
    adds.push(`#${field} :${field}`);
    names[`#${field}`] = field;
    values[`:${field}`] = { N: String(delta[field]) };
  }
  return {
    Update: {
      TableName: table,
      Key: gaugeCounterKey(keys, sortKey),
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

export interface GaugeTotals extends GaugeCounts {
  /** Class-changing writes counted so far (only grows). */
  readonly changes: number;
}

/** Every counter item of the partition, summed: one Query (paged; 32 items of ~120 bytes are one page). */
export async function readGaugeCounters(
  client: DynamoDBClient,
  table: string,
  keys: CounterKeyNames,
  operation: string,
  options: { readonly consistent?: boolean } = {},
): Promise<GaugeTotals> {
  const attributes = Object.fromEntries([...GAUGE_FIELDS, 'changes'].map((f) => [f, f])) as Record<keyof GaugeTotals, string>;
  return sumCounterItems(
    client,
    {
      TableName: table,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': keys.partition },
      ExpressionAttributeValues: { ':pk': { S: GAUGE_PARTITION } },
      ...(options.consistent ? { ConsistentRead: true } : {}),
    },
    attributes,
    operation,
  );
}
