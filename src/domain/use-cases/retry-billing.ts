import { runCollectionAttempt, saveFailure, type AttemptDeps, type AttemptOutcome } from './attempt.js';
import { applyBillingEvent, freshStamp, historyRowOf, nextPeriodRecord } from './billing-record.js';
import { NotFoundError, PreconditionFailedError, UnbilledPeriodError } from './errors.js';
import { billingFailureView, type BillingFailureView } from './ladder.js';
import { acquireUserLock, type HeldLock } from './lock.js';
import type { BillingRecord } from './records.js';

export const NO_PROGRESS_ERROR = 'The attempt completed but the subscription is still due.';

export interface RetryBillingResult {
  readonly outcome: 'billed' | 'failed' | 'still_due';
  readonly billing_failure?: BillingFailureView;
  readonly still_due: boolean;
  readonly subscription: BillingRecord;
  readonly attempt: AttemptOutcome['kind'];
}

interface ActorRequest {
  readonly subscriptionId: string;
  readonly owner: string;
  readonly actor?: string | undefined;
  readonly reason?: string | undefined;
  readonly signal?: AbortSignal;
}

async function lockFor(deps: AttemptDeps, userId: string, owner: string): Promise<HeldLock> {
  return acquireUserLock(deps.locks, deps.clock, userId, owner, {
    newVersion: () => deps.ids.newId(),
    ...(deps.lockLeaseMs !== undefined ? { leaseMs: deps.lockLeaseMs } : {}),
    ...(deps.lockHeartbeatMs !== undefined ? { heartbeatMs: deps.lockHeartbeatMs } : {}),
  });
}

async function findOrThrow(deps: AttemptDeps, subscriptionId: string): Promise<BillingRecord> {
  const found = await deps.billing.findBySubscriptionId(subscriptionId);
  if (!found) throw new NotFoundError(`subscription ${subscriptionId} not found`);
  return found;
}

/** Locates the subscription, takes its user's lock, reads it strongly consistent, runs `work`, releases. */
async function withLockedSubscription<T>(
  deps: AttemptDeps,
  request: ActorRequest,
  work: (read: BillingRecord, lock: HeldLock) => Promise<T>,
): Promise<T> {
  const located = await findOrThrow(deps, request.subscriptionId);
  const lock = await lockFor(deps, located.user_id, request.owner);
  try {
    const read = await deps.billing.get(located);
    if (!read) throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
    return await work(read, lock);
  } finally {
    await lock.release();
  }
}

/**
 * Operator retry (DESIGN 5): under the lock (LockedError → 409, nothing changed), clear the saved
 * failure with its audit row in one transaction, then run the attempt inline. After the clear the
 * answer is always one of three outcomes, never an error.
 */
export async function retryBilling(deps: AttemptDeps, request: ActorRequest): Promise<RetryBillingResult> {
  return withLockedSubscription(deps, request, async (read, lock) => {
    const now = deps.clock.now();
    const cleared = applyBillingEvent(read, 'BILLING_RETRY_REQUESTED', now, {
      process: 'OPERATOR_RETRY',
      ...(read.updated_event === 'CANCEL_REQUESTED' ? {} : { updatedEvent: 'BILLING_RETRY_REQUESTED' as const }),
      set: {
        billing_failed_for: undefined,
        billing_failure_count: undefined,
        billing_failed_at: undefined,
        billing_next_attempt_at: undefined,
        billing_last_error: undefined,
      },
    });
    await deps.billing.commit({
      writes: [{ kind: 'update', record: cleared, expectedVersion: read.version }],
      history: [historyRowOf(cleared, { actor: request.actor, reason: request.reason })],
    });

    let outcome: AttemptOutcome;
    try {
      outcome = await runCollectionAttempt(deps, {
        key: read,
        process: 'OPERATOR_RETRY',
        owner: request.owner,
        heldLock: lock,
        actor: request.actor,
        reason: request.reason,
        ...(request.signal ? { signal: request.signal } : {}),
      });
    } catch {
      outcome = { kind: 'failed_uncounted', class: 'transient', record: cleared };
    }
    return retryResult(deps, read, cleared, outcome, request);
  });
}

async function retryResult(
  deps: AttemptDeps,
  read: BillingRecord,
  cleared: BillingRecord,
  outcome: AttemptOutcome,
  request: ActorRequest,
): Promise<RetryBillingResult> {
  const base = { attempt: outcome.kind };
  switch (outcome.kind) {
    case 'collected':
    case 'submitted':
    case 'cancelled':
    case 'inactive':
    case 'pause_advanced':
      return { ...base, outcome: 'billed', still_due: false, subscription: outcome.record };
    case 'declined':
      return { ...base, outcome: 'failed', still_due: false, subscription: outcome.record };
    case 'failed_counted':
      return { ...base, outcome: 'failed', billing_failure: outcome.failure, still_due: false, subscription: outcome.record };
    case 'failed_uncounted':
    case 'skipped_locked':
      return { ...base, outcome: 'still_due', still_due: true, subscription: ('record' in outcome && outcome.record) || cleared };
    case 'not_due':
    case 'gate_closed': {
      const current = (await deps.billing.get(read)) ?? cleared;
      const due = current.billing_status === 'PENDING' || current.billing_status === 'FAILED';
      if (!due || Date.parse(current.billing_date) > deps.clock.now().getTime()) {
        return { ...base, outcome: 'billed', still_due: false, subscription: current };
      }
      // A clean return that leaves the subscription due is saved as "no progress" (ADR-119).
      const saved = await saveFailure(deps, current, NO_PROGRESS_ERROR, deps.clock.now(), { ...request, process: 'OPERATOR_RETRY' });
      if (!saved) return { ...base, outcome: 'still_due', still_due: true, subscription: current };
      return { ...base, outcome: 'failed', billing_failure: billingFailureView(saved)!, still_due: false, subscription: saved };
    }
  }
}

export interface ManualPayResult {
  readonly replayed: boolean;
  readonly outcome: AttemptOutcome;
  readonly subscription: BillingRecord;
}

/**
 * Manual pay (DESIGN 8): the attempt with process MANUAL. A repeat of the same Idempotency-Key is
 * answered with the record as it is, never re-run.
 */
export async function manualPay(
  deps: AttemptDeps,
  request: ActorRequest & { readonly idempotencyKey: string },
): Promise<ManualPayResult> {
  const located = await findOrThrow(deps, request.subscriptionId);
  if (located.last_request_key === request.idempotencyKey) {
    return { replayed: true, outcome: { kind: 'not_due', reason: 'status', record: located }, subscription: located };
  }
  const outcome = await runCollectionAttempt(deps, {
    key: located,
    process: 'MANUAL',
    owner: request.owner,
    actor: request.actor,
    reason: request.reason,
    requestKey: request.idempotencyKey,
    ...(request.signal ? { signal: request.signal } : {}),
  });
  const current = 'record' in outcome && outcome.record ? outcome.record : ((await deps.billing.get(located)) ?? located);
  if (outcome.kind === 'not_due' && current.last_request_key === request.idempotencyKey) {
    return { replayed: true, outcome, subscription: current };
  }
  return { replayed: false, outcome, subscription: current };
}

/** Waive (operator): writes a period off without payment; the reason is required and audited. */
export async function waive(deps: AttemptDeps, request: ActorRequest & { readonly reason: string }): Promise<BillingRecord> {
  return withLockedSubscription(deps, request, async (read) => {
    const now = deps.clock.now();
    const after = applyBillingEvent(read, 'WAIVED', now, { process: 'UNKNOWN', updatedEvent: 'WAIVED' });
    const next = read.billing_status === 'PENDING' || read.billing_status === 'PAUSED'
      ? nextPeriodRecord(after, now, deps.ids, after.last_run_date)
      : undefined;
    await deps.billing.commit({
      writes: [{ kind: 'update', record: after, expectedVersion: read.version }],
      history: [historyRowOf(after, { actor: request.actor, reason: request.reason })],
      ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}),
    });
    return after;
  });
}

/**
 * Due-date change (DESIGN 8): delete-then-put in one transaction. Refused with `unbilled_period`
 * when the period is already due and unbilled.
 */
export async function changeBillingDate(
  deps: AttemptDeps,
  request: ActorRequest & { readonly billingDate: string },
): Promise<BillingRecord> {
  return withLockedSubscription(deps, request, async (read) => {
    const now = deps.clock.now();
    if ((read.billing_status === 'PENDING' || read.billing_status === 'FAILED') && Date.parse(read.billing_date) <= now.getTime()) {
      throw new UnbilledPeriodError(`subscription ${read.subscription_id} is due and unbilled; bill or waive it first`);
    }
    if (Date.parse(request.billingDate) <= now.getTime()) {
      throw new PreconditionFailedError('billing_date_in_past', 'the new billing date must be in the future');
    }
    if (request.billingDate === read.billing_date) return read;
    const moved = applyBillingEvent(read, 'DUE_DATE_CHANGED', now, {
      updatedEvent: 'DUE_DATE_CHANGED',
      set: { billing_date: request.billingDate, version: 0 },
    });
    moved.version = 0;
    const deletedRow = historyRowOf({ ...read, last_run_date: moved.last_run_date, updated_event: 'DUE_DATE_CHANGED', version: read.version + 1 }, { actor: request.actor, reason: request.reason });
    const createdRow = historyRowOf({ ...moved, last_run_date: freshStamp(now, moved.last_run_date) }, { actor: request.actor, reason: request.reason });
    moved.last_run_date = createdRow.last_run_date;
    await deps.billing.commit({
      writes: [
        { kind: 'delete', key: read, expectedVersion: read.version },
        { kind: 'create', record: moved },
      ],
      history: [deletedRow, createdRow],
    });
    return moved;
  });
}
