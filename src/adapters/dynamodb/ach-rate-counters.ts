import type { AttributeValue, DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { NO_ACH_RATE_COUNTS, type AchRateCounts, type AchRateTally } from '../../domain/ach-return-rates.js';
import { sumCounterItems } from './counter-query.js';
import { randomInt } from 'node:crypto';

/**
 * The ACH return-rate counters (DESIGN 4.1): one item per UTC day and shard, added to in the money
 * write's own transaction. One partition, so a 60-day window is one Query; each write takes a shard
 * at random, so concurrent transactions rarely meet on one item (and one that does is sent again,
 * conflict-retry.ts). No user id contains '#' (ids.ts), so no user query reads it.
 */
export const ACH_RATE_PARTITION = 'ACH_RATES#';
/** Counter items per day (60 days of them, ~0.8 MB, are one Query page). Changing it is safe: every item of a day is summed. */
export const ACH_RATE_COUNTER_SHARDS = 128;

/** The table's own key attribute names. */
export interface CounterKeyNames {
  readonly partition: string;
  readonly sort: string;
}

const ATTRIBUTES: Readonly<Record<keyof AchRateCounts, string>> = {
  debits: 'debits',
  returns: 'returns',
  unauthorized: 'returns_unauthorized',
  administrative: 'returns_administrative',
};

function sortKey(day: string, shard: number): string {
  return `DAY#${day}#${String(shard).padStart(3, '0')}`;
}

/** The transaction item that adds `tally` to one of its day's counter shards, taken at random (created by the first ADD). */
export function counterUpdate(table: string, keys: CounterKeyNames, tally: AchRateTally): TransactWriteItem {
  const adds: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  for (const [field, attribute] of Object.entries(ATTRIBUTES) as [keyof AchRateCounts, string][]) {
    const n = tally.counts[field];
    if (n === 0) continue;
    adds.push(`#${field} :${field}`);
    names[`#${field}`] = attribute;
    values[`:${field}`] = { N: String(n) };
  }
  if (adds.length === 0) throw new RangeError('an ACH rate tally with nothing to count');
  return {
    Update: {
      TableName: table,
      Key: { [keys.partition]: { S: ACH_RATE_PARTITION }, [keys.sort]: { S: sortKey(tally.day, randomInt(ACH_RATE_COUNTER_SHARDS)) } },
      UpdateExpression: `ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/** Every shard's counters of the days `fromDay`..`toDay` (both included), summed: one Query (paged). */
export async function readCounters(client: DynamoDBClient, table: string, keys: CounterKeyNames, fromDay: string, toDay: string, operation: string): Promise<AchRateCounts> {
  const totals = await sumCounterItems(
    client,
    {
      TableName: table,
      KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :from AND :to',
      ExpressionAttributeNames: { '#pk': keys.partition, '#sk': keys.sort },
      // '~' sorts after every shard suffix.
      ExpressionAttributeValues: { ':pk': { S: ACH_RATE_PARTITION }, ':from': { S: `DAY#${fromDay}#` }, ':to': { S: `DAY#${toDay}#~` } },
    },
    ATTRIBUTES,
    operation,
  );
  return { ...NO_ACH_RATE_COUNTS, ...totals };
}
