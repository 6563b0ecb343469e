import { GetItemCommand, PutItemCommand, QueryCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Page, PageRequest, PaymentsStore } from '../../domain/ports.js';
import { loanPaymentSchema, type LoanPayment, type LoanPaymentStatus } from '../../domain/records.js';
import { marshallItem, unmarshallItem, type Item } from './attribute-codec.js';
import { CorruptItemError, InvalidTransactionError, toDomainError } from './errors.js';
import { decodeStartKey, encodeStartKey, listAcrossShards, pageLimit } from './pagination.js';
import { assertShardCount, shardOf } from './sharding.js';
import { PAYMENTS_INDEXES } from './table-definitions.js';

export const DEFAULT_PAYMENT_SHARD_COUNT = 8;

/** Key attributes of a payment item (seed 004, GSI2 sharded per DESIGN 2.7). */
export interface PaymentKeys {
  PK: string;
  SK: string;
  GSI1PK: string;
  GSI1SK: string;
  GSI2PK: string;
  GSI2SK: string;
  GSI3PK?: string;
  GSI3SK?: string;
}

const KEY_ATTRIBUTES = ['PK', 'SK', 'GSI1PK', 'GSI1SK', 'GSI2PK', 'GSI2SK', 'GSI3PK', 'GSI3SK'] as const;

function assertKeyPart(value: string, what: string): void {
  // '#' separates key segments; an id containing it could match another loan's prefix.
  if (value.includes('#')) throw new InvalidTransactionError(`${what} must not contain '#': ${value}`);
}

export function paymentKeys(payment: LoanPayment, shardCount: number): PaymentKeys {
  const { loc_user_id: user, loc_loan_id: loan, loc_payment_id: id, loc_status: status } = payment;
  assertKeyPart(user, 'loc_user_id');
  assertKeyPart(loan, 'loc_loan_id');
  assertKeyPart(id, 'loc_payment_id');
  const keys: PaymentKeys = {
    PK: `USER#${user}`,
    SK: `LOAN#${loan}#PAYMENT#${id}`,
    GSI1PK: `USER#${user}`,
    GSI1SK: `LOAN#${loan}#STATUS#${status}#PAYMENT#${id}`,
    GSI2PK: `PAYMENT#${shardOf(id, shardCount)}`,
    GSI2SK: `STATUS#${status}#PAYMENT#${id}`,
  };
  if (payment.loc_confirmation_id) {
    keys.GSI3PK = `USER#${user}`;
    keys.GSI3SK = `CONFIRMATION#${payment.loc_confirmation_id}`;
  }
  return keys;
}

export interface DynamoPaymentsStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Shards of GSI2 (DESIGN 2.7); default 8. */
  readonly paymentShardCount?: number;
}

/**
 * Loan payments (seed 004, DESIGN 2.7). Writes are full puts, conditional on absence (create) or on
 * `version` (update), so a status change rewrites the GSI keys with the item in one write.
 */
export class DynamoPaymentsStore implements PaymentsStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly shardCount: number;

  constructor(options: DynamoPaymentsStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.shardCount = assertShardCount(options.paymentShardCount ?? DEFAULT_PAYMENT_SHARD_COUNT, 'paymentShardCount');
  }

  async get(userId: string, loanId: string, paymentId: string): Promise<LoanPayment | undefined> {
    const out = await this.send('payments.get', () =>
      this.client.send(
        new GetItemCommand({
          TableName: this.table,
          Key: { PK: { S: `USER#${userId}` }, SK: { S: `LOAN#${loanId}#PAYMENT#${paymentId}` } },
          ConsistentRead: true,
        }),
      ),
    );
    return out.Item ? this.decode(out.Item) : undefined;
  }

  /** Oldest payment id first (SK order), strongly consistent. */
  async listByLoan(userId: string, loanId: string, page?: PageRequest): Promise<Page<LoanPayment>> {
    const out = await this.send('payments.listByLoan', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': { S: `USER#${userId}` }, ':prefix': { S: `LOAN#${loanId}#PAYMENT#` } },
          ConsistentRead: true,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['PK', 'SK'], { PK: `USER#${userId}` }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map((item) => this.decode(item)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  async listByLoanAndStatus(userId: string, loanId: string, status: LoanPaymentStatus, page?: PageRequest): Promise<Page<LoanPayment>> {
    const out = await this.send('payments.listByLoanAndStatus', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: PAYMENTS_INDEXES.byLoanStatus,
          KeyConditionExpression: 'GSI1PK = :pk AND begins_with(GSI1SK, :prefix)',
          ExpressionAttributeValues: {
            ':pk': { S: `USER#${userId}` },
            ':prefix': { S: `LOAN#${loanId}#STATUS#${status}#PAYMENT#` },
          },
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['GSI1PK', 'GSI1SK', 'PK', 'SK'], { GSI1PK: `USER#${userId}` }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map((item) => this.decode(item)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  /** Every GSI2 shard in parallel, merged in payment id order (GSI2SK). Eventually consistent. */
  async listByStatus(status: LoanPaymentStatus, page?: PageRequest): Promise<Page<LoanPayment>> {
    const { items, next } = await listAcrossShards({
      shardCount: this.shardCount,
      fingerprint: `payments|${status}|${this.shardCount}`,
      limit: pageLimit(page),
      cursor: page?.cursor,
      query: async (shard, startKey, limit) => {
        const out = await this.send('payments.listByStatus', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: PAYMENTS_INDEXES.byStatus,
              KeyConditionExpression: 'GSI2PK = :pk AND begins_with(GSI2SK, :prefix)',
              ExpressionAttributeValues: { ':pk': { S: `PAYMENT#${shard}` }, ':prefix': { S: `STATUS#${status}#PAYMENT#` } },
              Limit: limit,
              ExclusiveStartKey: startKey,
            }),
          ),
        );
        return { items: out.Items ?? [], lastEvaluatedKey: out.LastEvaluatedKey };
      },
      sortValue: (item) => item.GSI2SK?.S ?? '',
      resumeKeyOf: (item) => ({
        GSI2PK: item.GSI2PK?.S ?? '',
        GSI2SK: item.GSI2SK?.S ?? '',
        PK: item.PK?.S ?? '',
        SK: item.SK?.S ?? '',
      }),
    });
    return { items: items.map((item) => this.decode(item)), next };
  }

  /** GSI3 finds the key; the payment comes from a consistent get. */
  async findByConfirmationId(userId: string, confirmationId: string): Promise<LoanPayment | undefined> {
    const out = await this.send('payments.findByConfirmationId', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: PAYMENTS_INDEXES.byConfirmationId,
          KeyConditionExpression: 'GSI3PK = :pk AND GSI3SK = :sk',
          ExpressionAttributeValues: { ':pk': { S: `USER#${userId}` }, ':sk': { S: `CONFIRMATION#${confirmationId}` } },
          ProjectionExpression: 'loc_user_id, loc_loan_id, loc_payment_id',
        }),
      ),
    );
    for (const item of out.Items ?? []) {
      const current = await this.get(item.loc_user_id?.S ?? '', item.loc_loan_id?.S ?? '', item.loc_payment_id?.S ?? '');
      if (current?.loc_confirmation_id === confirmationId) return current;
    }
    return undefined;
  }

  async create(payment: LoanPayment): Promise<void> {
    await this.put('payments.create', payment, 'attribute_not_exists(PK)', undefined, 'exists');
  }

  async update(payment: LoanPayment, expectedVersion: number): Promise<void> {
    if (payment.version !== expectedVersion + 1) {
      throw new InvalidTransactionError(`payments.update: version must be ${expectedVersion + 1}`);
    }
    await this.put('payments.update', payment, 'version = :expected', { ':expected': { N: String(expectedVersion) } }, 'concurrent');
  }

  private async put(
    operation: string,
    payment: LoanPayment,
    condition: string,
    values: Record<string, { N: string }> | undefined,
    meaning: 'exists' | 'concurrent',
  ): Promise<void> {
    const parsed = loanPaymentSchema.parse(payment);
    const item = marshallItem({ ...parsed, ...paymentKeys(parsed, this.shardCount) });
    const label = `${this.table} payment (user=${parsed.loc_user_id}, loan=${parsed.loc_loan_id}, payment=${parsed.loc_payment_id})`;
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.table,
          Item: item,
          ConditionExpression: condition,
          ...(values ? { ExpressionAttributeValues: values } : {}),
        }),
      );
    } catch (error) {
      throw toDomainError(error, { operation, item: { onConditionFailed: meaning, label } });
    }
  }

  private decode(item: Item): LoanPayment {
    const raw = unmarshallItem(item);
    for (const name of KEY_ATTRIBUTES) delete raw[name];
    const parsed = loanPaymentSchema.safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`).join('; ');
      throw new CorruptItemError(`${this.table} item (PK=${item.PK?.S ?? '?'}, SK=${item.SK?.S ?? '?'}) is corrupt: ${issues}`);
    }
    return parsed.data;
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}
