import { TransactionCanceledException, type DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../src/adapters/dynamodb/client.js';

/**
 * DynamoDB's transaction conflicts, which DynamoDB Local does not show (it runs transactions one at
 * a time): a TransactWriteItems is cancelled with `TransactionConflict` on each item another
 * transaction still holds. A transaction holds the items it updates, deletes or checks (by key)
 * for `windowMs` from its start (the service's conflict window), however long DynamoDB Local takes
 * to answer. Puts are not held: the tests using this put unique items only.
 */
export interface ConflictingClient {
  readonly client: DynamoDBClient;
  /** Transactions cancelled by a conflict so far. */
  readonly conflicts: () => number;
}

export function clientWithTransactionConflicts(endpoint: string, windowMs: number): ConflictingClient {
  const client = createDynamoClient({ region: 'local', endpoint });
  const held = new Set<string>();
  let conflicts = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if ((context as { commandName?: string }).commandName !== 'TransactWriteItemsCommand') return next(args);
      const keys = (args.input as { TransactItems: TransactWriteItem[] }).TransactItems.map(heldKeyOf);
      if (keys.some((key) => key !== undefined && held.has(key))) {
        conflicts += 1;
        throw new TransactionCanceledException({
          message: 'Transaction cancelled, please refer cancellation reasons for specific reasons',
          $metadata: { httpStatusCode: 400 },
          CancellationReasons: keys.map((key) => ({ Code: key !== undefined && held.has(key) ? 'TransactionConflict' : 'None' })),
        });
      }
      const mine = keys.filter((key): key is string => key !== undefined);
      for (const key of mine) held.add(key);
      setTimeout(() => {
        for (const key of mine) held.delete(key);
      }, windowMs);
      return next(args);
    },
    { step: 'initialize', name: 'transactionConflicts' },
  );
  return { client, conflicts: () => conflicts };
}

function heldKeyOf(item: TransactWriteItem): string | undefined {
  const keyed = item.Update ?? item.Delete ?? item.ConditionCheck;
  return keyed ? `${keyed.TableName}|${JSON.stringify(keyed.Key)}` : undefined;
}
