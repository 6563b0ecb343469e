import { UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { PersonDebitCounter } from '../../domain/ports/person-debits.js';
import { isConditionalCheckFailed, toDomainError } from './errors.js';

/** A day's counter is read only on its day: TTL removes it two days after. */
const DAY_TTL_SECONDS = 3 * 24 * 3600;

/** `person-debits:{user_id}:{YYYY-MM-DD}`: one locks-table item per member and UTC day. */
export function personDebitKeyOf(userId: string, day: string): string {
  return `person-debits:${userId}:${day}`;
}

/**
 * The daily cap's counter on the locks table (keyed by a string, with a TTL): a reservation is one
 * conditional UpdateItem `ADD debited_cents :n` on `debited_cents <= limit - n`.
 */
export class DynamoPersonDebitStore implements PersonDebitCounter {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async reserve(userId: string, day: string, cents: number, limitCents: number): Promise<boolean> {
    if (cents > limitCents) return false;
    try {
      await this.add(userId, day, cents, { condition: limitCents - cents });
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw toDomainError(error, { operation: 'personDebits.reserve' });
    }
  }

  async release(userId: string, day: string, cents: number): Promise<void> {
    try {
      await this.add(userId, day, -cents, {});
    } catch (error) {
      throw toDomainError(error, { operation: 'personDebits.release' });
    }
  }

  private async add(userId: string, day: string, cents: number, options: { readonly condition?: number }): Promise<void> {
    const expires = Math.floor(Date.parse(`${day}T00:00:00Z`) / 1000) + DAY_TTL_SECONDS;
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { PartitionKey: { S: personDebitKeyOf(userId, day) } },
        UpdateExpression: 'ADD debited_cents :n SET expires_at = :ttl',
        ...(options.condition !== undefined ? { ConditionExpression: 'attribute_not_exists(debited_cents) OR debited_cents <= :room' } : {}),
        ExpressionAttributeValues: {
          ':n': { N: String(cents) },
          ':ttl': { N: String(expires) },
          ...(options.condition !== undefined ? { ':room': { N: String(options.condition) } } : {}),
        },
      }),
    );
  }
}
