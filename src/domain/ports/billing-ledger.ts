import type { AchRateTally } from '../ach-return-rates.js';
import type { BillingFailureFields } from '../ladder.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../records.js';
import type { Page, PageRequest } from './page.js';

export type BillingWrite =
  /**
   * Put conditioned on absence. With `displace`, a key held by another chain's record (chain.ts)
   * moves the period to the next free instant, its history rows with it; the same chain there is AlreadyExistsError.
   */
  | { readonly kind: 'create'; readonly record: BillingRecord; readonly displace?: boolean }
  /** Full put conditioned on `version = read.version`; the store derives the gauge counters' change from both. */
  | { readonly kind: 'update'; readonly read: BillingRecord; readonly record: BillingRecord }
  /** Delete conditioned on `version = read.version` (due-date change). */
  | { readonly kind: 'delete'; readonly read: BillingRecord };

/** The user lock released inside a commit: a conditional Delete on its `record_version_number`. */
export interface LockRelease {
  readonly key: string;
  readonly recordVersionNumber: string;
}

/** Everything one change writes, committed as one transaction. */
export interface BillingTransaction {
  readonly writes: readonly BillingWrite[];
  /** Audit rows, each put conditioned on absence: never overwritten. */
  readonly history: readonly HistoryRow[];
  /**
   * The next period, created unless its chain's record already holds that key (then the rest commits
   * alone); another chain's record there moves it to the next free instant (chain.ts).
   */
  readonly createIfAbsent?: { readonly record: BillingRecord; readonly history: HistoryRow };
  /** The user's lock, released in the same transaction; a lock lost meanwhile fails it all (ConcurrentModificationError). */
  readonly releaseLock?: LockRelease;
  /** An ACH debit originated or returned by this change, added to its day's return-rate counters (DESIGN 4.1). */
  readonly achRates?: AchRateTally;
}

/**
 * The billing periods and their audit rows as a use case reads and changes them: reads by key and
 * versioned transactions. Small enough for an in-memory implementation (test/support/memory-ledger.ts).
 */
export interface BillingLedger {
  /** Strongly consistent read of one period. */
  get(key: BillingKey): Promise<BillingRecord | undefined>;
  /** A user's periods, newest billing_date first (strongly consistent). */
  listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>>;
  /** The keys the subscription_id-index shows (eventually consistent: read the key and check its subscription_id). */
  locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]>;
  /** The subscription's current record, read strongly consistent at the keys the index shows. */
  findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined>;
  /** A subscription's audit rows, newest first. */
  history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>>;
  /**
   * One transaction. ConcurrentModificationError when a version condition fails, AlreadyExistsError
   * when a `create` exists, TransientError on throttling; answers whether `createIfAbsent` was created.
   */
  commit(tx: BillingTransaction): Promise<{ created: boolean }>;
  /**
   * New records with their history rows (at least one each, matched by user_id + billing_date), in
   * transactions of at most 100 items that keep a record with its rows: each chunk is atomic, the call is not.
   */
  addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void>;
  /**
   * RecordBillingFailure (DESIGN 5): proves the due key, failure count and version the attempt read,
   * writes the failure and its audit row in one transaction. False when the record moved on.
   */
  recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean>;
}
