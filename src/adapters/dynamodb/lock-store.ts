import { DeleteItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LockLease, LockStore } from '../../domain/ports/locks.js';
import { marshallItem } from './attribute-codec.js';
import { isConditionalCheckFailed, toDomainError } from './errors.js';

/** TTL slack past the lease: TTL only cleans up, a lease is judged by `lease_expires_at`. */
export const LOCK_TTL_SLACK_SECONDS = 3600;

/**
 * The user billing lock (DESIGN 2.6) on the locks table: one conditional PutItem to acquire,
 * conditional on `record_version_number` to heartbeat and release. A condition that fails is an
 * answer (false / no-op), not an exception.
 */
export class DynamoLockStore implements LockStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async tryAcquire(lease: LockLease, nowMs: number, onTakeover?: (previous: LockLease) => void): Promise<boolean> {
    return this.conditionalPut(
      'locks.tryAcquire',
      lease,
      'attribute_not_exists(PartitionKey) OR lease_expires_at < :now',
      { ':now': { N: String(nowMs) } },
      onTakeover,
    );
  }

  async renew(key: string, previousVersion: string, next: LockLease): Promise<boolean> {
    if (next.key !== key) throw new RangeError(`renew: lease key ${next.key} does not match ${key}`);
    return this.conditionalPut('locks.renew', next, 'record_version_number = :previous', { ':previous': { S: previousVersion } });
  }

  async release(key: string, recordVersionNumber: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: { PartitionKey: { S: key } },
          ConditionExpression: 'record_version_number = :rvn',
          ExpressionAttributeValues: { ':rvn': { S: recordVersionNumber } },
        }),
      );
    } catch (error) {
      // Someone else holds it now (our lease expired and was taken over), or it is gone: nothing to release.
      if (isConditionalCheckFailed(error)) return;
      throw toDomainError(error, { operation: 'locks.release' });
    }
  }

  private async conditionalPut(
    operation: string,
    lease: LockLease,
    condition: string,
    values: Record<string, { N: string } | { S: string }>,
    onReplaced?: (previous: LockLease) => void,
  ): Promise<boolean> {
    try {
      const out = await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: marshallItem({
            PartitionKey: lease.key,
            owner_name: lease.owner_name,
            record_version_number: lease.record_version_number,
            lease_duration_ms: lease.lease_duration_ms,
            lease_expires_at: lease.lease_expires_at,
            expires_at: ttlOf(lease),
            ...(lease.purpose !== undefined ? { purpose: lease.purpose } : {}),
            ...(lease.held_since !== undefined ? { held_since: lease.held_since } : {}),
          }),
          ConditionExpression: condition,
          ExpressionAttributeValues: values,
          // The replaced item comes back with the same request (no extra read): an expired lease taken over.
          ...(onReplaced ? { ReturnValues: 'ALL_OLD' as const } : {}),
        }),
      );
      const old = out.Attributes;
      if (onReplaced && old) {
        onReplaced({
          key: old.PartitionKey?.S ?? lease.key,
          owner_name: old.owner_name?.S ?? '',
          record_version_number: old.record_version_number?.S ?? '',
          lease_duration_ms: Number(old.lease_duration_ms?.N ?? 0),
          lease_expires_at: Number(old.lease_expires_at?.N ?? 0),
          ...(old.purpose?.S !== undefined ? { purpose: old.purpose.S } : {}),
          ...(old.held_since?.N !== undefined ? { held_since: Number(old.held_since.N) } : {}),
        });
      }
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw toDomainError(error, { operation });
    }
  }
}

/**
 * The item's TTL (epoch seconds): DynamoDB deletes on the wall clock, not on the lease's (business)
 * clock, so the later of the two is used. Equal in production; where the business clock runs behind
 * (a simulated now, tests, the bench) a lock still held must not vanish under its holder, which
 * would fail the holder's transaction that releases it.
 */
export function ttlOf(lease: Pick<LockLease, 'lease_expires_at'>, wallNowMs = Date.now()): number {
  return Math.ceil(Math.max(lease.lease_expires_at, wallNowMs) / 1000) + LOCK_TTL_SLACK_SECONDS;
}
