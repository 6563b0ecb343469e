import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { CircuitStore } from '../../domain/ports/circuits.js';
import { isConditionalCheckFailed, toDomainError } from './errors.js';

/** The circuit items share the locks table: small, TTL-cleaned coordination items, one per service. */
export const CIRCUIT_KEY_PREFIX = 'processor-circuit:';
/** Kept a day past `open_until` for the post-mortem; TTL only cleans up, `open_until` decides. */
const CIRCUIT_TTL_SLACK_SECONDS = 86_400;

export function circuitKey(service: string): string {
  return `${CIRCUIT_KEY_PREFIX}${service}`;
}

/**
 * Per-processor circuits on the locks table (DESIGN 15): a GetItem to read one, a PutItem that
 * only lengthens it to open one, so two workers opening at once keep the later `open_until`.
 */
export class DynamoCircuitStore implements CircuitStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async openUntil(service: string): Promise<number | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: { PartitionKey: { S: circuitKey(service) } }, ProjectionExpression: 'open_until' }),
      );
      const value = out.Item?.open_until?.N;
      return value === undefined ? undefined : Number(value);
    } catch (error) {
      throw toDomainError(error, { operation: 'circuits.openUntil' });
    }
  }

  async open(service: string, untilMs: number, reason: string, nowMs: number): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            PartitionKey: { S: circuitKey(service) },
            open_until: { N: String(untilMs) },
            opened_at: { N: String(nowMs) },
            reason: { S: reason },
            expires_at: { N: String(Math.ceil(untilMs / 1000) + CIRCUIT_TTL_SLACK_SECONDS) },
          },
          ConditionExpression: 'attribute_not_exists(open_until) OR open_until < :until',
          ExpressionAttributeValues: { ':until': { N: String(untilMs) } },
        }),
      );
    } catch (error) {
      // Someone opened it for longer already: that answer stands.
      if (isConditionalCheckFailed(error)) return;
      throw toDomainError(error, { operation: 'circuits.open' });
    }
  }
}
