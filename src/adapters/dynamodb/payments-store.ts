import { GetItemCommand, QueryCommand, TransactGetItemsCommand, TransactWriteItemsCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parseCold } from '../../domain/lazy-schema.js';
import { isEmptyInstrumentWrite, type InstrumentWrite } from '../../domain/instruments/instrument.js';
import type { DueLoanPaymentRetry, LoanAttemptRead, LoanPaymentAudit, PaymentsStore } from '../../domain/ports/loan-payments.js';
import type { Page, PageRequest } from '../../domain/ports/page.js';
import { loanPaymentHistoryRowSchema, loanPaymentSchema, type LoanPayment, type LoanPaymentHistoryRow, type LoanPaymentStatus } from '../../domain/loan-payments.js';
import type { AchRateCounts, AchRateTally } from '../../domain/ach-return-rates.js';
import { counterUpdate, readCounters, type CounterKeyNames } from './ach-rate-counters.js';
import { retryingConflicts, retryingReadConflicts } from './conflict-retry.js';
import { marshallItem } from './attribute-codec.js';
import { InvalidTransactionError, toDomainError } from './errors.js';
import { instrumentsFromItem, instrumentsKey, instrumentsTransactItem } from './instruments/item.js';
import { historyPrefix, historySortKey, paymentFromItem, paymentHistoryFromItem, paymentKeys } from './payment-item.js';
import { DEFAULT_PAGE_LIMIT, decodeStartKey, encodeStartKey, listAcrossShards, pageLimit, streamAcrossShards } from './pagination.js';
import { assertShardCount } from './sharding.js';
import type { MoneyMovement } from '../../domain/money-movements.js';
import { movementPut } from './money-movements.js';
import { PAYMENTS_INDEXES } from './table-definitions.js';

export { paymentKeys, retrySortKey, historySortKey, type PaymentKeys } from './payment-item.js';

export const DEFAULT_PAYMENT_SHARD_COUNT = 8;

/** The ACH return-rate counters of loan payments live here under PK/SK (ach-rate-counters.ts). */
const COUNTER_KEYS: CounterKeyNames = { partition: 'PK', sort: 'SK' };

export interface DynamoPaymentsStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Shards of GSI2 (DESIGN 2.7); default 8. */
  readonly paymentShardCount?: number;
  /** money-movements: for an update that carries movement rows (DESIGN 14). */
  readonly movementsTableName?: string;
  /** instruments: read with the payment by an attempt and written in its transaction (DESIGN 3.2). */
  readonly instrumentsTableName?: string;
}

/**
 * Loan payments (DESIGN 2.7). Writes are full puts, conditional on absence (create) or on
 * `version` (update), so a status change rewrites the GSI keys with the item, each in one
 * TransactWriteItems with the change's audit row (an item under the same PK, see historySortKey).
 */
export class DynamoPaymentsStore implements PaymentsStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly shardCount: number;
  private readonly movementsTable: string | undefined;
  private readonly instrumentsTable: string | undefined;

  constructor(options: DynamoPaymentsStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.movementsTable = options.movementsTableName;
    this.instrumentsTable = options.instrumentsTableName;
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
    return out.Item ? paymentFromItem(out.Item, this.table) : undefined;
  }

  async getForAttempt(userId: string, loanId: string, paymentId: string): Promise<LoanAttemptRead> {
    const instrumentsTable = this.instrumentsTable;
    if (!instrumentsTable) throw new InvalidTransactionError('payments.getForAttempt needs the instruments table');
    const command = new TransactGetItemsCommand({
      TransactItems: [
        { Get: { TableName: this.table, Key: { PK: { S: `USER#${userId}` }, SK: { S: `LOAN#${loanId}#PAYMENT#${paymentId}` } } } },
        { Get: { TableName: instrumentsTable, Key: instrumentsKey(userId) } },
      ],
    });
    const out = await retryingReadConflicts(() => this.send('payments.getForAttempt', () => this.client.send(command)));
    const [payment, instruments] = out.Responses ?? [];
    return {
      payment: payment?.Item ? paymentFromItem(payment.Item, this.table) : undefined,
      instruments: instrumentsFromItem(instruments?.Item, userId, instrumentsTable),
    };
  }

  /** Newest first by `loc_created_date` (GSI4; ties by payment id, descending). Eventually consistent, like every index. */
  async listByLoan(userId: string, loanId: string, page?: PageRequest): Promise<Page<LoanPayment>> {
    const out = await this.send('payments.listByLoan', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: PAYMENTS_INDEXES.byLoanCreated,
          KeyConditionExpression: 'GSI4PK = :pk',
          ExpressionAttributeValues: { ':pk': { S: `USER#${userId}#LOAN#${loanId}` } },
          ScanIndexForward: false,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['GSI4PK', 'GSI4SK', 'PK', 'SK'], { GSI4PK: `USER#${userId}#LOAN#${loanId}` }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map((item) => paymentFromItem(item, this.table)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  /** Newest first (the version orders the rows), strongly consistent. */
  async listHistory(userId: string, loanId: string, paymentId: string, page?: PageRequest): Promise<Page<LoanPaymentHistoryRow>> {
    const out = await this.send('payments.listHistory', () =>
      this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'PK = :pk AND begins_with(SK, :prefix)',
          ExpressionAttributeValues: { ':pk': { S: `USER#${userId}` }, ':prefix': { S: historyPrefix(loanId, paymentId) } },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['PK', 'SK'], { PK: `USER#${userId}` }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map((item) => paymentHistoryFromItem(item, this.table)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  /**
   * Every GSI2 shard, `STATUS#RETRY#AT#<next attempt>` up to the bound: only due payments are read,
   * each shard as one stream of large Queries (pagination.ts `streamAcrossShards`), merged oldest
   * due first (ties by payment id), in pages of `pageSize`. Keys only: a corrupt item is the
   * attempt's to report. `queryLimit` (items per Query) is for tests.
   */
  async *streamDueRetries(
    dueAtOrBefore: string,
    options: { readonly pageSize?: number; readonly queryLimit?: number } = {},
  ): AsyncGenerator<readonly DueLoanPaymentRetry[], void, undefined> {
    // '$' sorts right after '#': every payment due at exactly the bound is inside the range.
    const upper = `STATUS#RETRY#AT#${dueAtOrBefore}$`;
    const pages = streamAcrossShards({
      shardCount: this.shardCount,
      pageSize: options.pageSize ?? DEFAULT_PAGE_LIMIT,
      ...(options.queryLimit !== undefined ? { queryLimit: options.queryLimit } : {}),
      query: async (shard, startKey, limit) => {
        const out = await this.send('payments.streamDueRetries', () =>
          this.client.send(
            new QueryCommand({
              TableName: this.table,
              IndexName: PAYMENTS_INDEXES.byStatus,
              KeyConditionExpression: 'GSI2PK = :pk AND GSI2SK BETWEEN :from AND :to',
              ExpressionAttributeValues: { ':pk': { S: `PAYMENT#${shard}` }, ':from': { S: 'STATUS#RETRY#AT#' }, ':to': { S: upper } },
              ProjectionExpression: 'PK, SK, GSI2PK, GSI2SK, loc_user_id, loc_loan_id, loc_payment_id',
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
    for await (const items of pages) {
      const due: DueLoanPaymentRetry[] = [];
      for (const item of items) {
        const sortKey = item.GSI2SK?.S ?? '';
        const at = sortKey.slice('STATUS#RETRY#AT#'.length, sortKey.lastIndexOf('#PAYMENT#'));
        const user_id = item.loc_user_id?.S;
        const loan_id = item.loc_loan_id?.S;
        const payment_id = item.loc_payment_id?.S;
        // The key attributes are what the message needs; without them there is nothing to enqueue.
        if (!user_id || !loan_id || !payment_id) continue;
        due.push({ user_id, loan_id, payment_id, next_attempt_at: at });
      }
      yield due;
    }
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
    return { items: (out.Items ?? []).map((item) => paymentFromItem(item, this.table)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  /** Every GSI2 shard in parallel, merged in GSI2SK order (payment id; RETRY: next attempt, then id). Eventually consistent. */
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
              ExpressionAttributeValues: { ':pk': { S: `PAYMENT#${shard}` }, ':prefix': { S: `STATUS#${status}#` } },
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
    return { items: items.map((item) => paymentFromItem(item, this.table)), next };
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

  async create(payment: LoanPayment, audit: LoanPaymentAudit): Promise<void> {
    await this.write('payments.create', payment, audit, 'attribute_not_exists(PK)', undefined, 'exists');
  }

  async update(
    payment: LoanPayment,
    expectedVersion: number,
    audit: LoanPaymentAudit,
    achRates?: AchRateTally,
    movements: readonly MoneyMovement[] = [],
    instruments?: InstrumentWrite,
  ): Promise<void> {
    if (payment.version !== expectedVersion + 1) {
      throw new InvalidTransactionError(`payments.update: version must be ${expectedVersion + 1}`);
    }
    const presented = instruments && !isEmptyInstrumentWrite(instruments) ? instruments : undefined;
    await this.write('payments.update', payment, audit, 'version = :expected', { ':expected': { N: String(expectedVersion) } }, 'concurrent', achRates, movements, presented);
  }

  async achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts> {
    return readCounters(this.client, this.table, COUNTER_KEYS, fromDay, toDay, 'payments.achRateCounts');
  }

  /** The payment (full put, conditional) and its audit row (conditional on absence) in one TransactWriteItems. */
  private async write(
    operation: string,
    payment: LoanPayment,
    audit: LoanPaymentAudit,
    condition: string,
    values: Record<string, { N: string }> | undefined,
    meaning: 'exists' | 'concurrent',
    achRates?: AchRateTally,
    movements: readonly MoneyMovement[] = [],
    instruments?: InstrumentWrite,
  ): Promise<void> {
    if (movements.length > 0 && !this.movementsTable) throw new InvalidTransactionError(`${operation}: a movement needs the money-movements table`);
    if (instruments && !this.instrumentsTable) throw new InvalidTransactionError(`${operation}: an instruments write needs the instruments table`);
    const parsed = parseCold(loanPaymentSchema, payment);
    const item = marshallItem({ ...parsed, ...paymentKeys(parsed, this.shardCount) });
    const row: LoanPaymentHistoryRow = parseCold(loanPaymentHistoryRowSchema, {
      ...parsed,
      actor: audit.actor,
      ...(audit.reason !== undefined ? { reason: audit.reason } : {}),
      ...(audit.decided_by !== undefined ? { decided_by: audit.decided_by } : {}),
      recorded_at: parsed.loc_last_updated,
    });
    const historyItem = marshallItem({ ...row, PK: `USER#${parsed.loc_user_id}`, SK: historySortKey(parsed) });
    const label = `${this.table} payment (user=${parsed.loc_user_id}, loan=${parsed.loc_loan_id}, payment=${parsed.loc_payment_id})`;
    try {
      // Sent again when only a conflict on the ACH counter shard or the instruments item cancelled it: nothing was written.
      await retryingConflicts(() => this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.table,
                Item: item,
                ConditionExpression: condition,
                ...(values ? { ExpressionAttributeValues: values } : {}),
              },
            },
            { Put: { TableName: this.table, Item: historyItem, ConditionExpression: 'attribute_not_exists(PK)' } },
            ...(achRates ? [counterUpdate(this.table, COUNTER_KEYS, achRates)] : []),
            ...movements.map((m) => movementPut(this.movementsTable!, m)),
            // No condition on the instruments item: a return applied meanwhile never fails the payment's write.
            ...(instruments ? [instrumentsTransactItem(this.instrumentsTable!, instruments)] : []),
          ],
        }),
      ));
    } catch (error) {
      throw toDomainError(error, {
        operation,
        transactionItems: [
          { onConditionFailed: meaning, label },
          // Rows are keyed by version, so an existing row means another writer took this version.
          { onConditionFailed: 'concurrent', label: `${label} audit row v${parsed.version}` },
          ...(achRates ? [{ onConditionFailed: 'concurrent' as const, label: `${this.table} ACH return-rate counter (${achRates.day})` }] : []),
          ...movements.map((m) => ({ onConditionFailed: 'concurrent' as const, label: `money movement ${m.movement_id}` })),
          ...(instruments ? [{ onConditionFailed: 'concurrent' as const, label: `${this.instrumentsTable} item (user_id=${instruments.user_id})` }] : []),
        ],
      });
    }
  }

  private async send<T>(operation: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toDomainError(error, { operation });
    }
  }
}
