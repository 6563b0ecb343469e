import { applyBillingEvent, applyIntentChange, historyRowOf, successorRecord, withFailure } from '../billing-record.js';
import { balanceDecision, GATE_CLOSED_ERROR, type BalanceObservation } from '../collectible.js';
import { dueGate, mayAdvancePause, type NotDueReason } from '../due-work.js';
import { deadHolderFoundAccountInactive, isPresentedUnrecorded, mayHoldUnrecordedCharge, repairsUnrecordedAttempt } from '../takeover.js';
import { debitMovement, subscriptionRecordKey, type MoneyMovement } from '../money-movements.js';
import { achDebitTally, originatesAchDebit } from '../ach-return-rates.js';
import { CLEARED_DUNNING, EXHAUSTED_DUNNING, dunningAfterDecline, dunningLapsed, isInDunning } from '../dunning.js';
import { classifyDecline } from '../declines.js';
import { ConcurrentModificationError, InterruptedError, LockedError, ProcessorError } from '../errors.js';
import { intentOf, isCancelRequested } from '../intent.js';
import { allowlistedError, billingFailureView, classifyFailure, dueKey, nextFailure, type BillingFailureView, type FailureClass } from '../ladder.js';
import { representmentFlags } from '../ach-outcomes.js';
import { lockUser, releaseQuietly, type HeldLock } from '../lock.js';
import type { AccountSnapshot } from '../ports/account-directory.js';
import type { BillingLedger, BillingTransaction } from '../ports/billing-ledger.js';
import { cardInstrumentWrite, chargedInstrument, decideInstrument, declineHoldWrite, heldNoteOf, liftsRecordHolds, presentmentWrite } from '../instruments/attempt.js';
import { carriesRefusal, refusedPeriod } from '../instruments/refused-period.js';
import type { InstrumentRefusal } from '../instruments/gate.js';
import { combineInstrumentWrites, type Instrument, type InstrumentsItem, type InstrumentWrite } from '../instruments/instrument.js';
import type { PaymentRequest, PaymentResult } from '../ports/processor.js';
import type { BillingKey, BillingRecord, DecisionContext, Process } from '../records.js';
import { formatInstant, toDate } from '../time.js';
import type { UseCaseDeps } from './deps.js';

export { GATE_CLOSED_ERROR, type BalanceObservation } from '../collectible.js';
export type { NotDueReason } from '../due-work.js';

/** The collection attempt's dependencies: a use case's, with only the ledger part of the billing store. */
export type AttemptDeps = Omit<UseCaseDeps, 'billing'> & { readonly billing: Pick<BillingLedger, 'get' | 'getForAttempt' | 'commit' | 'recordBillingFailure'> };

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
  readonly signal?: AbortSignal;
  /** The caller's Idempotency-Key (manual pay), stored on the record with the submission. */
  readonly requestKey?: string | undefined;
  /** A lock the caller already holds (retry-billing, memberships); otherwise the attempt takes it. */
  readonly heldLock?: HeldLock;
  /** With heldLock: the caller is done with it after this attempt, so the attempt's transaction releases it. */
  readonly releaseHeldLock?: boolean;
  /**
   * Without heldLock: the lock is taken naming the period, saving the lease write that otherwise names its key
   * just before the processor sees it (takeover.ts). Only for a path whose hold refusal is written with the release.
   */
  readonly namedAtLock?: boolean;
  /** With heldLock: the record as last read or written under it, not read again; its version still fences the write. */
  readonly read?: BillingRecord;
  /** With read: the user's instruments item read with it (DESIGN 3.2); without it the attempt reads both again. */
  readonly instruments?: InstrumentsItem;
}

export type AttemptOutcome =
  | { readonly kind: 'collected'; readonly record: BillingRecord }
  | { readonly kind: 'submitted'; readonly record: BillingRecord }
  | { readonly kind: 'declined'; readonly record: BillingRecord }
  | { readonly kind: 'cancelled'; readonly record: BillingRecord }
  | { readonly kind: 'inactive'; readonly record: BillingRecord }
  | { readonly kind: 'pause_advanced'; readonly record: BillingRecord }
  | { readonly kind: 'gate_closed'; readonly record: BillingRecord }
  /** A hold on the instrument refused it: nothing presented; a scheduled or retry attempt moved it off the schedule. */
  | { readonly kind: 'held'; readonly refusal: InstrumentRefusal; readonly record: BillingRecord }
  | { readonly kind: 'skipped_locked' }
  | { readonly kind: 'not_due'; readonly reason: NotDueReason; readonly record?: BillingRecord }
  | { readonly kind: 'failed_counted'; readonly failure: BillingFailureView; readonly record: BillingRecord }
  | { readonly kind: 'failed_uncounted'; readonly class: FailureClass | 'record_moved'; readonly record?: BillingRecord };

export type AttemptOutcomeKind = AttemptOutcome['kind'];

/**
 * The one collection attempt every path runs: lock → read → gate → submit → one transaction → release.
 * Exactly-once rests on the key `{subscription_id}:{payment_attempts + 1}` and the version fence, not on the lock.
 */
export async function runCollectionAttempt(deps: AttemptDeps, request: AttemptRequest): Promise<AttemptOutcome> {
  if (request.heldLock) return attemptUnderLock(deps, request, request.heldLock, request.releaseHeldLock === true);
  let lock: HeldLock;
  try {
    lock = await lockUser(deps, request.key.user_id, request.owner, request.namedAtLock ? request.key.billing_date : undefined);
  } catch (error) {
    if (error instanceof LockedError) return { kind: 'skipped_locked' };
    throw error;
  }
  try {
    return await attemptUnderLock(deps, request, lock, true);
  } finally {
    // A failed release is not the attempt's failure: the lease expires on its own.
    await releaseQuietly(lock, (error) => deps.onError?.(error, { user_id: request.key.user_id, class: 'transient', recorded: false }));
  }
}

type Commit = (tx: BillingTransaction) => Promise<unknown>;

async function attemptUnderLock(deps: AttemptDeps, request: AttemptRequest, lock: HeldLock, ownsLock: boolean): Promise<AttemptOutcome> {
  // The attempt's own lock is released inside its write; a caller's stays held unless released with it.
  const commit: Commit = ownsLock
    ? (tx) => lock.releaseWith((releaseLock) => deps.billing.commit({ ...tx, releaseLock }))
    : (tx) => deps.billing.commit(tx);
  const { record: read, instruments } =
    request.heldLock && request.read && request.instruments ? { record: request.read, instruments: request.instruments } : await deps.billing.getForAttempt(request.key);
  if (!read) return { kind: 'not_due', reason: 'not_found' };
  const now = deps.clock.now();
  const process = request.process;

  if (read.billing_status === 'PAUSED') {
    // Only the pause run (or an ad-hoc batch) advances a pause; a payment path never skips a period.
    return mayAdvancePause(process) ? advancePause(deps, commit, read, now, process) : { kind: 'not_due', reason: 'status', record: read };
  }
  const notDue = dueGate(read, now, process, { recordHolds: false });
  if (notDue === 'exhausted' && dunningLapsed(read, now)) return recordLapsedDunning(deps, commit, read, now, request, lock.signal);
  if (notDue) return { kind: 'not_due', reason: notDue, record: read };

  // Once the request is handed to the processor, a failure may leave a charge no record shows.
  let presented = false;
  try {
    if (isCancelRequested(read)) return await completeCancel(commit, read, now, process);

    const account = await deps.accounts.getAccount(read.user_id, combinedSignal(request.signal, lock.signal));
    // A key presented while the account was active and not recorded is resent past the account gate,
    // so a ban cannot hide a charge; a dead holder that found the account inactive presented nothing.
    const deadLease = deadHolderFoundAccountInactive(lock.takenOver, account, deps.accountClockSkewMs) ? undefined : lock.takenOver;
    if (account.status !== 'active' && !mayHoldUnrecordedCharge(read, deadLease)) {
      return await deactivate(commit, read, now, process, account.status);
    }

    const { instrument, refusal } = decideInstrument(read, instruments, account, now, process);
    // A dead holder's presentment under this key is resent whatever was held since: it may already hold money.
    if (refusal && (!repairsUnrecordedAttempt(lock.takenOver, read) || carriesRefusal(read, refusal))) return await refuseHeld(commit, read, refusal, now, request);

    const decision = balanceDecision(read, account, process, request.balance);
    // A dead holder's attempt of this period may have reached the processor: resend its key first.
    if (!decision.open && !repairsUnrecordedAttempt(lock.takenOver, read)) {
      if (request.balance) return { kind: 'gate_closed', record: read };
      const after = gateClosedDecline(read, now, process);
      return await commitAttempt(deps, commit, read, after, decision.context, request, now, { kind: 'declined', record: after });
    }

    // If this holder dies too, the next must judge the account at the dead holder's instant, not this lock's.
    if (account.status !== 'active' && deadLease !== undefined) await lock.carryHeldSince(deadLease.held_since ?? 0);
    throwIfAborted(request.signal, lock.signal);
    if (request.heldLock || !request.namedAtLock) await lock.declarePurpose(dueKey(read));
    presented = true;
    const result = await deps.processor.submit(paymentRequestOf(read, instrument, instruments), combinedSignal(request.signal, lock.signal));
    const after = afterSubmission(deps, read, result, now, process);
    if (request.requestKey !== undefined) after.last_request_key = request.requestKey;
    Object.assign(after, chargedInstrument(instrument, result));
    delete after.ceiling_until;
    const kind = result.outcome === 'approved' ? 'collected' : result.outcome === 'submitted' ? 'submitted' : 'declined';
    const presentment = presentmentWrite(read, instrument, now, process, { decline_class: result.outcome === 'declined' ? after.decline_class : undefined, item: instruments });
    const instrumentWrite = combineInstrumentWrites(presentment, declineHoldWrite(read, after, instrument, now), cardInstrumentWrite(read, after, result, instruments, instrument));
    const movements = debitOf(read, result, presentedAt(lock, read, now));
    return await commitAttempt(deps, commit, read, after, decision.context, request, now, { kind, record: after }, instrumentWrite, movements);
  } catch (error) {
    return handleFailure(deps, read, error, request, now, combinedSignal(request.signal, lock.signal), presented);
  }
}

async function completeCancel(commit: Commit, read: BillingRecord, now: Date, process: Process): Promise<AttemptOutcome> {
  const after = applyBillingEvent(read, 'CANCEL_COMPLETED', now, { process, updatedEvent: 'CANCEL_COMPLETED' });
  await commit({ writes: [{ kind: 'update', read, record: after }], history: [historyRowOf(after)] });
  return { kind: 'cancelled', record: after };
}

async function deactivate(commit: Commit, read: BillingRecord, now: Date, process: Process, status: AccountSnapshot['status']): Promise<AttemptOutcome> {
  const after = applyBillingEvent(read, 'USER_NOT_ACTIVE', now, {
    process,
    updatedEvent: status === 'banned' ? 'USER_BANNED' : 'USER_NOT_ACTIVE',
  });
  await commit({ writes: [{ kind: 'update', read, record: after }], history: [historyRowOf(after)] });
  return { kind: 'inactive', record: after };
}

/** Recorded like a decline and retried daily; nothing was submitted, so the due key stays and the failure is voided. */
function gateClosedDecline(read: BillingRecord, now: Date, process: Process): BillingRecord {
  return applyBillingEvent(read, 'DECLINED', now, {
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
}

/** A scheduled or retry attempt writes the period once (refused-period.ts); any other path writes nothing (409 for a person). */
async function refuseHeld(commit: Commit, read: BillingRecord, refusal: InstrumentRefusal, now: Date, request: AttemptRequest): Promise<AttemptOutcome> {
  const after = refusedPeriod(read, refusal, now, request.process);
  if (after) await commit({ writes: [{ kind: 'update', read, record: after }], history: [historyRowOf(after, { actor: request.actor, reason: request.reason, run_id: request.runId })] });
  return { kind: 'held', refusal, record: after ?? read };
}

function paymentRequestOf(read: BillingRecord, instrument: Instrument | undefined, instruments: InstrumentsItem | undefined): PaymentRequest {
  return {
    ...(instrument ? { instrument_id: instrument.instrument_id } : {}), ...(read.payment_method === 'card' && instruments?.stripe_card ? { card: instruments.stripe_card } : {}),
    idempotency_key: `${read.subscription_id}:${read.payment_attempts + 1}`,
    user_id: read.user_id,
    amount_cents: read.amount_cents,
    rail: read.payment_method,
    account_last_four: read.account_last_four,
    reference: { kind: 'subscription', user_id: read.user_id, billing_date: read.billing_date, subscription_id: read.subscription_id },
    ...representmentFlags(read),
  };
}

/** The money an accepted presentment moved (DESIGN 14); a decline moved none. */
function debitOf(read: BillingRecord, result: PaymentResult, at: Date): MoneyMovement[] {
  if (result.outcome === 'declined') return [];
  return [
    debitMovement({
      rail: read.payment_method,
      transaction_id: result.confirmation_id,
      amount_cents: read.amount_cents,
      presented_at: at,
      ...{ user_id: read.user_id, record_key: subscriptionRecordKey(read) },
      idempotency_key: `${read.subscription_id}:${read.payment_attempts + 1}`,
    }),
  ];
}

/** A repair's key was first presented by the attempt that died (its lease's `held_since`) or failed (its saved failure). */
function presentedAt(lock: HeldLock, read: BillingRecord, now: Date): Date {
  const dead = lock.takenOver;
  if (dead?.held_since !== undefined && repairsUnrecordedAttempt(dead, read)) return new Date(dead.held_since);
  if (isPresentedUnrecorded(read) && read.billing_failed_at !== undefined) return toDate(read.billing_failed_at);
  return now;
}

function afterSubmission(deps: AttemptDeps, read: BillingRecord, result: PaymentResult, now: Date, process: Process): BillingRecord {
  const at = formatInstant(now);
  const set: Partial<BillingRecord> = {
    // Presented on an instrument no hold binds: the record's own holds from an earlier one are lifted.
    ...liftsRecordHolds(read),
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

/** One transaction: the record, its audit row and, when it leaves PENDING, the next period. */
async function commitAttempt(
  deps: AttemptDeps,
  commit: Commit,
  read: BillingRecord,
  after: BillingRecord,
  context: DecisionContext,
  request: AttemptRequest,
  now: Date,
  outcome: AttemptOutcome,
  instruments?: InstrumentWrite,
  movements: readonly MoneyMovement[] = [],
): Promise<AttemptOutcome> {
  const history = historyRowOf(after, { ...context, actor: request.actor, reason: request.reason, run_id: request.runId, ...heldNoteOf(instruments) });
  const leftPending = read.billing_status === 'PENDING';
  const next = leftPending ? successorRecord(after, now, deps.ids, after.last_run_date) : undefined;
  await commit({
    writes: [{ kind: 'update', read, record: after }],
    history: [history],
    ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}),
    // Every ACH entry presented counts in its day's debits (NACHA return rates).
    ...(originatesAchDebit(read, after) ? { achRates: achDebitTally(now) } : {}),
    ...(instruments ? { instruments } : {}),
    ...(movements.length > 0 ? { movements } : {}),
  });
  return outcome;
}

/**
 * A dunning window found over presents nothing and records the cycle exhausted; a failed write saves
 * nothing, since the next run finds the window over again.
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

/** A paused period that has come is skipped; its successor stays paused while months remain. */
async function advancePause(deps: AttemptDeps, commit: Commit, read: BillingRecord, now: Date, process: Process): Promise<AttemptOutcome> {
  if (Date.parse(read.billing_date) > now.getTime()) return { kind: 'not_due', reason: 'not_yet_due', record: read };
  // The skipped month is spent: the remaining pause months move to the successor.
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

/** Counted failures are saved on the record; the others are only reported. */
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

/** Processor errors that are its own answer that it took nothing (a refused request). */
const NO_CHARGE_PROCESSOR_CODES: ReadonlySet<string> = new Set(['processor_rejected', 'unsupported_rail', 'processor_auth', 'ambiguous_customer']);

const answeredWithoutCharge = (error: unknown): boolean => error instanceof ProcessorError && NO_CHARGE_PROCESSOR_CODES.has(error.code);
const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Lands only if the record still owes the same work at the same count. */
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
  // The processor may hold a charge under this key: kept until an attempt records its result.
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

