import type { AchRateCounts } from '../../../domain/ach-return-rates.js';
import type { DunningState } from '../../../domain/dunning.js';
import type { BillingFailureFields } from '../../../domain/ladder.js';
import type { AttemptRead, BillingTransaction } from '../../../domain/ports/billing-ledger.js';
import type { BillingStore } from '../../../domain/ports/billing-store.js';
import type { Page, PageRequest } from '../../../domain/ports/page.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../../../domain/records.js';
import { DynamoBillingGauges } from './gauges.js';
import { DynamoBillingIndexes } from './index-reader.js';
import { DynamoBillingLedger } from './ledger.js';
import { billingTables, type DynamoBillingStoreOptions } from './tables.js';

export type { DynamoBillingStoreOptions } from './tables.js';

/** The ledger, the indexes and the gauges of billing-activity on one client: `AppDeps.billing`. */
export class DynamoBillingStore implements BillingStore {
  readonly ledger: DynamoBillingLedger;
  readonly indexes: DynamoBillingIndexes;
  readonly gauges: DynamoBillingGauges;

  constructor(options: DynamoBillingStoreOptions) {
    const tables = billingTables(options);
    this.ledger = new DynamoBillingLedger(tables);
    this.indexes = new DynamoBillingIndexes(tables);
    this.gauges = new DynamoBillingGauges(tables);
  }

  get(key: BillingKey): Promise<BillingRecord | undefined> {
    return this.ledger.get(key);
  }
  getForAttempt(key: BillingKey): Promise<AttemptRead> {
    return this.ledger.getForAttempt(key);
  }
  listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.ledger.listByUser(userId, page);
  }
  locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]> {
    return this.ledger.locateSubscription(subscriptionId);
  }
  findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined> {
    return this.ledger.findBySubscriptionId(subscriptionId);
  }
  history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>> {
    return this.ledger.history(subscriptionId, page);
  }
  commit(tx: BillingTransaction): Promise<{ created: boolean }> {
    return this.ledger.commit(tx);
  }
  addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void> {
    return this.ledger.addAll(records, history);
  }
  recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean> {
    return this.ledger.recordBillingFailure(read, after, history);
  }

  listFailing(page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.indexes.listFailing(page);
  }
  listExceptions(page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.indexes.listExceptions(page);
  }
  listHeld(page?: PageRequest): Promise<Page<BillingRecord>> {
    return this.indexes.listHeld(page);
  }
  listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>> {
    return this.indexes.listDunning(state, page, nextAttemptBefore);
  }
  streamDue(dueAtOrBefore: string, options?: { readonly pageSize?: number; readonly queryLimit?: number }): AsyncGenerator<readonly BillingRecord[], void, undefined> {
    return this.indexes.streamDue(dueAtOrBefore, options);
  }

  countFailing(): Promise<{ retrying: number; parked: number }> {
    return this.gauges.countFailing();
  }
  countDunning(): Promise<Record<DunningState, number>> {
    return this.gauges.countDunning();
  }
  achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts> {
    return this.gauges.achRateCounts(fromDay, toDay);
  }
}
