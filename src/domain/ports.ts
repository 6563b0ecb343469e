import type { AchRateCounts, AchRateTally, ReturnRate } from './ach-return-rates.js';
import type { ReturnRateClass } from './nacha.js';
import type { DunningState } from './dunning.js';
import type { DeclineDetails } from './declines.js';
import type { BillingFailureFields } from './ladder.js';
import type { RetryItemResult, RetryRun, RetryRunItem } from './retry-runs.js';
import type { BillingKey, BillingRecord, BillingStatus, HistoryRow, PaymentMethod, StripeEventClaim } from './records.js';
import type { LoanPayment, LoanPaymentHistoryRow, LoanPaymentStatus } from './loan-payments.js';

/** Time comes from here, never from `new Date()` in the domain (the local runtime simulates it). */
export interface Clock {
  now(): Date;
}

export interface Page<T> {
  readonly items: T[];
  /** Opaque continuation token, or null on the last page. */
  readonly next: string | null;
}

export interface PageRequest {
  readonly limit?: number;
  readonly cursor?: string | null;
}

/* ---------------- locks (DESIGN 2.6) ---------------- */

export interface LockLease {
  readonly key: string;
  readonly owner_name: string;
  readonly record_version_number: string;
  readonly lease_duration_ms: number;
  /** epoch ms */
  readonly lease_expires_at: number;
  /** What the holder is doing, when it is one period's attempt (its billing_date): read by the next holder after a takeover. */
  readonly purpose?: string;
  /**
   * Epoch ms: since when this lease's holder may have presented a key without checking the account
   * now. Its acquisition; a holder that resends a dead holder's key past the account gate carries
   * the dead lease's instant instead (collect.ts). Absent on leases written before it existed.
   */
  readonly held_since?: number;
}

export interface LockStore {
  /**
   * One conditional put: `attribute_not_exists(PartitionKey) OR lease_expires_at < :now`. False when held.
   * When it replaced an expired lease (its holder died or lost its release), `onTakeover` gets that lease.
   */
  tryAcquire(lease: LockLease, nowMs: number, onTakeover?: (previous: LockLease) => void): Promise<boolean>;
  /** Conditional on the previous record_version_number. False when the lease was lost. */
  renew(key: string, previousVersion: string, next: LockLease): Promise<boolean>;
  /** Conditional on record_version_number; releasing a lock someone else now holds is a no-op. */
  release(key: string, recordVersionNumber: string): Promise<void>;
}

/* ---------------- billing-activity + history (DESIGN 2.1, 2.5) ---------------- */

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

/* ---------------- processors ---------------- */

export type PaymentReference =
  | { readonly kind: 'subscription'; readonly user_id: string; readonly billing_date: string; readonly subscription_id: string }
  | { readonly kind: 'loan_payment'; readonly user_id: string; readonly loan_id: string; readonly payment_id: string };

export interface PaymentRequest {
  readonly idempotency_key: string;
  readonly user_id: string;
  readonly amount_cents: number;
  readonly rail: PaymentMethod;
  readonly account_last_four?: string | undefined;
  readonly reference: PaymentReference;
  /**
   * NACHA: a re-presented R01/R09 entry is flagged as reinitiated with the company entry description
   * `RETRY PYMT` (DESIGN 4.1). Absent on an original entry.
   */
  readonly reinitiated?: true;
  readonly entry_description?: typeof REPRESENTMENT_ENTRY_DESCRIPTION;
}

/** The company entry description NACHA requires on a re-presented entry. */
export const REPRESENTMENT_ENTRY_DESCRIPTION = 'RETRY PYMT';

export type PaymentResult =
  /** Pinless or card: the money is collected. */
  | { readonly outcome: 'approved'; readonly confirmation_id: string }
  /** ACH: the debit was accepted; the ach-handler settles or returns it later. */
  | { readonly outcome: 'submitted'; readonly confirmation_id: string }
  /**
   * A decline: the customer's bank said no. `message` is a curated, customer-safe sentence; the
   * codes (DeclineDetails: decline, advice and network codes, the card's network) feed the dunning
   * classification (DESIGN 5b).
   */
  | ({ readonly outcome: 'declined'; readonly confirmation_id?: string; readonly message: string } & DeclineDetails);

/**
 * Submits a payment. The same idempotency key always returns the same result and never charges
 * twice. Throws ProcessorError for errors that are not declines and TransientError for outages
 * worth retrying.
 */
export interface PaymentProcessor {
  submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult>;
}

/* ---------------- decision inputs ---------------- */

export type AccountStatus = 'active' | 'inactive' | 'banned' | 'closed';

/** What the gate knows about a user at decision time. Absent fields were not observed. */
export interface AccountSnapshot {
  readonly status: AccountStatus;
  /** When the account entered its current status (an instant), if the directory knows. */
  readonly status_since?: string;
  readonly institution_id?: string;
  readonly available_balance_cents?: number;
  readonly current_balance_cents?: number;
  readonly debit_card_valid?: boolean;
  readonly blocklisted?: boolean;
  readonly institution_unreliable?: boolean;
  /** Scheduled path only: the risk model overrides a failed balance check. */
  readonly ml_override?: boolean;
}

export interface AccountDirectory {
  getAccount(userId: string, signal?: AbortSignal): Promise<AccountSnapshot>;
}

/* ---------------- loan payments (DESIGN 2.7) ---------------- */

/** Who changed a loan payment and why: the audit row's `actor` and `reason` (DESIGN 2.7). */
export interface LoanPaymentAudit {
  /** The JWT `sub` of the caller, or `system:<function>` for automatic changes. */
  readonly actor: string;
  readonly reason?: string | undefined;
}

/** A RETRY payment the planner found due: its key only (the attempt reads the item itself). */
export interface DueLoanPaymentRetry {
  readonly user_id: string;
  readonly loan_id: string;
  readonly payment_id: string;
  readonly next_attempt_at: string;
}

export interface PaymentsStore {
  get(userId: string, loanId: string, paymentId: string): Promise<LoanPayment | undefined>;
  /** Newest first (`loc_created_date`, then payment id). */
  listByLoan(userId: string, loanId: string, page?: PageRequest): Promise<Page<LoanPayment>>;
  listByLoanAndStatus(userId: string, loanId: string, status: LoanPaymentStatus, page?: PageRequest): Promise<Page<LoanPayment>>;
  /** Across all users and every GSI2 shard. */
  listByStatus(status: LoanPaymentStatus, page?: PageRequest): Promise<Page<LoanPayment>>;
  /**
   * RETRY payments whose next attempt is at or before `dueAtOrBefore`, across every GSI2 shard, oldest
   * due first, in pages of at most `pageSize` read as they are asked for; never reads a payment whose
   * next attempt is later (planning cost grows with due work).
   */
  streamDueRetries(dueAtOrBefore: string, options?: { readonly pageSize?: number }): AsyncIterable<readonly DueLoanPaymentRetry[]>;
  findByConfirmationId(userId: string, confirmationId: string): Promise<LoanPayment | undefined>;
  /** The payment's audit rows, newest first. */
  listHistory(userId: string, loanId: string, paymentId: string, page?: PageRequest): Promise<Page<LoanPaymentHistoryRow>>;
  /** Put with attribute_not_exists and its audit row, in one transaction; AlreadyExistsError when the payment id is taken. */
  create(payment: LoanPayment, audit: LoanPaymentAudit): Promise<void>;
  /**
   * Full put conditioned on version = expectedVersion and its audit row, in one transaction; ConcurrentModificationError otherwise.
   * `achRates`: an ACH debit originated or returned by this change, added to its day's counters in the same transaction.
   */
  update(payment: LoanPayment, expectedVersion: number, audit: LoanPaymentAudit, achRates?: AchRateTally): Promise<void>;
  /** The loan payments' ACH return-rate counters summed over the UTC days `fromDay`..`toDay` (both included). */
  achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts>;
}

/* ---------------- stripe-events (DESIGN 2.8) ---------------- */

export type ClaimResult =
  | { readonly kind: 'claimed'; readonly claim_token: string }
  | { readonly kind: 'processed' }
  | { readonly kind: 'in_progress' };

/** What recording an event without a claim found: recorded now, processed earlier, or claimed by a live delivery. */
export type RecordResult = { readonly kind: 'recorded' } | { readonly kind: 'processed' } | { readonly kind: 'in_progress' };

export interface StripeEventStore {
  /** Claims an event for processing under a lease; an expired lease can be taken over. */
  claim(eventId: string, nowMs: number, leaseMs: number): Promise<ClaimResult>;
  /**
   * Records an event processed in one conditional write, without a claim: for an event whose
   * processing has no effect. Refused as a claim is (processed earlier, or a live claim elsewhere);
   * an expired claim is overwritten.
   */
  recordProcessed(eventId: string, eventType: string, nowMs: number): Promise<RecordResult>;
  /** Marks processed, conditional on our claim token. False when the claim was lost. */
  markProcessed(eventId: string, claimToken: string, eventType: string, nowMs: number): Promise<boolean>;
  /** Releases only our own claim (conditional on claim_token). */
  release(eventId: string, claimToken: string): Promise<void>;
  get(eventId: string): Promise<StripeEventClaim | undefined>;
}

/* ---------------- queue and metrics ---------------- */

/** A message for a queue (SQS in AWS). */
export interface QueueMessage {
  readonly id: string;
  readonly body: string;
}

/** Sends messages, 10 per call, retrying unprocessed entries; throws if some could not be sent. */
export interface QueuePort {
  sendBatch(messages: readonly QueueMessage[]): Promise<void>;
}

/** The collections-job's gauges (CloudWatch embedded metrics in AWS). */
export interface MetricsPort {
  failingSubscriptions(counts: { retrying: number; parked: number }): void;
  /** Declined periods by dunning state (DESIGN 5b `billing_dunning_subscriptions{state}`). */
  dunningSubscriptions(counts: { retrying: number; exhausted: number }): void;
  /** ACH return rates over the trailing 60 days by NACHA class (DESIGN 4.1 `billing_ach_return_rate{class}`). */
  achReturnRates(rates: Readonly<Record<ReturnRateClass, ReturnRate>>): void;
}

/* ---------------- bulk retry runs (DESIGN 8) ---------------- */

export type RetryRunClaim =
  | { readonly kind: 'created' }
  /** The key names an existing run; `sameRequest` says whether its request matches this one. */
  | { readonly kind: 'exists'; readonly run: RetryRun; readonly sameRequest: boolean };

export type RetryItemClaim =
  | { readonly kind: 'claimed'; readonly item: RetryRunItem; /** false when this claim continues an earlier one (redelivery, takeover) */ readonly fresh: boolean }
  | { readonly kind: 'finished'; readonly item: RetryRunItem }
  /** Another message holds a live claim on the item. */
  | { readonly kind: 'busy' }
  | { readonly kind: 'missing' };

/** Runs, their items and the Idempotency-Key that names each run. */
export interface RetryRunStore {
  /** The run named by this caller's Idempotency-Key, if any. */
  findByKey(actor: string, idempotencyKey: string): Promise<RetryRun | undefined>;
  get(runId: string): Promise<RetryRun | undefined>;
  /** Key and run header in one transaction, each conditional on its absence. */
  claim(actor: string, idempotencyKey: string, fingerprint: string, run: RetryRun): Promise<RetryRunClaim>;
  /** Takes over a stale creation claim; false when someone else holds or took it. */
  takeOver(runId: string, previousToken: string, token: string, at: string): Promise<boolean>;
  /** Writes items that are absent (each conditional on absence); existing ones are left as they are. */
  putItems(items: readonly RetryRunItem[]): Promise<void>;
  /** `selecting` → `selected` with the item count, conditional on the claim token. False when the claim was lost. */
  markSelected(runId: string, token: string, selected: number): Promise<boolean>;
  markEnqueued(runId: string): Promise<void>;
  /** Items in subscription id order, paged. */
  listItems(runId: string, page?: PageRequest): Promise<Page<RetryRunItem>>;
  /**
   * pending → processing under `claimId` (the queue message id), one conditional update; a claim by
   * the same id (a redelivery) or older than `staleBefore` is taken again.
   */
  claimItem(runId: string, subscriptionId: string, claimId: string, at: string, staleBefore: string): Promise<RetryItemClaim>;
  /** processing → result and the run's count, one transaction conditional on the claim. False when the claim was lost. */
  finishItem(runId: string, subscriptionId: string, claimId: string, result: RetryItemResult, detail: string | undefined, at: string): Promise<boolean>;
}
