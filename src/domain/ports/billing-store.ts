import type { AchRateCounts, AchRateTally } from '../ach-return-rates.js';
import type { DunningState } from '../dunning.js';
import type { BillingFailureFields } from '../ladder.js';
import type { BillingKey, BillingRecord, BillingStatus, HistoryRow } from '../records.js';
import type { Page, PageRequest } from './page.js';

export type BillingWrite =
  /**
   * Put with `attribute_not_exists`: a new period. With `displace`, a key held by a record of another
   * chain (chain.ts `sameChain`) moves the period to the next free instant (`nextFreeInstant`, its
   * history rows with it) instead of failing; a record of the same chain there is AlreadyExistsError.
   */
  | { readonly kind: 'create'; readonly record: BillingRecord; readonly displace?: boolean }
  /**
   * Full put of `record` conditioned on `version = read.version`, `read` being the record as the
   * writer read it (same key; `record.version` is read.version + 1). The store derives from both
   * what the write changes beside the item (the gauge counters).
   */
  | { readonly kind: 'update'; readonly read: BillingRecord; readonly record: BillingRecord }
  /** Delete of the record as read, conditioned on `version = read.version` (due-date change). */
  | { readonly kind: 'delete'; readonly read: BillingRecord };

/** The user lock released inside a commit: a conditional Delete on its `record_version_number`. */
export interface LockRelease {
  readonly key: string;
  readonly recordVersionNumber: string;
}

/** Everything one change writes, committed as one TransactWriteItems. */
export interface BillingTransaction {
  readonly writes: readonly BillingWrite[];
  /** Audit rows, each put with `attribute_not_exists`: never overwritten. */
  readonly history: readonly HistoryRow[];
  /**
   * The next period: created with its history row unless a record of the same chain (chain.ts) is at
   * that key, the period already (then the rest commits alone). A record of another chain there
   * moves it to the next free instant instead (a closed chain's record never ends this one). The
   * probing costs a read and a transaction per collision, and nothing on the normal path.
   */
  readonly createIfAbsent?: { readonly record: BillingRecord; readonly history: HistoryRow };
  /**
   * Release the user's lock in the same transaction (one request fewer per attempt). A lock that was
   * lost or taken over fails the whole transaction (ConcurrentModificationError): nothing lands.
   */
  readonly releaseLock?: LockRelease;
  /** An ACH debit originated or returned by this change: added to its day's return-rate counters in the same transaction (DESIGN 4.1). */
  readonly achRates?: AchRateTally;
}

export interface BillingStore {
  /** Strongly consistent read of one period. */
  get(key: BillingKey): Promise<BillingRecord | undefined>;
  findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined>;
  /**
   * The keys the subscription_id-index shows for a subscription (one request, no item read).
   * Eventually consistent: read a key strongly consistent and check its subscription_id before acting.
   */
  locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]>;
  /** Newest billing_date first. */
  listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>>;
  /** Records in `status` with billing_date <= dueAtOrBefore, across every status shard. */
  listByStatus(status: BillingStatus, dueAtOrBefore: string, page?: PageRequest): Promise<Page<BillingRecord>>;
  /**
   * Records whose saved billing failure is live (retrying or parked), oldest failure first, across
   * every shard of the sparse failing index. Eventually consistent: callers re-check the predicate.
   */
  listFailing(page?: PageRequest): Promise<Page<BillingRecord>>;
  /**
   * Live billing failures by state (for the gauge: retrying = those with a next attempt, parked =
   * the rest), as the failing index holds them, from counters the writes keep: one read, whatever
   * the index holds. Eventually consistent.
   */
  countFailing(): Promise<{ retrying: number; parked: number }>;
  /**
   * Records carrying an ACH or card exception (DESIGN 4.1, 6.1), oldest exception first, across
   * every shard of the sparse exceptions index. Eventually consistent.
   */
  listExceptions(page?: PageRequest): Promise<Page<BillingRecord>>;
  /**
   * Every record whose next eligible instant (due-work.ts `nextEligibleAt`) is at or before
   * `dueAtOrBefore`, whatever its status, oldest first across every shard of the sparse due-index,
   * in pages of at most `pageSize`. Parked, exhausted and held records are never returned. Each
   * page is read when it is asked for (the first one reads every shard at once); a consumer that
   * stops asking reads nothing more. Eventually consistent: trust each record's own status.
   */
  streamDue(dueAtOrBefore: string, options?: { readonly pageSize?: number }): AsyncIterable<readonly BillingRecord[]>;
  /**
   * Declined periods stored in dunning `state` (retrying: soonest next attempt first), from the
   * dunning index; with `nextAttemptBefore`, only those whose stored next attempt is earlier (where a
   * retrying cycle whose window is over, not yet recorded exhausted, is found). Eventually consistent.
   */
  listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>>;
  /** How many declined periods are in each dunning state (the collections-job gauge), from counters the writes keep: one read. */
  countDunning(): Promise<Record<DunningState, number>>;
  /** The subscriptions' ACH return-rate counters summed over the UTC days `fromDay`..`toDay` (both included). */
  achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts>;
  /** Audit rows of one subscription, newest first. */
  history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>>;
  /**
   * One TransactWriteItems. Throws ConcurrentModificationError when a version condition fails,
   * AlreadyExistsError when a `create` exists, TransientError on throttling/transaction conflicts.
   * Answers whether `createIfAbsent` was created.
   */
  commit(tx: BillingTransaction): Promise<{ created: boolean }>;
  /**
   * Creates many new records (each conditional on its absence) with their history rows, matched
   * to their record by user_id + billing_date. Written in TransactWriteItems of at most 100 items;
   * a record and its history rows always share one, so each chunk is atomic, the call as a whole
   * is not (chunks commit in order; a failed chunk throws and the later ones are not written).
   * Every record needs at least one history row. AlreadyExistsError when a record exists.
   */
  addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void>;
  /**
   * RecordBillingFailure (DESIGN 5): the update proves the due key and the failure count the
   * attempt read (and its version), writes the five attributes and the audit row in one
   * transaction. False when the record has moved on: the failure does not land.
   */
  recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean>;
}
