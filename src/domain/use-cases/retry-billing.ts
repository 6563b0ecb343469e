import { applyBillingEvent, historyRowOf } from '../billing-record.js';
import { isCollectibleAndDue, isHoldCode, PAYMENT_EXCEPTION_CODE, PAYMENT_EXCEPTION_MESSAGE } from '../collectible.js';
import { hasCardException } from '../due-work.js';
import { decideInstrument, type InstrumentsItem } from '../instruments/attempt.js';
import { refusalMessage } from '../instruments/gate.js';
import type { HeldLock } from '../lock.js';
import { PaymentHoldError } from '../errors.js';
import { resetDunning } from '../dunning.js';
import { billingFailureView, type BillingFailureView } from '../ladder.js';
import type { BillingRecord } from '../records.js';
import { COLLECTED_STATUSES } from '../statuses.js';
import { auditRefusal } from './audit-refusal.js';
import { runCollectionAttempt, saveFailure, type AttemptOutcome } from './collect.js';
import type { UseCaseDeps } from './deps.js';
import { withLockedSubscription, type ActorRequest } from './locked-subscription.js';
import { movedMoney, withinDailyDebitLimit } from '../person-debits.js';

export const NO_PROGRESS_ERROR = 'The attempt completed but the subscription is still due.';

/** `not_billed`: nothing was charged and nothing is owed now (the member is inactive, the period cancelled or not yet due). */
export interface RetryBillingResult {
  readonly outcome: 'billed' | 'failed' | 'still_due' | 'not_billed';
  readonly billing_failure?: BillingFailureView;
  readonly still_due: boolean;
  readonly subscription: BillingRecord;
  readonly attempt: AttemptOutcome['kind'];
}

/**
 * Operator retry: under the lock, clears the saved failure, then runs the attempt inline. A hold is
 * refused before the clear (409); after it the answer is one of three outcomes, never an error.
 */
export async function retryBilling(deps: UseCaseDeps, request: ActorRequest): Promise<RetryBillingResult> {
  return withLockedSubscription(deps, request, async (read, lock, instruments) => {
    const now = deps.clock.now();
    // The instrument the attempt would use decides, so the 409 comes before anything is written.
    if (isCollectibleAndDue(read, now)) {
      const { refusal } = decideInstrument(read, instruments, await deps.accounts.getAccount(read.user_id, request.signal), now, 'OPERATOR_RETRY');
      if (refusal) {
        await auditRefusal(deps, read, refusal, request);
        throw new PaymentHoldError(refusal.code, refusalMessage(refusal.code), refusal);
      }
    }
    if (isCollectibleAndDue(read, now) && hasCardException(read)) throw new PaymentHoldError(PAYMENT_EXCEPTION_CODE, PAYMENT_EXCEPTION_MESSAGE);
    // A due period's debit is reserved under the daily cap (DESIGN 15) before anything is written: a 409 leaves the record as it was.
    const cap = isCollectibleAndDue(read, now) ? deps.personDebits : undefined;
    return withinDailyDebitLimit(cap, deps.clock, { userId: read.user_id, cents: read.amount_cents }, () => clearAndAttempt(deps, request, read, lock, instruments), (result) => movedMoney({ kind: result.attempt }));
  });
}

/** Clears the saved failure, then runs the attempt under the lock the caller holds. */
async function clearAndAttempt(deps: UseCaseDeps, request: ActorRequest, read: BillingRecord, lock: HeldLock, instruments: InstrumentsItem): Promise<RetryBillingResult> {
  const now = deps.clock.now();
  const cleared = applyBillingEvent(read, 'BILLING_RETRY_REQUESTED', now, {
    process: 'OPERATOR_RETRY',
    updatedEvent: 'BILLING_RETRY_REQUESTED',
    set: {
      billing_failed_for: undefined,
      billing_failure_count: undefined,
      billing_failed_at: undefined,
      billing_next_attempt_at: undefined,
      billing_last_error: undefined,
      // The dunning schedule starts again with the next decline.
      ...resetDunning(read),
    },
  });
  await deps.billing.commit({
    writes: [{ kind: 'update', read, record: cleared }],
    history: [historyRowOf(cleared, { actor: request.actor, reason: request.reason, run_id: request.runId })],
  });

  let outcome: AttemptOutcome;
  try {
    // The cleared record is what the store holds now: the attempt does not read it again.
    outcome = await runCollectionAttempt(deps, {
      key: read,
      read: cleared,
      instruments,
      process: 'OPERATOR_RETRY',
      owner: request.owner,
      heldLock: lock,
      releaseHeldLock: true,
      actor: request.actor,
      reason: request.reason,
      runId: request.runId,
      ...(request.signal ? { signal: request.signal } : {}),
    });
  } catch {
    outcome = { kind: 'failed_uncounted', class: 'transient', record: cleared };
  }
  return retryResult(deps, read, cleared, outcome, request);
}

async function retryResult(
  deps: UseCaseDeps,
  read: BillingRecord,
  cleared: BillingRecord,
  outcome: AttemptOutcome,
  request: ActorRequest,
): Promise<RetryBillingResult> {
  const base = { attempt: outcome.kind };
  switch (outcome.kind) {
    case 'collected':
    case 'submitted':
      return { ...base, outcome: 'billed', still_due: false, subscription: outcome.record };
    case 'cancelled':
    case 'inactive':
    case 'pause_advanced':
      return { ...base, outcome: 'not_billed', still_due: false, subscription: outcome.record };
    case 'declined':
      return { ...base, outcome: 'failed', still_due: false, subscription: outcome.record };
    case 'failed_counted':
      return { ...base, outcome: 'failed', billing_failure: outcome.failure, still_due: false, subscription: outcome.record };
    case 'failed_uncounted':
    case 'skipped_locked':
      return { ...base, outcome: 'still_due', still_due: true, subscription: ('record' in outcome && outcome.record) || cleared };
    case 'held':
      // A hold that landed after the check (the ach-handler takes no lock): nothing presented.
      return { ...base, outcome: 'still_due', still_due: true, subscription: outcome.record };
    case 'not_due':
    case 'gate_closed': {
      // A hold that landed after the check (the ach-handler takes no lock) or a network ceiling: nothing presented.
      if (outcome.kind === 'not_due' && (isHoldCode(outcome.reason) || outcome.reason === 'network_ceiling' || outcome.reason === 'exception')) {
        return { ...base, outcome: 'still_due', still_due: true, subscription: outcome.record ?? cleared };
      }
      const current = (await deps.billing.get(read)) ?? cleared;
      if (!isCollectibleAndDue(current, deps.clock.now())) {
        // Collected by another path meanwhile, or simply not owed now: only the first is billed.
        return { ...base, outcome: COLLECTED_STATUSES.has(current.billing_status) ? 'billed' : 'not_billed', still_due: false, subscription: current };
      }
      // A clean return that leaves the subscription due is saved as "no progress".
      const saved = await saveFailure(deps, current, NO_PROGRESS_ERROR, deps.clock.now(), { ...request, process: 'OPERATOR_RETRY' });
      if (!saved) return { ...base, outcome: 'still_due', still_due: true, subscription: current };
      return { ...base, outcome: 'failed', billing_failure: billingFailureView(saved)!, still_due: false, subscription: saved };
    }
  }
}

