import { GetItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ProcessorBudgetStore, ProcessorId } from '../../domain/ports/processor-budget.js';
import { isConditionalCheckFailed, toDomainError } from './errors.js';

/** A second's counter is only read within its second: TTL removes it an hour later. */
const SECOND_TTL_SECONDS = 3600;
/** A lease that loses its condition reads the count back and asks for what is left, at most this often. */
const LEASE_ROUNDS = 3;

/** `processor-budget:{processor}:{epochSecond}`: one locks-table item per processor and wall-clock second. */
export function budgetKeyOf(processor: ProcessorId, epochSecond: number): string {
  return `processor-budget:${processor}:${epochSecond}`;
}

export function throttledKeyOf(processor: ProcessorId): string {
  return `processor-budget:${processor}:throttled`;
}

/**
 * The limiter's counters on the locks table (keyed by a string, with a TTL): a lease is one
 * conditional UpdateItem `ADD used :n` on `used <= cap - n`; when it fails, the same answer
 * carries the count (ReturnValuesOnConditionCheckFailure), so the rest of the second is taken next.
 */
export class DynamoProcessorBudgetStore implements ProcessorBudgetStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async lease(processor: ProcessorId, epochSecond: number, count: number, cap: number): Promise<number> {
    let want = Math.min(count, cap);
    for (let round = 0; round < LEASE_ROUNDS && want > 0; round++) {
      const used = await this.tryAdd(processor, epochSecond, want, cap);
      if (used === undefined) return want;
      want = Math.min(want, cap - used);
    }
    return 0;
  }

  /** Undefined when the tokens were added, or the count that refused them. */
  private async tryAdd(processor: ProcessorId, epochSecond: number, n: number, cap: number): Promise<number | undefined> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { PartitionKey: { S: budgetKeyOf(processor, epochSecond) } },
          UpdateExpression: 'ADD used :n SET expires_at = :ttl',
          ConditionExpression: 'attribute_not_exists(used) OR used <= :room',
          ExpressionAttributeValues: { ':n': { N: String(n) }, ':room': { N: String(cap - n) }, ':ttl': { N: String(epochSecond + SECOND_TTL_SECONDS) } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return undefined;
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw toDomainError(error, { operation: 'processorBudget.lease' });
      const item = (error as { Item?: { used?: { N?: string } } }).Item;
      return item?.used?.N !== undefined ? Number(item.used.N) : cap;
    }
  }

  async reportThrottled(processor: ProcessorId, count: number): Promise<void> {
    if (count <= 0) return;
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { PartitionKey: { S: throttledKeyOf(processor) } },
          UpdateExpression: 'ADD throttled :n',
          ExpressionAttributeValues: { ':n': { N: String(count) } },
        }),
      );
    } catch (error) {
      throw toDomainError(error, { operation: 'processorBudget.reportThrottled' });
    }
  }

  async updateQuotaFactor(processor: ProcessorId, next: (factor: number, throttledSinceLastRun: number) => number): Promise<{ factor: number; throttled: number }> {
    try {
      const key = { PartitionKey: { S: throttledKeyOf(processor) } };
      const item = (await this.client.send(new GetItemCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }))).Item;
      const total = Number(item?.throttled?.N ?? 0);
      const throttled = Math.max(0, total - Number(item?.seen?.N ?? 0));
      const factor = next(Number(item?.factor?.N ?? 1), throttled);
      // `seen` is set to the total read: reports added since are counted by the next run.
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET seen = :seen, factor = :factor',
          ExpressionAttributeValues: { ':seen': { N: String(total) }, ':factor': { N: String(factor) } },
        }),
      );
      return { factor, throttled };
    } catch (error) {
      throw toDomainError(error, { operation: 'processorBudget.updateQuotaFactor' });
    }
  }

  async throttledTotal(processor: ProcessorId): Promise<number> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: { PartitionKey: { S: throttledKeyOf(processor) } }, ConsistentRead: true }),
      );
      return Number(out.Item?.throttled?.N ?? 0);
    } catch (error) {
      throw toDomainError(error, { operation: 'processorBudget.throttledTotal' });
    }
  }
}
