import type { AchRateTally } from '../ach-return-rates.js';
import type { InstrumentsItem, InstrumentWrite } from '../instruments/instrument.js';
import type { BillingFailureFields } from '../ladder.js';
import type { MoneyMovement } from '../money-movements.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../records.js';
import type { Page, PageRequest } from './page.js';

export type BillingWrite =
  /** Put conditioned on absence; with `displace`, another chain's record there moves it on (chain.ts). */
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
  /** The next period: skipped when its chain's record holds the key, moved on past another chain's. */
  readonly createIfAbsent?: { readonly record: BillingRecord; readonly history: HistoryRow };
  /** The user's lock, released in the same transaction: a lock lost meanwhile fails it all. */
  readonly releaseLock?: LockRelease;
  /** An ACH debit originated or returned by this change, added to its day's return-rate counters (DESIGN 4.1). */
  readonly achRates?: AchRateTally;
  /** The user's instruments item changed with it (DESIGN 3.2): holds, presentments, re-presentment counts. */
  readonly instruments?: InstrumentWrite;
  /** The money this change moved or learned of, appended to money-movements in the same transaction (DESIGN 14). */
  readonly movements?: readonly MoneyMovement[];
}

/** What an attempt reads in one consistent request: the period and the user's instruments. */
export interface AttemptRead {
  readonly record: BillingRecord | undefined;
  readonly instruments: InstrumentsItem;
}

/** The billing periods and their audit rows as a use case reads and changes them. */
export interface BillingLedger {
  /** Strongly consistent read of one period. */
  get(key: BillingKey): Promise<BillingRecord | undefined>;
  /** The period and the user's instruments item in one consistent TransactGetItems (retried on a conflict). */
  getForAttempt(key: BillingKey): Promise<AttemptRead>;
  /** A user's periods, newest billing_date first (strongly consistent). */
  listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>>;
  /** Keys from the subscription_id-index: eventually consistent, so read the key and check its subscription_id. */
  locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]>;
  findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined>;
  /** A subscription's audit rows, newest first. */
  history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>>;
  /** One transaction: ConcurrentModificationError on a stale version, AlreadyExistsError on a taken `create`. */
  commit(tx: BillingTransaction): Promise<{ created: boolean }>;
  /** New records with their history rows, in chunks of one transaction each: a chunk is atomic, the call is not. */
  addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void>;
  /** RecordBillingFailure (DESIGN 5): false when the record moved on from what the attempt read. */
  recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean>;
}
