import { applyBillingEvent, applyIntentChange, historyRowOf, successorRecord, withFailure, type IdGenerator } from '../billing-record.js';
import { balanceDecision, GATE_CLOSED_ERROR, type BalanceObservation } from '../collectible.js';
import { dueGate, mayAdvancePause, type NotDueReason } from '../due-work.js';
import { deadHolderFoundAccountInactive, mayHoldUnrecordedCharge, repairsUnrecordedAttempt } from '../takeover.js';
import { achDebitTally, originatesAchDebit } from '../ach-return-rates.js';
import { CLEARED_DUNNING, EXHAUSTED_DUNNING, dunningAfterDecline, dunningLapsed, isInDunning } from '../dunning.js';
import { classifyDecline } from '../declines.js';
import { ConcurrentModificationError, InterruptedError, LockedError, ProcessorError } from '../errors.js';
import { intentOf, isCancelRequested } from '../intent.js';
import { allowlistedError, billingFailureView, classifyFailure, dueKey, nextFailure, type BillingFailureView, type FailureClass } from '../ladder.js';
import { representmentFlags } from '../ach-outcomes.js';
import { lockUser, releaseQuietly, type HeldLock } from '../lock.js';
import type { AccountDirectory, BillingStore, BillingTransaction, Clock, LockStore, PaymentProcessor, PaymentResult } from '../ports.js';
import type { BillingKey, BillingRecord, DecisionContext, Process } from '../records.js';
import { formatInstant } from '../time.js';

export { GATE_CLOSED_ERROR, type BalanceObservation } from '../collectible.js';
export type { NotDueReason } from '../due-work.js';

/** Everything the collection attempt talks to. */
export interface AttemptDeps {
  readonly clock: Clock;
  readonly locks: LockStore;
  readonly billing: BillingStore;
  readonly processor: PaymentProcessor;
  readonly accounts: AccountDirectory;
  readonly ids: IdGenerator;
  /** Full errors go here (the saved text is an allowlist). */
  readonly onError?: (error: unknown, context: { subscription_id?: string; user_id: string; class: FailureClass; recorded: boolean }) => void;
  /** A decline code the dunning table does not know (classified retry_later): logged, never an error. */
  readonly onUnknownDecline?: (context: { subscription_id: string; user_id: string; decline_code: string }) => void;
  readonly lockLeaseMs?: number;
  readonly lockHeartbeatMs?: number;
  /** See ACCOUNT_CLOCK_SKEW_MS (takeover.ts). */
  readonly accountClockSkewMs?: number;
}

export interface AttemptRequest {
  readonly key: BillingKey;
  readonly process: Process;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  /** The balance-webhook path's observation; its gate writes nothing when closed. */
  readonly balance?: BalanceObservation;
  readonly actor?: string | undefined;
  readonly reason?: string | undefined;
  /** The bulk retry run this attempt belongs to: written on its audit row as `run_id`. */
  readonly runId?: string | undefined;
  /** The invocation's deadline/abort. */
  readonly signal?: AbortSignal;
  /** The caller's Idempotency-Key (manual pay), stored on the record with the submission. */
  readonly requestKey?: string | undefined;
  /** A lock the caller already holds (retry-billing, memberships); otherwise the attempt takes it. */
  readonly heldLock?: HeldLock;
  /** With heldLock: the caller is done with it after this attempt, so the attempt's transaction releases it. */
  readonly releaseHeldLock?: boolean;
  /**
   * With heldLock: the record as the caller read it (strongly consistent) or last wrote it under that
   * lock, so the attempt does not read it again. Its version still conditions the attempt's write.
   */
  readonly read?: BillingRecord;
}

export type AttemptOutcome =
  | { readonly kind: 'collected'; readonly record: BillingRecord }
  | { readonly kind: 'submitted'; readonly record: BillingRecord }
  | { readonly kind: 'declined'; readonly record: BillingRecord }
  | { readonly kind: 'cancelled'; readonly record: BillingRecord }
  | { readonly kind: 'inactive'; readonly record: BillingRecord }
  | { readonly kind: 'pause_advanced'; readonly record: BillingRecord }
  | { readonly kind: 'gate_closed'; readonly record: BillingRecord }
  | { readonly kind: 'skipped_locked' }
  | { readonly kind: 'not_due'; readonly reason: NotDueReason; readonly record?: BillingRecord }
  | { readonly kind: 'failed_counted'; readonly failure: BillingFailureView; readonly record: BillingRecord }
  | { readonly kind: 'failed_uncounted'; readonly class: FailureClass | 'record_moved'; readonly record?: BillingRecord };

export type AttemptOutcomeKind = AttemptOutcome['kind'];

/**
 * The one collection attempt every path runs (DESIGN 3):
 * lock → read → gate → submit → one transaction → release.
 * Exactly-once rests on the idempotency key `{subscription_id}:{payment_attempts + 1}` and the
 * version-conditioned transaction, not on the lock.
 */
export async function runCollectionAttempt(deps: AttemptDeps, request: AttemptRequest): Promise<AttemptOutcome> {
  if (request.heldLock) return attemptUnderLock(deps, request, request.heldLock, request.releaseHeldLock === true);
  let lock: HeldLock;
  try {
    lock = await lockUser(deps, request.key.user_id, request.owner, request.key.billing_date);
  } catch (error) {
    if (error instanceof LockedError) return { kind: 'skipped_locked' };
    throw error;
  }
  try {
    return await attemptUnderLock(deps, request, lock, true);
  } finally {
    // A failed release is not the attempt's failure: the lease expires on its own in 60 s.
    await releaseQuietly(lock, (error) => deps.onError?.(error, { user_id: request.key.user_id, class: 'transient', recorded: false }));
  }
}

/** Commits one transaction of the attempt. */
type Commit = (tx: BillingTransaction) => Promise<unknown>;

async function attemptUnderLock(deps: AttemptDeps, request: AttemptRequest, lock: HeldLock, ownsLock: boolean): Promise<AttemptOutcome> {
  // The attempt's own lock is released inside its write (3 requests: lock, read, transaction); a
  // caller's lock (retry-billing, memberships) stays held for the caller's next step unless the
  // caller says it has none (releaseHeldLock).
  const commit: Commit = ownsLock
    ? (tx) => lock.releaseWith((releaseLock) => deps.billing.commit({ ...tx, releaseLock }))
    : (tx) => deps.billing.commit(tx);
  const read = request.heldLock && request.read ? request.read : await deps.billing.get(request.key);
  if (!read) return { kind: 'not_due', reason: 'not_found' };
  const now = deps.clock.now();
  const process = request.process;

  if (read.billing_status === 'PAUSED') {
    // Only the pause run (or an ad-hoc batch) advances a pause; a payment path never skips a period.
    return mayAdvancePause(process) ? advancePause(deps, commit, read, now, process) : { kind: 'not_due', reason: 'status', record: read };
  }
  const notDue = dueGate(read, now, process);
  if (notDue === 'exhausted' && dunningLapsed(read, now)) return recordLapsedDunning(deps, commit, read, now, request, lock.signal);
  if (notDue) return { kind: 'not_due', reason: notDue, record: read };

  // Set once the payment request is handed to the processor: a failure after it may leave a charge no record shows.
  let presented = false;
  try {
    if (isCancelRequested(read)) {
      const after = applyBillingEvent(read, 'CANCEL_COMPLETED', now, { process, updatedEvent: 'CANCEL_COMPLETED' });
      await commit({ writes: [{ kind: 'update', read, record: after }], history: [historyRowOf(after)] });
      return { kind: 'cancelled', record: after };
    }

    const account = await deps.accounts.getAccount(read.user_id, combinedSignal(request.signal, lock.signal));
    // An earlier attempt of this period presented its key while the account was active and its outcome
    // is not recorded (a saved failure after the call, or a dead holder naming this period): the same
    // key is resent before the account gate, so a ban cannot leave a charge the processor took on no
    // record (F11). Never a second charge: one key. A dead holder that took its lock after the account
    // left active found it so and presented nothing: its lease is no evidence here.
    const deadLease = deadHolderFoundAccountInactive(lock.takenOver, account, deps.accountClockSkewMs) ? undefined : lock.takenOver;
    if (account.status !== 'active' && !mayHoldUnrecordedCharge(read, deadLease)) {
      const after = applyBillingEvent(read, 'USER_NOT_ACTIVE', now, {
        process,
        updatedEvent: account.status === 'banned' ? 'USER_BANNED' : 'USER_NOT_ACTIVE',
      });
      await commit({ writes: [{ kind: 'update', read, record: after }], history: [historyRowOf(after)] });
      return { kind: 'inactive', record: after };
    }

    const decision = balanceDecision(read, account, process, request.balance);
    // A dead holder's attempt of this period may have reached the processor: resend its key first (F8).
    if (!decision.open && !repairsUnrecordedAttempt(lock.takenOver, read)) {
      if (request.balance) return { kind: 'gate_closed', record: read };
      // Scheduled/retry: decline-like, nothing presented to the bank, retried daily (a period in dunning
      // spends its slot). Like a decline it changes the due work, but nothing was submitted so the due
      // key cannot move: void the failure.
      const after = applyBillingEvent(read, 'DECLINED', now, {
        process,
        set: {
          payment_error: GATE_CLOSED_ERROR,
          last_attempt_date: formatInstant(now),
          first_attempt_date: read.first_attempt_date ?? formatInstant(now),
          ...VOIDED_FAILURE,
          ...(isInDunning(read)
            ? dunningAfterDecline(read, { classification: { decline_code: read.decline_code!, decline_class: read.decline_class!, known: true }, process, presented: false }, now)
            : {}),
        },
      });
      return await commitAttempt(deps, commit, read, after, decision.context, request, now, { kind: 'declined', record: after });
    }

    // Resending a dead holder's key past the account gate: if this holder dies too, the next one
    // must judge the account against the dead holder's instant, not this lock's (a lease written
    // before held_since existed is taken as held since ever). One conditional put, on this repair only.
    if (account.status !== 'active' && deadLease !== undefined) await lock.carryHeldSince(deadLease.held_since ?? 0);
    throwIfAborted(request.signal, lock.signal);
    presented = true;
    const result = await deps.processor.submit(
      {
        idempotency_key: `${read.subscription_id}:${read.payment_attempts + 1}`,
        user_id: read.user_id,
        amount_cents: read.amount_cents,
        rail: read.payment_method,
        account_last_four: read.account_last_four,
        reference: { kind: 'subscription', user_id: read.user_id, billing_date: read.billing_date, subscription_id: read.subscription_id },
        ...representmentFlags(read),
      },
      combinedSignal(request.signal, lock.signal),
    );
    const after = afterSubmission(deps, read, result, now, process);
    if (request.requestKey !== undefined) after.last_request_key = request.requestKey;
    const kind = result.outcome === 'approved' ? 'collected' : result.outcome === 'submitted' ? 'submitted' : 'declined';
    return await commitAttempt(deps, commit, read, after, decision.context, request, now, { kind, record: after });
  } catch (error) {
    return handleFailure(deps, read, error, request, now, combinedSignal(request.signal, lock.signal), presented);
  }
}

function afterSubmission(deps: AttemptDeps, read: BillingRecord, result: PaymentResult, now: Date, process: Process): BillingRecord {
  const at = formatInstant(now);
  const set: Partial<BillingRecord> = {
    payment_attempts: read.payment_attempts + 1,
    last_attempt_date: at,
    first_attempt_date: read.first_attempt_date ?? at,
  };
  if (result.confirmation_id !== undefined) set.transaction_id = result.confirmation_id;
  switch (result.outcome) {
    case 'approved':
      return applyBillingEvent(read, 'COLLECTED', now, { process, set: { ...set, payment_error: '', ...CLEARED_DUNNING } });
    case 'submitted':
      return applyBillingEvent(read, 'ACH_SUBMITTED', now, { process, set: { ...set, payment_error: '', ...CLEARED_DUNNING } });
    case 'declined': {
      const classification = classifyDecline(result);
      if (!classification.known) deps.onUnknownDecline?.({ subscription_id: read.subscription_id, user_id: read.user_id, decline_code: result.decline_code });
      const dunning = dunningAfterDecline(read, { classification, card_network: result.card_network, process, presented: true }, now);
      return applyBillingEvent(read, 'DECLINED', now, { process, set: { ...set, payment_error: result.message, ...dunning } });
    }
  }
}

/** The five failure attributes removed: a write that changes the due work without moving the due key. */
const VOIDED_FAILURE = {
  billing_failed_for: undefined,
  billing_failure_count: undefined,
  billing_failed_at: undefined,
  billing_next_attempt_at: undefined,
  billing_last_error: undefined,
} as const;

/** Step 5: one transaction with the audit row (decision context) and, after a first attempt, the next period. */
async function commitAttempt(
  deps: AttemptDeps,
  commit: Commit,
  read: BillingRecord,
  after: BillingRecord,
  context: DecisionContext,
  request: AttemptRequest,
  now: Date,
  outcome: AttemptOutcome,
): Promise<AttemptOutcome> {
  const history = historyRowOf(after, { ...context, actor: request.actor, reason: request.reason, run_id: request.runId });
  const leftPending = read.billing_status === 'PENDING';
  const next = leftPending ? successorRecord(after, now, deps.ids, after.last_run_date) : undefined;
  await commit({
    writes: [{ kind: 'update', read, record: after }],
    history: [history],
    ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}),
    // NACHA return rates (DESIGN 4.1): every ACH entry presented counts in its day's debits.
    ...(originatesAchDebit(read, after) ? { achRates: achDebitTally(now) } : {}),
  });
  return outcome;
}

/**
 * The automatic path that finds a dunning cycle's 14-day window over (DESIGN 5b) presents nothing
 * and records what the reads already show: exhausted, in one version-conditioned write with its
 * audit row (`DUNNING_EXHAUSTED`, published as `billing.dunning.exhausted`). The stored next attempt
 * goes, so the period leaves the due-index for the dunning index's EXHAUSTED partition; codes,
 * attempts, the ceilings' memory and any saved billing failure stay (a system failure is not a
 * decline). A failed write saves nothing: the next run finds the window over again.
 */
async function recordLapsedDunning(
  deps: AttemptDeps,
  commit: Commit,
  read: BillingRecord,
  now: Date,
  request: AttemptRequest,
  lockSignal: AbortSignal | undefined,
): Promise<AttemptOutcome> {
  const after = applyBillingEvent(read, 'DUNNING_EXHAUSTED', now, { process: request.process, set: { ...EXHAUSTED_DUNNING } });
  try {
    await commit({
      writes: [{ kind: 'update', read, record: after }],
      history: [historyRowOf(after, { actor: request.actor, reason: request.reason, run_id: request.runId })],
    });
  } catch (error) {
    const failureClass = error instanceof ConcurrentModificationError ? 'transient' : classifyFailure(error, combinedSignal(request.signal, lockSignal));
    deps.onError?.(error, { subscription_id: read.subscription_id, user_id: read.user_id, class: failureClass, recorded: false });
    return { kind: 'failed_uncounted', class: failureClass, record: read };
  }
  return { kind: 'not_due', reason: 'exhausted', record: after };
}

/**
 * A PAUSED record whose period has come: skip it and open the next one calendar month later, still
 * paused while months remain (the successor rule in intent.ts counts the months).
 */
async function advancePause(deps: AttemptDeps, commit: Commit, read: BillingRecord, now: Date, process: Process): Promise<AttemptOutcome> {
  if (Date.parse(read.billing_date) > now.getTime()) return { kind: 'not_due', reason: 'not_yet_due', record: read };
  // The skipped month is spent: the pause months move to the successor (paused_months is non-zero only while PAUSED).
  const { paused_months: _spent, ...rest } = intentOf(read);
  const after = applyIntentChange(read, 'PAUSE_SKIPPED', now, rest, { process, updatedEvent: 'PAUSE_SKIPPED' });
  const planned = successorRecord(read, now, deps.ids, after.last_run_date, { process });
  const next = planned && { ...planned, updated_event: planned.billing_status === 'PAUSED' ? ('PAUSED' as const) : ('RESUMED' as const) };
  await commit({
    writes: [{ kind: 'update', read, record: after }],
    history: [historyRowOf(after)],
    ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}),
  });
  return { kind: 'pause_advanced', record: after };
}

/** Classifies a failure; counted failures are saved on the record (RecordBillingFailure). */
async function handleFailure(
  deps: AttemptDeps,
  read: BillingRecord,
  error: unknown,
  request: AttemptRequest,
  now: Date,
  signal: AbortSignal | undefined,
  presented: boolean,
): Promise<AttemptOutcome> {
  // A record changed under us (stale lock holder, concurrent writer): the next attempt re-sends the same key.
  const failureClass = error instanceof ConcurrentModificationError ? 'transient' : classifyFailure(error, signal);
  if (failureClass !== 'counted') {
    deps.onError?.(error, { subscription_id: read.subscription_id, user_id: read.user_id, class: failureClass, recorded: false });
    return { kind: 'failed_uncounted', class: failureClass, record: read };
  }
  const saved = await saveFailure(deps, read, errorText(error), now, request, presented && !answeredWithoutCharge(error));
  deps.onError?.(error, { subscription_id: read.subscription_id, user_id: read.user_id, class: failureClass, recorded: !!saved });
  if (!saved) return { kind: 'failed_uncounted', class: 'record_moved', record: read };
  return { kind: 'failed_counted', failure: billingFailureView(saved)!, record: saved };
}

/** Processor errors that are the processor's own answer that it took nothing (a refused request), by code. */
const NO_CHARGE_PROCESSOR_CODES: ReadonlySet<string> = new Set(['processor_rejected', 'unsupported_rail', 'processor_auth', 'ambiguous_customer']);

function answeredWithoutCharge(error: unknown): boolean {
  return error instanceof ProcessorError && NO_CHARGE_PROCESSOR_CODES.has(error.code);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** RecordBillingFailure: lands only if the record still owes the same work at the same count. */
export async function saveFailure(
  deps: Pick<AttemptDeps, 'billing'>,
  read: BillingRecord,
  message: string,
  now: Date,
  request: Pick<AttemptRequest, 'actor' | 'reason' | 'process' | 'runId'>,
  presented = false,
): Promise<BillingRecord | undefined> {
  const failure = nextFailure(read, now, allowlistedError(message, read.subscription_id), (d) => formatInstant(d));
  const after = withFailure(read, failure, now);
  // The processor may hold a charge under this key: kept until an attempt records its result (payment_attempts moves).
  if (presented) after.billing_presented_for = dueKey(read);
  if (after.billing_next_attempt_at === undefined) delete after.billing_next_attempt_at;
  after.process = request.process;
  const landed = await deps.billing.recordBillingFailure(read, after, historyRowOf(after, { actor: request.actor, reason: request.reason, run_id: request.runId }));
  return landed ? after : undefined;
}

function throwIfAborted(...signals: (AbortSignal | undefined)[]): void {
  for (const s of signals) if (s?.aborted) throw new InterruptedError('the attempt was interrupted before submission', { cause: s.reason });
}

function combinedSignal(...signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length === 0) return undefined;
  if (present.length === 1) return present[0];
  return AbortSignal.any(present);
}

