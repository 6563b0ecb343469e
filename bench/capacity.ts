import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { allTables, type TableDefinition, type TableNames } from '../src/adapters/dynamodb/table-definitions.js';

/**
 * Counts DynamoDB requests per command and prices them in request units the way on-demand
 * DynamoDB bills them, from the sizes of the items involved (an SDK middleware sees every request
 * and its answer). The formulas (AWS "Read/write capacity mode" and "Item sizes" pages):
 *
 * - item size: sum over attributes of name bytes + value bytes; S and B their bytes, N about
 *   1 byte per 2 significant digits + 1, BOOL and NULL 1, L and M 3 + their elements (+1 each);
 * - GetItem: strongly consistent 1 RRU per 4 KB (rounded up), eventually consistent half that;
 * - Query: the summed size of the items read, rounded up to 4 KB, 1 per 4 KB consistent, 0.5
 *   eventual (GSIs are always eventual); a projection does not lower the cost, so the full item
 *   size is used (known from this process's earlier writes and reads, seeding included). DynamoDB
 *   bills every item the key condition reads, before a filter and with `Select: COUNT` too: the
 *   items it evaluated but did not return (ScannedCount - Count) are priced at the average size of
 *   the table's known items that carry the index's key;
 * - PutItem, UpdateItem, DeleteItem: 1 WRU per KB of the larger of the old and new item (a
 *   failed condition is billed too);
 * - TransactWriteItems: 2 WRU per KB for each item in the transaction;
 * - GSI writes (standard rate, never transactional): for each GSI of the table (projection ALL),
 *   1 WRU per KB of the index entry when an item enters, leaves or changes in the index, 2 entries'
 *   worth (delete + put) when its index key changes.
 */

export interface CapacityTotals {
  requests: number;
  byCommand: Record<string, number>;
  /** Read request units. */
  rru: number;
  /** Write request units on the tables. */
  wru: number;
  /** Write request units on GSIs. */
  gsiWru: number;
  /** Items returned by GetItem, Query and Scan. */
  itemsRead: number;
  /** Items DynamoDB read for them (Query/Scan ScannedCount: filtered and COUNT queries read items they do not return). */
  itemsScanned: number;
  /** Lock heartbeats (a lease renewal), counted apart: not in requests, units or byCommand. */
  heartbeats: number;
}

export interface CapacityMeter {
  snapshot(): CapacityTotals;
  reset(): void;
  /** Stops counting (the middleware stays, idle). */
  pause(paused: boolean): void;
}

type Item = Record<string, AttributeValue>;

export function attributeValueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.N !== undefined) {
    const digits = value.N.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
    return Math.ceil(Math.max(1, digits.length) / 2) + 1;
  }
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
  if (value.NS !== undefined) return value.NS.reduce((n, s) => n + attributeValueSize({ N: s }), 0);
  if (value.L !== undefined) return 3 + value.L.reduce((n, v) => n + 1 + attributeValueSize(v), 0);
  if (value.M !== undefined) return 3 + itemSize(value.M) + Object.keys(value.M).length;
  return 0;
}

export function itemSize(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name, 'utf8') + attributeValueSize(value);
  return size;
}

const units = (bytes: number, unit: number) => Math.max(1, Math.ceil(bytes / unit));

interface TableInfo {
  readonly def: TableDefinition;
}

export function meterCapacity(client: DynamoDBClient, tables: TableNames): CapacityMeter {
  const info = new Map<string, TableInfo>();
  for (const [id, name] of Object.entries(tables) as [keyof typeof allTables, string][]) info.set(name, { def: allTables[id] });
  /** Last known full item per table + key, to price projected queries, deletes and index changes. */
  const known = new Map<string, Item>();
  const keyOf = (table: string, item: Item): string => {
    const def = info.get(table)?.def;
    if (!def) return `${table}|?`;
    const pk = item[def.partitionKey.name]?.S ?? item[def.partitionKey.name]?.N ?? '';
    const sk = def.sortKey ? (item[def.sortKey.name]?.S ?? item[def.sortKey.name]?.N ?? '') : '';
    return `${table}|${pk}|${sk}`;
  };
  let totals: CapacityTotals = fresh();
  let paused = false;

  function gsiWrites(table: string, before: Item | undefined, after: Item | undefined): number {
    const def = info.get(table)?.def;
    if (!def) return 0;
    let wru = 0;
    for (const gsi of def.globalSecondaryIndexes) {
      const keyIn = (item: Item | undefined) =>
        item && item[gsi.partitionKey.name] && (!gsi.sortKey || item[gsi.sortKey.name])
          ? `${JSON.stringify(item[gsi.partitionKey.name])}|${gsi.sortKey ? JSON.stringify(item[gsi.sortKey.name]) : ''}`
          : undefined;
      const was = keyIn(before);
      const is = keyIn(after);
      if (was === undefined && is === undefined) continue;
      if (was !== undefined && is !== undefined && was !== is) wru += units(itemSize(before!), 1024) + units(itemSize(after!), 1024);
      else wru += units(itemSize((after ?? before)!), 1024);
    }
    return wru;
  }

  /** The average size of the table's known items (those in `indexName` when given); 1 KB when none is known. */
  function averageKnownSize(table: string, indexName: string | undefined): number {
    const def = info.get(table)?.def;
    const gsi = indexName ? def?.globalSecondaryIndexes.find((g) => g.indexName === indexName) : undefined;
    let bytes = 0;
    let count = 0;
    for (const [key, item] of known) {
      if (!key.startsWith(`${table}|`)) continue;
      if (gsi && item[gsi.partitionKey.name] === undefined) continue;
      bytes += itemSize(item);
      count += 1;
    }
    return count === 0 ? 1024 : bytes / count;
  }

  function write(table: string, key: string, after: Item | undefined, rate: 1 | 2): void {
    const before = known.get(key);
    const size = Math.max(before ? itemSize(before) : 0, after ? itemSize(after) : 0);
    totals.wru += rate * units(size, 1024);
    totals.gsiWru += gsiWrites(table, before, after);
  }

  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String((context as { commandName?: unknown }).commandName ?? '').replace(/Command$/, '');
      const input = args.input as Record<string, any>;
      const heartbeat = command === 'PutItem' && input.TableName === tables.locks && /record_version_number = :previous/.test(String(input.ConditionExpression ?? ''));
      if (heartbeat) {
        if (!paused) totals.heartbeats += 1;
        return next(args);
      }
      let failed = false;
      let output: any;
      try {
        output = await next(args);
      } catch (error) {
        failed = true;
        throw error;
      } finally {
        if (!paused) {
          totals.requests += 1;
          totals.byCommand[command] = (totals.byCommand[command] ?? 0) + 1;
          price(command, input, output?.output, failed);
        } else {
          // Not counted, but the items written and read are remembered (their sizes price later reads).
          const counted = totals;
          totals = fresh();
          price(command, input, output?.output, failed);
          totals = counted;
        }
      }
      return output;
    },
    { step: 'initialize', name: 'meterCapacity', override: true },
  );

  function price(command: string, input: Record<string, any>, output: Record<string, any> | undefined, failed: boolean): void {
    switch (command) {
      case 'GetItem': {
        const item = output?.Item as Item | undefined;
        if (item) known.set(keyOf(input.TableName, item), item);
        const size = item ? itemSize(item) : 0;
        if (item) {
          totals.itemsRead += 1;
          totals.itemsScanned += 1;
        }
        totals.rru += (input.ConsistentRead ? 1 : 0.5) * units(size, 4096);
        return;
      }
      case 'Query':
      case 'Scan': {
        const items = (output?.Items ?? []) as Item[];
        const scanned = Math.max(Number(output?.ScannedCount ?? items.length), items.length);
        totals.itemsRead += items.length;
        totals.itemsScanned += scanned;
        let size = 0;
        for (const item of items) size += itemSize(known.get(keyOf(input.TableName, item)) ?? item);
        if (scanned > items.length) size += (scanned - items.length) * averageKnownSize(input.TableName, input.IndexName);
        const consistent = input.ConsistentRead && !input.IndexName;
        totals.rru += (consistent ? 1 : 0.5) * units(size, 4096);
        return;
      }
      case 'PutItem': {
        const key = keyOf(input.TableName, input.Item);
        write(input.TableName, key, input.Item, 1);
        if (!failed) known.set(key, input.Item);
        return;
      }
      case 'DeleteItem': {
        const key = keyOf(input.TableName, input.Key);
        write(input.TableName, key, undefined, 1);
        if (!failed) known.delete(key);
        return;
      }
      case 'UpdateItem': {
        const key = keyOf(input.TableName, input.Key);
        write(input.TableName, key, known.get(key) ?? input.Key, 1);
        return;
      }
      case 'TransactWriteItems': {
        for (const t of input.TransactItems ?? []) {
          if (t.Put) {
            const key = keyOf(t.Put.TableName, t.Put.Item);
            write(t.Put.TableName, key, t.Put.Item, 2);
            if (!failed) known.set(key, t.Put.Item);
          } else if (t.Update) {
            const key = keyOf(t.Update.TableName, t.Update.Key);
            write(t.Update.TableName, key, known.get(key) ?? t.Update.Key, 2);
          } else if (t.Delete) {
            const key = keyOf(t.Delete.TableName, t.Delete.Key);
            write(t.Delete.TableName, key, undefined, 2);
            if (!failed) known.delete(key);
          } else if (t.ConditionCheck) {
            totals.rru += 2;
          }
        }
        return;
      }
      default:
        return;
    }
  }

  return {
    snapshot: () => ({ ...totals, byCommand: { ...totals.byCommand } }),
    reset: () => {
      totals = fresh();
    },
    pause: (p) => {
      paused = p;
    },
  };
}

function fresh(): CapacityTotals {
  return { requests: 0, byCommand: {}, rru: 0, wru: 0, gsiWru: 0, itemsRead: 0, itemsScanned: 0, heartbeats: 0 };
}
