import { randomUUID } from 'node:crypto';
import {
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { safeParseCold } from '../../domain/lazy-schema.js';
import type { ClaimResult, RecordResult, StripeEventStore } from '../../domain/ports/stripe-events.js';
import { stripeEventClaimSchema, type StripeEventClaim } from '../../domain/records.js';
import { marshallItem, unmarshallItem, type Item } from './attribute-codec.js';
import { CorruptItemError, isConditionalCheckFailed, toDomainError } from './errors.js';

/** Rows delete themselves (table TTL) this long after their last write. */
export const STRIPE_EVENT_RETENTION_SECONDS = 30 * 24 * 60 * 60;

export interface DynamoStripeEventStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Claim tokens; a fresh UUID per claim by default. */
  readonly newToken?: () => string;
  /** Whose events (the key's prefix): Stripe's by default; the ACH and balance webhooks claim theirs in the same table. */
  readonly source?: EventSource;
}

/** The senders whose event ids are claimed: each its own key space, so ids of two senders never collide. */
export type EventSource = 'stripe' | 'ach' | 'balance';

function eventKey(source: EventSource, eventId: string): Item {
  return { pk: { S: `${source}#${eventId}` }, sk: { S: 'event' } };
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** Who may write a row: nobody has, or its claim's lease is over (a processing row without a lease, an older shape, counts as expired). */
const CLAIMABLE = 'attribute_not_exists(pk) OR (#status = :processing AND (lease_expires_at < :now OR attribute_not_exists(lease_expires_at)))';

/**
 * The webhook event claim (DESIGN 2.8; ACH and balance events too, DESIGN 15): a live `processing` claim repels
 * duplicates, an expired one can be taken over, and only the claim's own token can mark it
 * processed or release it.
 */
export class DynamoStripeEventStore implements StripeEventStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly newToken: () => string;
  private readonly source: EventSource;

  constructor(options: DynamoStripeEventStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.newToken = options.newToken ?? randomUUID;
    this.source = options.source ?? 'stripe';
  }

  /** Claims under a lease: the row of a delivery that is applying the event. */
  async claim(eventId: string, nowMs: number, leaseMs: number): Promise<ClaimResult> {
    const token = this.newToken();
    const put = await this.putIfClaimable(eventId, nowMs, { status: 'processing', lease_expires_at: nowMs + leaseMs, claim_token: token }, `${this.source}Events.claim`);
    return put === 'written' ? { kind: 'claimed', claim_token: token } : { kind: put };
  }

  /** The row a claim and its mark leave, written at once under the claim's condition. */
  async recordProcessed(eventId: string, eventType: string, nowMs: number): Promise<RecordResult> {
    const put = await this.putIfClaimable(eventId, nowMs, { status: 'processed', event_type: eventType, claim_token: this.newToken() }, `${this.source}Events.recordProcessed`);
    return put === 'written' ? { kind: 'recorded' } : { kind: put };
  }

  /**
   * One conditional Put of the event's row, if nobody has written it or its claim's lease is over.
   * A refusal answers with the row as the condition saw it (ALL_OLD), so a duplicate or a live
   * claim costs no read after it, and no race with a release between the two.
   */
  private async putIfClaimable(eventId: string, nowMs: number, fields: Record<string, unknown>, operation: string): Promise<'written' | 'processed' | 'in_progress'> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: marshallItem({
            pk: `${this.source}#${eventId}`,
            sk: 'event',
            event_id: eventId,
            updated_at: seconds(nowMs),
            expires_at: seconds(nowMs) + STRIPE_EVENT_RETENTION_SECONDS,
            ...fields,
          }),
          ConditionExpression: CLAIMABLE,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':processing': { S: 'processing' }, ':now': { N: String(nowMs) } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'written';
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw toDomainError(error, { operation });
      const seen = (error as { Item?: Item }).Item;
      return seen?.status?.S === 'processed' ? 'processed' : 'in_progress';
    }
  }

  async markProcessed(eventId: string, claimToken: string, eventType: string, nowMs: number): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: eventKey(this.source, eventId),
          UpdateExpression: 'SET #status = :processed, event_type = :type, updated_at = :updated, expires_at = :expires REMOVE lease_expires_at',
          ConditionExpression: 'claim_token = :token AND #status = :processing',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: marshallItem({
            ':processed': 'processed',
            ':processing': 'processing',
            ':type': eventType,
            ':updated': seconds(nowMs),
            ':expires': seconds(nowMs) + STRIPE_EVENT_RETENTION_SECONDS,
            ':token': claimToken,
          }),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw toDomainError(error, { operation: `${this.source}Events.markProcessed` });
    }
  }

  async release(eventId: string, claimToken: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: eventKey(this.source, eventId),
          ConditionExpression: 'claim_token = :token AND #status = :processing',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':token': { S: claimToken }, ':processing': { S: 'processing' } },
        }),
      );
    } catch (error) {
      // Taken over, processed or gone: not ours to delete.
      if (isConditionalCheckFailed(error)) return;
      throw toDomainError(error, { operation: `${this.source}Events.release` });
    }
  }

  async get(eventId: string): Promise<StripeEventClaim | undefined> {
    let item: Item | undefined;
    try {
      item = (await this.client.send(new GetItemCommand({ TableName: this.table, Key: eventKey(this.source, eventId), ConsistentRead: true }))).Item;
    } catch (error) {
      throw toDomainError(error, { operation: `${this.source}Events.get` });
    }
    if (!item) return undefined;
    const parsed = safeParseCold(stripeEventClaimSchema, unmarshallItem(item));
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`).join('; ');
      throw new CorruptItemError(`${this.table} item (pk=${this.source}#${eventId}) is corrupt: ${issues}`);
    }
    return parsed.data;
  }
}
