import { ACH_REPRESENTMENT_WINDOW_MS } from './ach-outcomes.js';
import { applyBillingEvent, historyRowOf, nextPeriodRecord, withFailure, type IdGenerator } from './billing-record.js';
import { ConcurrentModificationError, InterruptedError, LockedError } from './errors.js';
import {
  allowlistedError,
  classifyFailure,
  isHeldByLadder,
  nextFailure,
  failureState,
  type BillingFailureView,
  billingFailureView,
  type FailureClass,
} from './ladder.js';
import { acquireUserLock, type HeldLock } from './lock.js';
import type {
  AccountDirectory,
  AccountSnapshot,
  BillingStore,
  Clock,
  LockStore,
  PaymentProcessor,
  PaymentResult,
} from './ports.js';
import type { BillingKey, BillingRecord, DecisionContext, Process } from './records.js';
import { formatInstant } from './time.js';

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
  readonly lockLeaseMs?: number;
  readonly lockHeartbeatMs?: number;
}

/** Balances observed by a balance webhook (DESIGN 8 `POST /webhooks/balance`). */
export interface BalanceObservation {
  readonly institution_id?: string | undefined;
  readonly available_balance_cents: number;
  readonly current_balance_cents: number;
  readonly calc_available_balance_cents?: number | undefined;
  readonly threshold_cents: number;
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
  /** The invocation's deadline/abort. */
  readonly signal?: AbortSignal;
  /** The caller's Idempotency-Key (manual pay), stored on the record with the submission. */
  readonly requestKey?: string | undefined;
  /** A lock the caller already holds (retry-billing, memberships); otherwise the attempt takes it. */
  readonly heldLock?: HeldLock;
}

export type NotDueReason =
  | 'not_found'
  | 'status'
  | 'not_yet_due'
  | 'waiting'
  | 'parked'
  | 'ach_blocked'
  | 'disputed';

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

const DAILY_RETRY_MS = 24 * 60 * 60 * 1000;
/** Paths started by a person: they bypass the daily-retry wait, the ladder's wait and ACH holds. */
const PERSON_INITIATED: ReadonlySet<Process> = new Set(['MANUAL', 'OPERATOR_RETRY']);
/** Paths whose balance gate is the account's balance against the amount. */
const SCHEDULED_GATE: ReadonlySet<Process> = new Set(['SCHEDULED', 'RETRY']);
/** Paths that may advance an expired pause window. */
const PAUSE_RUNS: ReadonlySet<Process> = new Set(['PAUSE', 'BATCH']);

export const GATE_CLOSED_ERROR = 'Insufficient available balance.';

/**
 * The one collection attempt every path runs (DESIGN 3):
 * lock → read → gate → submit → one transaction → release.
 * Exactly-once rests on the idempotency key `{subscription_id}:{payment_attempts + 1}` and the
 * version-conditioned transaction, not on the lock.
 */
export async function runCollectionAttempt(deps: AttemptDeps, request: AttemptRequest): Promise<AttemptOutcome> {
  let lock = request.heldLock;
  if (!lock) {
    try {
      lock = await acquireUserLock(deps.locks, deps.clock, request.key.user_id, request.owner, {
        newVersion: () => deps.ids.newId(),
        ...(deps.lockLeaseMs !== undefined ? { leaseMs: deps.lockLeaseMs } : {}),
        ...(deps.lockHeartbeatMs !== undefined ? { heartbeatMs: deps.lockHeartbeatMs } : {}),
      });
    } catch (error) {
      if (error instanceof LockedError) return { kind: 'skipped_locked' };
      throw error;
    }
  }
  let outcome: AttemptOutcome;
  try {
    outcome = await attemptUnderLock(deps, request, lock);
  } catch (error) {
    if (!request.heldLock) await lock.release().catch(() => undefined);
    throw error;
  }
  // A failed release is not the attempt's failure: the lease expires on its own in 60 s.
  if (!request.heldLock) await lock.release().catch((error) => deps.onError?.(error, { user_id: request.key.user_id, class: 'transient', recorded: false }));
  return outcome;
}

async function attemptUnderLock(deps: AttemptDeps, request: AttemptRequest, lock: HeldLock): Promise<AttemptOutcome> {
  const read = await deps.billing.get(request.key);
  if (!read) return { kind: 'not_due', reason: 'not_found' };
  const now = deps.clock.now();
  const process = request.process;

  if (read.billing_status === 'PAUSED') {
    // Only the pause run (or an ad-hoc batch) advances a pause; a payment path never skips a period.
    return PAUSE_RUNS.has(process) ? advancePause(deps, read, now, process) : { kind: 'not_due', reason: 'status', record: read };
  }
  const notDue = dueGate(read, now, process);
  if (notDue) return { kind: 'not_due', reason: notDue, record: read };

  try {
    if (read.updated_event === 'CANCEL_REQUESTED') {
      const after = applyBillingEvent(read, 'CANCEL_COMPLETED', now, { process, updatedEvent: 'CANCEL_COMPLETED' });
      await deps.billing.commit({ writes: [{ kind: 'update', record: after, expectedVersion: read.version }], history: [historyRowOf(after)] });
      return { kind: 'cancelled', record: after };
    }

    const account = await deps.accounts.getAccount(read.user_id, combinedSignal(request.signal, lock.signal));
    if (account.status !== 'active') {
      const after = applyBillingEvent(read, 'USER_NOT_ACTIVE', now, {
        process,
        updatedEvent: account.status === 'banned' ? 'USER_BANNED' : 'USER_NOT_ACTIVE',
      });
      await deps.billing.commit({ writes: [{ kind: 'update', record: after, expectedVersion: read.version }], history: [historyRowOf(after)] });
      return { kind: 'inactive', record: after };
    }

    const decision = balanceDecision(read, account, process, request.balance);
    if (!decision.open) {
      if (request.balance) return { kind: 'gate_closed', record: read };
      // Scheduled/retry: decline-like, nothing presented to the bank, retried daily.
      const after = applyBillingEvent(read, 'DECLINED', now, {
        process,
        set: { payment_error: GATE_CLOSED_ERROR, last_attempt_date: formatInstant(now), first_attempt_date: read.first_attempt_date ?? formatInstant(now) },
      });
      return await commitAttempt(deps, read, after, decision.context, request, now, { kind: 'declined', record: after });
    }

    throwIfAborted(request.signal, lock.signal);
    const result = await deps.processor.submit(
      {
        idempotency_key: `${read.subscription_id}:${read.payment_attempts + 1}`,
        user_id: read.user_id,
        amount_cents: read.amount_cents,
        rail: read.payment_method,
        account_last_four: read.account_last_four,
        reference: { kind: 'subscription', user_id: read.user_id, billing_date: read.billing_date, subscription_id: read.subscription_id },
      },
      combinedSignal(request.signal, lock.signal),
    );
    const after = afterSubmission(read, result, now, process);
    if (request.requestKey !== undefined) after.last_request_key = request.requestKey;
    const kind = result.outcome === 'approved' ? 'collected' : result.outcome === 'submitted' ? 'submitted' : 'declined';
    return await commitAttempt(deps, read, after, decision.context, request, now, { kind, record: after });
  } catch (error) {
    return handleFailure(deps, read, error, request, now, combinedSignal(request.signal, lock.signal));
  }
}

/**
 * Why a collectible record is not to be attempted now by `process`, or undefined when it is. The
 * collections-job plans with the same rule (ADR-119's gate); the attempt checks it again after its read.
 */
export function dueGate(record: BillingRecord, now: Date, process: Process): NotDueReason | undefined {
  if (record.billing_status !== 'PENDING' && record.billing_status !== 'FAILED') return 'status';
  if (Date.parse(record.billing_date) > now.getTime()) return 'not_yet_due';
  if (PERSON_INITIATED.has(process)) return undefined;
  if (isHeldByLadder(record, now)) return failureState(record) === 'parked' ? 'parked' : 'waiting';
  if (
    process !== 'BALANCE_WEBHOOK' &&
    record.billing_status === 'FAILED' &&
    record.last_attempt_date !== undefined &&
    Date.parse(record.last_attempt_date) + DAILY_RETRY_MS > now.getTime()
  ) {
    return 'not_yet_due';
  }
  if (record.payment_method === 'ach' && (record.ach_blocked || record.ach_unauthorized || pastRepresentmentWindow(record, now))) {
    return 'ach_blocked';
  }
  if (record.card_disputed) return 'disputed';
  return undefined;
}

/** A returned debit may be re-presented only within 180 days of the original entry (NACHA). */
function pastRepresentmentWindow(record: BillingRecord, now: Date): boolean {
  if (!record.ach_represented || record.ach_original_entry_date === undefined) return false;
  return now.getTime() - Date.parse(record.ach_original_entry_date) > ACH_REPRESENTMENT_WINDOW_MS;
}

interface BalanceDecision {
  readonly open: boolean;
  readonly context: DecisionContext;
}

/** The balance gate and the decision context it observed (DESIGN 2.5); consults nothing new. */
function balanceDecision(record: BillingRecord, account: AccountSnapshot, process: Process, balance?: BalanceObservation): BalanceDecision {
  const context: DecisionContext = { data_payment_method: record.payment_method };
  const observe = <K extends keyof DecisionContext>(key: K, value: DecisionContext[K] | undefined) => {
    if (value !== undefined) context[key] = value;
  };
  if (balance) {
    observe('data_institution_id', balance.institution_id ?? account.institution_id);
    observe('data_available_balance_cents', balance.available_balance_cents);
    observe('data_current_balance_cents', balance.current_balance_cents);
    observe('data_calc_available_balance_cents', balance.calc_available_balance_cents);
    observe('data_threshold_cents', balance.threshold_cents);
    observe('data_debit_card_valid', account.debit_card_valid);
    observe('data_blocklisted', account.blocklisted);
    const source = balance.calc_available_balance_cents !== undefined ? 'calc_available' : 'available';
    const observed = source === 'calc_available' ? balance.calc_available_balance_cents! : balance.available_balance_cents;
    context.data_balance_source = source;
    const open = observed >= Math.max(balance.threshold_cents, record.amount_cents) && account.blocklisted !== true;
    return { open, context };
  }
  if (SCHEDULED_GATE.has(process) && record.payment_method !== 'card') {
    observe('data_institution_id', account.institution_id);
    observe('data_available_balance_cents', account.available_balance_cents);
    observe('data_current_balance_cents', account.current_balance_cents);
    observe('data_institution_unreliable', account.institution_unreliable);
    const source = account.available_balance_cents !== undefined ? 'available' : account.current_balance_cents !== undefined ? 'current' : undefined;
    if (source === undefined) return { open: true, context };
    context.data_balance_source = source;
    const observed = source === 'available' ? account.available_balance_cents! : account.current_balance_cents!;
    let open = observed >= record.amount_cents;
    if (!open && process === 'SCHEDULED' && account.ml_override !== undefined) {
      context.data_ml_override = account.ml_override;
      open = account.ml_override;
    }
    return { open, context };
  }
  if (process === 'MANUAL') {
    observe('data_institution_id', account.institution_id);
    observe('data_debit_card_valid', account.debit_card_valid);
  }
  return { open: true, context };
}

function afterSubmission(read: BillingRecord, result: PaymentResult, now: Date, process: Process): BillingRecord {
  const at = formatInstant(now);
  const set: Partial<BillingRecord> = {
    payment_attempts: read.payment_attempts + 1,
    last_attempt_date: at,
    first_attempt_date: read.first_attempt_date ?? at,
  };
  if (result.confirmation_id !== undefined) set.transaction_id = result.confirmation_id;
  switch (result.outcome) {
    case 'approved':
      return applyBillingEvent(read, 'COLLECTED', now, { process, set: { ...set, payment_error: '' } });
    case 'submitted':
      return applyBillingEvent(read, 'ACH_SUBMITTED', now, { process, set: { ...set, payment_error: '' } });
    case 'declined':
      return applyBillingEvent(read, 'DECLINED', now, { process, set: { ...set, payment_error: result.message } });
  }
}

/** Step 5: one transaction with the audit row (decision context) and, after a first attempt, the next period. */
async function commitAttempt(
  deps: AttemptDeps,
  read: BillingRecord,
  after: BillingRecord,
  context: DecisionContext,
  request: AttemptRequest,
  now: Date,
  outcome: AttemptOutcome,
): Promise<AttemptOutcome> {
  const history = historyRowOf(after, { ...context, actor: request.actor, reason: request.reason });
  const leftPending = read.billing_status === 'PENDING';
  const next = leftPending ? nextPeriodRecord(after, now, deps.ids, after.last_run_date) : undefined;
  await deps.billing.commit({
    writes: [{ kind: 'update', record: after, expectedVersion: read.version }],
    history: [history],
    ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}),
  });
  return outcome;
}

/** A PAUSED record whose period has come: skip it and open the next (still paused while months remain). */
async function advancePause(deps: AttemptDeps, read: BillingRecord, now: Date, process: Process): Promise<AttemptOutcome> {
  if (Date.parse(read.billing_date) > now.getTime()) return { kind: 'not_due', reason: 'not_yet_due', record: read };
  const after = applyBillingEvent(read, 'PAUSE_SKIPPED', now, { process, updatedEvent: 'PAUSE_SKIPPED' });
  const monthsLeft = Math.max(0, (read.paused_months ?? 1) - 1);
  const next = nextPeriodRecord(after, now, deps.ids, after.last_run_date,
    monthsLeft > 0
      ? { billing_status: 'PAUSED', paused_months: monthsLeft, updated_event: 'PAUSED', process }
      : { billing_status: 'PENDING', updated_event: 'RESUMED', process },
  );
  await deps.billing.commit({
    writes: [{ kind: 'update', record: after, expectedVersion: read.version }],
    history: [historyRowOf(after)],
    createIfAbsent: { record: next, history: historyRowOf(next) },
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
): Promise<AttemptOutcome> {
  // A record changed under us (stale lock holder, concurrent writer): the next attempt re-sends the same key.
  const failureClass = error instanceof ConcurrentModificationError ? 'transient' : classifyFailure(error, signal);
  if (failureClass !== 'counted') {
    deps.onError?.(error, { subscription_id: read.subscription_id, user_id: read.user_id, class: failureClass, recorded: false });
    return { kind: 'failed_uncounted', class: failureClass, record: read };
  }
  const saved = await saveFailure(deps, read, errorText(error), now, request);
  deps.onError?.(error, { subscription_id: read.subscription_id, user_id: read.user_id, class: failureClass, recorded: !!saved });
  if (!saved) return { kind: 'failed_uncounted', class: 'record_moved', record: read };
  return { kind: 'failed_counted', failure: billingFailureView(saved)!, record: saved };
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
  request: Pick<AttemptRequest, 'actor' | 'reason' | 'process'>,
): Promise<BillingRecord | undefined> {
  const failure = nextFailure(read, now, allowlistedError(message, read.subscription_id), (d) => formatInstant(d));
  const after = withFailure(read, failure, now);
  if (after.billing_next_attempt_at === undefined) delete after.billing_next_attempt_at;
  after.process = request.process;
  const landed = await deps.billing.recordBillingFailure(read, after, historyRowOf(after, { actor: request.actor, reason: request.reason }));
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

