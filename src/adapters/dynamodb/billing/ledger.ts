import { GetItemCommand, QueryCommand, TransactGetItemsCommand } from '@aws-sdk/client-dynamodb';
import type { BillingFailureFields } from '../../../domain/ladder.js';
import type { AttemptRead, BillingLedger, BillingTransaction } from '../../../domain/ports/billing-ledger.js';
import { cancellationCodes, InvalidTransactionError } from '../errors.js';
import { instrumentsFromItem, instrumentsKey } from '../instruments/item.js';
import type { Page, PageRequest } from '../../../domain/ports/page.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../../../domain/records.js';
import { historyFromItem, primaryKey, recordFromItem } from '../billing-item.js';
import { decodeStartKey, encodeStartKey, pageLimit } from '../pagination.js';
import { BILLING_ACTIVITY_INDEXES } from '../table-definitions.js';
import { addAll } from './add-all.js';
import { commit } from './commit.js';
import { recordBillingFailure } from './failure-update.js';
import { send, type BillingTables } from './tables.js';

/**
 * billing-activity and its history (DESIGN 2.1, 2.5) as the use cases read and change them: every
 * write conditional (absence or `version`), with its audit rows in the same transaction.
 */
export class DynamoBillingLedger implements BillingLedger {
  constructor(private readonly t: BillingTables) {}

  async get(key: BillingKey): Promise<BillingRecord | undefined> {
    const out = await send('billing.get', () =>
      this.t.client.send(new GetItemCommand({ TableName: this.t.table, Key: primaryKey(key), ConsistentRead: true })),
    );
    return out.Item ? recordFromItem(out.Item, this.t.table) : undefined;
  }

  async getForAttempt(key: BillingKey): Promise<AttemptRead> {
    const instrumentsTable = this.t.instrumentsTable;
    if (!instrumentsTable) throw new InvalidTransactionError('getForAttempt needs the instruments table');
    const command = new TransactGetItemsCommand({
      TransactItems: [
        { Get: { TableName: this.t.table, Key: primaryKey(key) } },
        { Get: { TableName: instrumentsTable, Key: instrumentsKey(key.user_id) } },
      ],
    });
    for (let retry = 0; ; retry++) {
      try {
        const out = await send('billing.getForAttempt', () => this.t.client.send(command));
        const [period, instruments] = out.Responses ?? [];
        return {
          record: period?.Item ? recordFromItem(period.Item, this.t.table) : undefined,
          instruments: instrumentsFromItem(instruments?.Item, key.user_id, instrumentsTable),
        };
      } catch (error) {
        // A transaction writing either item meanwhile cancels the read: read again.
        if (retry >= 3 || !cancellationCodes(error)?.includes('TransactionConflict')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** retry));
      }
    }
  }

  async listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>> {
    const out = await send('billing.listByUser', () =>
      this.t.client.send(
        new QueryCommand({
          TableName: this.t.table,
          KeyConditionExpression: 'user_id = :u',
          ExpressionAttributeValues: { ':u': { S: userId } },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['user_id', 'billing_date'], { user_id: userId }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map((item) => recordFromItem(item, this.t.table)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  async locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]> {
    const out = await send('billing.locateSubscription', () =>
      this.t.client.send(
        new QueryCommand({
          TableName: this.t.table,
          IndexName: BILLING_ACTIVITY_INDEXES.bySubscriptionId,
          KeyConditionExpression: 'subscription_id = :s',
          ExpressionAttributeValues: { ':s': { S: subscriptionId } },
          ProjectionExpression: 'user_id, billing_date',
        }),
      ),
    );
    return (out.Items ?? []).map((item) => ({ user_id: item.user_id?.S ?? '', billing_date: item.billing_date?.S ?? '' }));
  }

  /** The index only finds keys; the record comes from a consistent get. */
  async findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined> {
    const keys = await this.locateSubscription(subscriptionId);
    // A due-date change keeps the subscription id on a new key; the index may still show the old one.
    const candidates = await Promise.all(keys.map((key) => this.get(key)));
    const current = candidates.filter((r): r is BillingRecord => r !== undefined && r.subscription_id === subscriptionId);
    return current.sort((a, b) => (a.last_run_date < b.last_run_date ? 1 : -1))[0];
  }

  /** From the history table's subscription_id-index. */
  async history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>> {
    const out = await send('billing.history', () =>
      this.t.client.send(
        new QueryCommand({
          TableName: this.t.historyTable,
          IndexName: BILLING_ACTIVITY_INDEXES.bySubscriptionId,
          KeyConditionExpression: 'subscription_id = :s',
          ExpressionAttributeValues: { ':s': { S: subscriptionId } },
          ScanIndexForward: false,
          Limit: pageLimit(page),
          ExclusiveStartKey: decodeStartKey(page?.cursor, ['subscription_id', 'last_run_date', 'user_id'], { subscription_id: subscriptionId }),
        }),
      ),
    );
    return { items: (out.Items ?? []).map((item) => historyFromItem(item, this.t.historyTable)), next: encodeStartKey(out.LastEvaluatedKey) };
  }

  commit(tx: BillingTransaction): Promise<{ created: boolean }> {
    return commit(this.t, tx);
  }

  addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void> {
    return addAll(this.t, records, history);
  }

  recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean> {
    return recordBillingFailure(this.t, read, after, history);
  }
}
