import { isHoldCode, PAYMENT_EXCEPTION_CODE, PAYMENT_EXCEPTION_MESSAGE } from '../collectible.js';
import { LockedError, PaymentHoldError } from '../errors.js';
import { refusalMessage, refusalOf } from '../instruments/gate.js';
import { dueGate } from '../due-work.js';
import { movedMoney, withinDailyDebitLimit } from '../person-debits.js';
import { allHolds } from '../instruments/instrument.js';
import { releaseUserHeldPeriods } from './release-held.js';
import type { BillingRecord } from '../records.js';
import { auditRefusal } from './audit-refusal.js';
import { runCollectionAttempt, type AttemptOutcome } from './collect.js';
import type { UseCaseDeps } from './deps.js';
import { findSubscription, withLockedSubscription, type ActorRequest } from './locked-subscription.js';

export interface ManualPayResult {
  readonly replayed: boolean;
  readonly outcome: AttemptOutcome;
  readonly subscription: BillingRecord;
}

/**
 * The attempt with process MANUAL. A repeat of the Idempotency-Key answers the record as it is, never
 * re-run; a hold is a PaymentHoldError (409), refused before anything was presented or written.
 */
export async function manualPay(
  deps: UseCaseDeps,
  request: ActorRequest & { readonly idempotencyKey: string },
): Promise<ManualPayResult> {
  try {
    return await withLockedSubscription(deps, request, async (read, lock, instruments) => {
      if (read.last_request_key === request.idempotencyKey) return replay(read);
      const attempt = () => runCollectionAttempt(deps, {
        key: read,
        read,
        instruments,
        heldLock: lock,
        releaseHeldLock: true,
        process: 'MANUAL',
        owner: request.owner,
        actor: request.actor,
        reason: request.reason,
        requestKey: request.idempotencyKey,
        ...(request.signal ? { signal: request.signal } : {}),
      });
      // Only a period the attempt would present counts against the daily cap (DESIGN 15).
      const presents = dueGate(read, deps.clock.now(), 'MANUAL') === undefined;
      const outcome = presents ? await withinDailyDebitLimit(deps.personDebits, deps.clock, { userId: read.user_id, cents: read.amount_cents }, attempt, movedMoney) : await attempt();
      const refusal = outcome.kind === 'held' ? outcome.refusal : outcome.kind === 'not_due' && isHoldCode(outcome.reason) ? refusalOf(outcome.reason) : undefined;
      if (refusal) {
        await auditRefusal(deps, read, refusal, request);
        throw new PaymentHoldError(refusal.code, refusalMessage(refusal.code), refusal);
      }
      if (outcome.kind === 'not_due' && outcome.reason === 'exception') throw new PaymentHoldError(PAYMENT_EXCEPTION_CODE, PAYMENT_EXCEPTION_MESSAGE);
      // Paid on an instrument no hold binds: the user's periods held on another one come back (DESIGN 3.2).
      if ((outcome.kind === 'collected' || outcome.kind === 'submitted') && allHolds(instruments).length > 0) {
        await releaseUserHeldPeriods(deps, read.user_id, { actor: request.actor, reason: 'a manual pay on another instrument succeeded' });
      }
      const current = 'record' in outcome && outcome.record ? outcome.record : ((await deps.billing.get(read)) ?? read);
      if (outcome.kind === 'not_due' && current.last_request_key === request.idempotencyKey) {
        return { replayed: true, outcome, subscription: current };
      }
      return { replayed: false, outcome, subscription: current };
    });
  } catch (error) {
    if (!(error instanceof LockedError)) throw error;
    // Another invocation holds the lock: a repeat already answered is still answered; anything else is 409.
    const current = await findSubscription(deps, request.subscriptionId);
    if (current.last_request_key === request.idempotencyKey) return replay(current);
    throw error;
  }
}

function replay(record: BillingRecord): ManualPayResult {
  return { replayed: true, outcome: { kind: 'not_due', reason: 'status', record }, subscription: record };
}
