import { TransactWriteItemsCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import type { AchRateTally } from '../../../domain/ach-return-rates.js';
import type { LockRelease } from '../../../domain/ports/billing-ledger.js';
import type { MoneyMovement } from '../../../domain/money-movements.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../../../domain/records.js';
import type { InstrumentWrite } from '../../../domain/instruments/instrument.js';
import { movementPut } from '../money-movements.js';
import { counterUpdate } from '../ach-rate-counters.js';
import { retryingConflicts } from '../conflict-retry.js';
import { instrumentsTransactItem } from '../instruments/item.js';
import { describeKey, historyItem, primaryItem, primaryKey } from '../billing-item.js';
import { InvalidTransactionError, toDomainError, type TransactionItemDescription } from '../errors.js';
import { gaugeCounterAdd, gaugeShardSortKey, isNoChange, type GaugeCounts } from '../gauge-counters.js';
import { COUNTER_KEYS, keyId, type BillingTables } from './tables.js';

/** DynamoDB's limit on items in one TransactWriteItems. */
export const MAX_TRANSACTION_ITEMS = 100;

/** One item of a TransactWriteItems, with what its failed condition means. */
export interface PlannedWrite {
  readonly item: TransactWriteItem;
  readonly description: TransactionItemDescription;
  /** table + key: DynamoDB refuses two operations on one item in a transaction. */
  readonly identity: string;
}

export function planCreate(t: BillingTables, record: BillingRecord): PlannedWrite {
  return {
    item: { Put: { TableName: t.table, Item: primaryItem(record, t.shardCount), ConditionExpression: 'attribute_not_exists(user_id)' } },
    description: { onConditionFailed: 'exists', label: describeKey(t.table, record) },
    identity: `${t.table}|${keyId(record)}`,
  };
}

export function planUpdate(t: BillingTables, read: BillingRecord, record: BillingRecord): PlannedWrite {
  if (keyId(read) !== keyId(record)) {
    throw new InvalidTransactionError(`update of ${describeKey(t.table, record)}: the record read is ${describeKey(t.table, read)}`);
  }
  if (record.version !== read.version + 1) {
    throw new InvalidTransactionError(`update of ${describeKey(t.table, record)}: version must be ${read.version + 1}`);
  }
  return {
    item: {
      Put: {
        TableName: t.table,
        Item: primaryItem(record, t.shardCount),
        ConditionExpression: 'version = :expected',
        ExpressionAttributeValues: { ':expected': { N: String(read.version) } },
      },
    },
    description: { onConditionFailed: 'concurrent', label: describeKey(t.table, record) },
    identity: `${t.table}|${keyId(record)}`,
  };
}

export function planDelete(t: BillingTables, read: BillingRecord): PlannedWrite {
  const key: BillingKey = read;
  return {
    item: {
      Delete: {
        TableName: t.table,
        Key: primaryKey(key),
        ConditionExpression: 'version = :expected',
        ExpressionAttributeValues: { ':expected': { N: String(read.version) } },
      },
    },
    description: { onConditionFailed: 'concurrent', label: describeKey(t.table, key) },
    identity: `${t.table}|${keyId(key)}`,
  };
}

/** The holder's lock, deleted only while it is still ours (the same condition as LockStore.release). */
export function planLockRelease(t: BillingTables, release: LockRelease): PlannedWrite {
  if (!t.locksTable) throw new InvalidTransactionError('commit: releaseLock needs the locks table');
  return {
    item: {
      Delete: {
        TableName: t.locksTable,
        Key: { PartitionKey: { S: release.key } },
        ConditionExpression: 'record_version_number = :rvn',
        ExpressionAttributeValues: { ':rvn': { S: release.recordVersionNumber } },
      },
    },
    description: { onConditionFailed: 'concurrent', label: `${t.locksTable} lock (${release.key})` },
    identity: `${t.locksTable}|${release.key}`,
  };
}

/** The user's instruments item (DESIGN 3.2): no version condition, so a return applied meanwhile never fails the attempt. */
export function planInstruments(t: BillingTables, write: InstrumentWrite): PlannedWrite {
  if (!t.instrumentsTable) throw new InvalidTransactionError('commit: an instruments write needs the instruments table');
  return {
    item: instrumentsTransactItem(t.instrumentsTable, write),
    description: { onConditionFailed: 'concurrent', label: `${t.instrumentsTable} item (user_id=${write.user_id})` },
    identity: `${t.instrumentsTable}|${write.user_id}`,
  };
}

/** The day's ACH return-rate counter, on the counter shard of `seed` (the user the transaction writes). */
export function planAchRates(t: BillingTables, tally: AchRateTally): PlannedWrite {
  const item = counterUpdate(t.table, COUNTER_KEYS, tally);
  return {
    item,
    description: { onConditionFailed: 'concurrent', label: `${t.table} ACH return-rate counter (${tally.day})` },
    identity: `${t.table}|${JSON.stringify(item.Update!.Key)}`,
  };
}

/** The gauge counters' delta (gauge-counters.ts) on a counter shard taken at random, or nothing when no class changes. */
export function planGauges(t: BillingTables, delta: GaugeCounts): PlannedWrite | undefined {
  if (isNoChange(delta)) return undefined;
  const item = gaugeCounterAdd(t.table, COUNTER_KEYS, delta, gaugeShardSortKey());
  return {
    item,
    description: { onConditionFailed: 'concurrent', label: `${t.table} gauge counter (${item.Update!.Key![COUNTER_KEYS.sort]!.S})` },
    identity: `${t.table}|${JSON.stringify(item.Update!.Key)}`,
  };
}

/** A money movement row (DESIGN 14), unconditional: the same interaction is the same row. */
export function planMovement(t: BillingTables, movement: MoneyMovement): PlannedWrite {
  if (!t.movementsTable) throw new InvalidTransactionError('commit: a movement needs the money-movements table');
  const item = movementPut(t.movementsTable, movement);
  return {
    item,
    description: { onConditionFailed: 'concurrent', label: `${t.movementsTable} row (${movement.movement_id})` },
    identity: `${t.movementsTable}|${item.Put!.Item!.recon_key!.S}|${item.Put!.Item!.sk!.S}`,
  };
}

/** A collision means a concurrent writer stamped the same last_run_date: the record moved on. */
export function planHistory(t: BillingTables, row: HistoryRow): PlannedWrite {
  return {
    item: { Put: { TableName: t.historyTable, Item: historyItem(row), ConditionExpression: 'attribute_not_exists(user_id)' } },
    description: {
      onConditionFailed: 'concurrent',
      label: `${t.historyTable} row (user_id=${row.user_id}, last_run_date=${row.last_run_date})`,
    },
    identity: `${t.historyTable}|${row.user_id}|${row.last_run_date}`,
  };
}

/** One TransactWriteItems of `planned`, refused before sending when DynamoDB would refuse it. */
export async function transact(t: BillingTables, operation: string, planned: readonly PlannedWrite[]): Promise<void> {
  if (planned.length > MAX_TRANSACTION_ITEMS) {
    throw new InvalidTransactionError(`${operation}: ${planned.length} items exceed the ${MAX_TRANSACTION_ITEMS}-item transaction limit`);
  }
  const seen = new Set<string>();
  for (const p of planned) {
    if (seen.has(p.identity)) throw new InvalidTransactionError(`${operation}: one item written twice (${p.description.label})`);
    seen.add(p.identity);
  }
  try {
    // A counter shard or an instruments item another transaction holds cancels this one without writing: sent again.
    await retryingConflicts(() => t.client.send(new TransactWriteItemsCommand({ TransactItems: planned.map((p) => p.item) })));
  } catch (error) {
    throw toDomainError(error, { operation, transactionItems: planned.map((p) => p.description) });
  }
}
