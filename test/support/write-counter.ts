import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Counts the write requests a DynamoDB client sends, by table (a middleware on the client, so it
 * sees every store's writes, transactions included). Lock writes are counted apart: taking and
 * releasing a lock before a 409 is not data.
 */
export interface WriteCounter {
  /** Writes to data tables (billing, history, payments, stripe-events) since the last reset. */
  data(): number;
  /** Writes to the locks table since the last reset. */
  locks(): number;
  reset(): void;
}

export const WRITE_COMMANDS = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

export type WriteInput = {
  TableName?: string;
  TransactItems?: { Put?: { TableName?: string }; Update?: { TableName?: string }; Delete?: { TableName?: string }; ConditionCheck?: { TableName?: string } }[];
  RequestItems?: Record<string, unknown>;
};

/** The tables a write request names; a transaction's condition checks only when asked. */
export function tablesOf(input: WriteInput, { conditionChecks = false } = {}): string[] {
  if (input.TableName) return [input.TableName];
  if (input.TransactItems) return input.TransactItems.flatMap((t) => [t.Put?.TableName, t.Update?.TableName, t.Delete?.TableName, conditionChecks ? t.ConditionCheck?.TableName : undefined].filter((n): n is string => !!n));
  if (input.RequestItems) return Object.keys(input.RequestItems);
  return [];
}

export function countWrites(client: DynamoDBClient, locksTable: string): WriteCounter {
  let data = 0;
  let locks = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String((context as { commandName?: unknown }).commandName ?? '');
      if (WRITE_COMMANDS.has(command)) {
        const tables = tablesOf(args.input as WriteInput);
        if (tables.some((t) => t !== locksTable)) data += 1;
        else locks += 1;
      }
      return next(args);
    },
    { step: 'initialize', name: 'countWrites', override: true },
  );
  return {
    data: () => data,
    locks: () => locks,
    reset: () => {
      data = 0;
      locks = 0;
    },
  };
}

/** The commands `run` sends through `client`, in order (a middleware on the client, once per send, above the SDK's retries). */
export async function commandsSent(client: DynamoDBClient, run: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const name = `commandsSent-${Math.random().toString(36).slice(2)}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(String((context as { commandName?: unknown }).commandName ?? ''));
      return next(args);
    },
    { step: 'initialize', name },
  );
  try {
    await run();
  } finally {
    client.middlewareStack.remove(name);
  }
  return sent;
}
