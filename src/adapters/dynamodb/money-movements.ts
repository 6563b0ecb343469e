import { PutItemCommand, QueryCommand, type AttributeValue, type DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { movementDay, MOVEMENT_KINDS, type MoneyMovement } from '../../domain/money-movements.js';
import type { MoneyMovementStore } from '../../domain/ports/money-movements.js';
import type { PaymentMethod } from '../../domain/records.js';
import { marshallItem, unmarshallItem, integerNumbers } from './attribute-codec.js';
import { CorruptItemError, toDomainError } from './errors.js';
import { shardOf } from './sharding.js';

/**
 * Shards per rail and day: writes spread over this many partitions, and a day's read is this many
 * Queries per rail. Changing it strands the rows already written under the old shard numbers.
 */
export const MOVEMENT_SHARD_COUNT = 8;

/** Rows per page of a checkpointed read: one page is one step of the reconciliation job. */
export const MOVEMENT_PAGE_ROWS = 1000;

/** `{rail}#{YYYY-MM-DD}#{shard}`: what the day's read of one rail names, shard by shard. */
export function reconKey(rail: PaymentMethod, day: string, shard: number): string {
  return `${rail}#${day}#${shard}`;
}

export function movementItem(movement: MoneyMovement): Record<string, AttributeValue> {
  const day = movementDay(movement.occurred_at);
  return marshallItem({
    ...movement,
    recon_key: reconKey(movement.rail, day, shardOf(movement.movement_id, MOVEMENT_SHARD_COUNT)),
    sk: `${movement.occurred_at}#${movement.movement_id}`,
  });
}

/**
 * The row as one item of its effect's transaction. Unconditional: its key is derived from the
 * interaction, so writing it again writes the same row, and it never fails its effect.
 */
export function movementPut(table: string, movement: MoneyMovement): TransactWriteItem {
  return { Put: { TableName: table, Item: movementItem(movement) } };
}

function movementOf(item: Record<string, AttributeValue>, table: string): MoneyMovement {
  const { recon_key: _k, sk: _s, ...rest } = unmarshallItem(item, integerNumbers) as Record<string, unknown>;
  if (typeof rest.movement_id !== 'string' || !MOVEMENT_KINDS.includes(rest.kind as MoneyMovement['kind']) || typeof rest.amount_cents !== 'number') {
    throw new CorruptItemError(`${table}: not a money movement (${String(item.recon_key?.S)})`);
  }
  return rest as unknown as MoneyMovement;
}

export class DynamoMoneyMovementStore implements MoneyMovementStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  async record(movement: MoneyMovement): Promise<void> {
    try {
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: movementItem(movement) }));
    } catch (error) {
      throw toDomainError(error, { operation: 'movements.record' });
    }
  }

  async listDay(rail: PaymentMethod, day: string): Promise<MoneyMovement[]> {
    const shards = await Promise.all(Array.from({ length: MOVEMENT_SHARD_COUNT }, (_, shard) => this.queryShard(reconKey(rail, day, shard))));
    return shards.flat();
  }

  /** One Query: the cursor is `{shard}:{the shard's page key, base64url}`, so a page never spans two shards. */
  async pageDay(rail: PaymentMethod, day: string, cursor?: string): Promise<{ items: MoneyMovement[]; next?: string }> {
    const [shardText, startText] = (cursor ?? '0:').split(':');
    const shard = Number(shardText);
    if (!Number.isInteger(shard) || shard < 0 || shard >= MOVEMENT_SHARD_COUNT) throw new CorruptItemError(`movements: not a day cursor (${cursor})`);
    const start = startText ? (JSON.parse(Buffer.from(startText, 'base64url').toString('utf8')) as Record<string, AttributeValue>) : undefined;
    try {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'recon_key = :k',
          ExpressionAttributeValues: { ':k': { S: reconKey(rail, day, shard) } },
          Limit: MOVEMENT_PAGE_ROWS,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      const items = (page.Items ?? []).map((item) => movementOf(item, this.table));
      if (page.LastEvaluatedKey) return { items, next: `${shard}:${Buffer.from(JSON.stringify(page.LastEvaluatedKey)).toString('base64url')}` };
      return shard + 1 < MOVEMENT_SHARD_COUNT ? { items, next: `${shard + 1}:` } : { items };
    } catch (error) {
      throw toDomainError(error, { operation: 'movements.pageDay' });
    }
  }

  private async queryShard(key: string): Promise<MoneyMovement[]> {
    const out: MoneyMovement[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      try {
        const page = await this.client.send(
          new QueryCommand({
            TableName: this.table,
            KeyConditionExpression: 'recon_key = :k',
            ExpressionAttributeValues: { ':k': { S: key } },
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        for (const item of page.Items ?? []) out.push(movementOf(item, this.table));
        start = page.LastEvaluatedKey;
      } catch (error) {
        throw toDomainError(error, { operation: 'movements.listDay' });
      }
    } while (start);
    return out;
  }
}
