import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableId } from '../adapters/dynamodb/table-definitions.js';
import type { FunctionManifest } from '../manifest/index.js';

/** A request outside the function's manifest: refused before it is sent (IAM would refuse it in AWS). */
export class NotGrantedError extends Error {
  override readonly name = 'NotGrantedError';
}

/** One DynamoDB permission a request needs, in the manifest's words. */
export interface NeededAccess {
  readonly table: string;
  /** get, query, put, update, delete; anything else (scan, conditionCheck, batch, describe) is never granted. */
  readonly action: string;
  readonly index?: string;
  /** A base-table Query's partition key value, when its key condition names one. */
  readonly partition?: string;
}

type Item = { TableName?: string; IndexName?: string; KeyConditionExpression?: string; ExpressionAttributeValues?: Record<string, unknown> };
type Input = Item & {
  TransactItems?: { Put?: Item; Update?: Item; Delete?: Item; ConditionCheck?: Item; Get?: Item }[];
  RequestItems?: Record<string, unknown>;
};

const SINGLE: Record<string, string> = {
  GetItemCommand: 'get',
  QueryCommand: 'query',
  PutItemCommand: 'put',
  UpdateItemCommand: 'update',
  DeleteItemCommand: 'delete',
};
const TRANSACT_ITEM: Record<string, string> = { Put: 'put', Update: 'update', Delete: 'delete', ConditionCheck: 'conditionCheck', Get: 'get' };

/** The permissions a command needs, as IAM counts them (a transaction needs each item's own action). */
export function neededAccess(commandName: string, input: Input): NeededAccess[] {
  const single = SINGLE[commandName];
  if (single) {
    const table = input.TableName ?? '';
    if (single !== 'query') return [{ table, action: single }];
    if (input.IndexName) return [{ table, action: 'query', index: input.IndexName }];
    const partition = partitionOf(input);
    return [partition === undefined ? { table, action: 'query' } : { table, action: 'query', partition }];
  }
  if (commandName === 'TransactWriteItemsCommand' || commandName === 'TransactGetItemsCommand') {
    return (input.TransactItems ?? []).flatMap((item) =>
      Object.entries(item).map(([kind, target]) => ({ table: (target as Item).TableName ?? '', action: TRANSACT_ITEM[kind] ?? kind })),
    );
  }
  const action = commandName.replace(/Command$/, '');
  if (input.RequestItems) return Object.keys(input.RequestItems).map((table) => ({ table, action }));
  return [{ table: input.TableName ?? '', action }];
}

/** The value of `<key> = :value`, the partition condition a key condition starts with. */
function partitionOf(input: Item): string | undefined {
  const match = /^\s*#?\w+\s*=\s*(:\w+)/.exec(input.KeyConditionExpression ?? '');
  const value = match ? input.ExpressionAttributeValues?.[match[1]!] : undefined;
  if (typeof value === 'string') return value;
  const s = (value as { S?: unknown } | undefined)?.S;
  return typeof s === 'string' ? s : undefined;
}

/** Whether the manifest grants one needed permission on the table it names. */
export function isGranted(manifest: FunctionManifest, tableId: TableId, needed: NeededAccess): boolean {
  const grant = manifest.tables[tableId];
  if (!grant) return false;
  if (needed.index !== undefined) return (grant.indexes ?? []).includes(needed.index);
  switch (needed.action) {
    case 'get':
      return (grant.read ?? []).includes(needed.action);
    case 'query':
      if (!(grant.read ?? []).includes('query')) return false;
      // IAM's dynamodb:LeadingKeys: only the named partitions.
      return grant.queryPartitions === undefined || (needed.partition !== undefined && grant.queryPartitions.includes(needed.partition));
    case 'put':
    case 'update':
      return (grant.write ?? []).includes(needed.action);
    case 'delete':
      return grant.delete === true;
    default:
      return false;
  }
}

/**
 * The same client, refusing before it is sent every DynamoDB request the function's manifest does
 * not grant: the boundary IAM draws in AWS, drawn in every environment. A view, not a copy: it
 * shares the client's connection and middleware (tests observe the base client), adding the guard
 * on each send, so functions sharing one client each get their own guard. `observe` sees every
 * permission used.
 */
export function guardedClient(
  client: DynamoDBClient,
  functionName: string,
  manifest: FunctionManifest,
  tableNames: Partial<Record<TableId, string>>,
  observe?: (tableId: TableId, needed: NeededAccess) => void,
): DynamoDBClient {
  const byName = new Map<string, TableId>();
  for (const [id, name] of Object.entries(tableNames) as [TableId, string | undefined][]) if (name) byName.set(name, id);
  type Stack = DynamoDBClient['middlewareStack'];
  const addGuard = (stack: Stack): Stack => {
    stack.add(
      (next, context) => async (args) => {
        const commandName = String((context as { commandName?: unknown }).commandName ?? '');
        for (const needed of neededAccess(commandName, args.input as Input)) {
          const tableId = byName.get(needed.table);
          if (!tableId || !isGranted(manifest, tableId, needed)) {
            const what = `${needed.action}${needed.index ? ` on index ${needed.index}` : ''} on ${tableId ?? `table ${needed.table || '(none)'}`}`;
            throw new NotGrantedError(`${functionName} is not granted ${what} by its manifest (src/manifest/functions.ts)`);
          }
          observe?.(tableId, needed);
        }
        return next(args);
      },
      { step: 'initialize', name: 'manifestGrants', override: true },
    );
    return stack;
  };
  // Every send concatenates the client's stack with the command's; the view's adds the guard there.
  const base = client.middlewareStack;
  const stack: Stack = Object.create(base);
  stack.concat = ((from: Stack) => addGuard(base.concat(from))) as Stack['concat'];
  const view: DynamoDBClient = Object.create(client);
  Object.defineProperty(view, 'middlewareStack', { value: stack });
  return view;
}
