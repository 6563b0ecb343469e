import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { keyOf, type BillingKey } from '../../../domain/records.js';
import type { CounterKeyNames } from '../ach-rate-counters.js';
import { DEFAULT_STATUS_SHARD_COUNT } from '../billing-item.js';
import { toDomainError } from '../errors.js';
import { assertShardCount } from '../sharding.js';

export interface DynamoBillingStoreOptions {
  readonly client: DynamoDBClient;
  /** billing-activity */
  readonly tableName: string;
  /** billing-activity-history */
  readonly historyTableName: string;
  /** Shards of the sparse indexes (DESIGN 2.1). Changing it strands records under the old shard numbers. */
  readonly statusShardCount?: number;
  /** locks: needed for a commit that releases the user's lock in its transaction. */
  readonly locksTableName?: string;
  /** instruments: read with the period by an attempt and written in its transaction (DESIGN 3.2). */
  readonly instrumentsTableName?: string;
  /** money-movements: needed for a commit that carries movement rows (DESIGN 14). */
  readonly movementsTableName?: string;
}

/** What every part of the billing adapter works on: one client, the tables and the index shard count. */
export interface BillingTables {
  readonly client: DynamoDBClient;
  readonly table: string;
  readonly historyTable: string;
  readonly locksTable: string | undefined;
  readonly instrumentsTable: string | undefined;
  readonly movementsTable?: string | undefined;
  readonly shardCount: number;
}

export function billingTables(options: DynamoBillingStoreOptions): BillingTables {
  return {
    client: options.client,
    table: options.tableName,
    historyTable: options.historyTableName,
    locksTable: options.locksTableName,
    instrumentsTable: options.instrumentsTableName,
    movementsTable: options.movementsTableName,
    shardCount: assertShardCount(options.statusShardCount ?? DEFAULT_STATUS_SHARD_COUNT, 'statusShardCount'),
  };
}

/** The ACH return-rate and gauge counters live in billing-activity under these key attributes. */
export const COUNTER_KEYS: CounterKeyNames = { partition: 'user_id', sort: 'billing_date' };

/** One request, its failure turned into a domain error naming `operation`. */
export async function send<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toDomainError(error, { operation });
  }
}

export function keyId(key: BillingKey): string {
  const k = keyOf(key);
  return `${k.user_id}|${k.billing_date}`;
}
