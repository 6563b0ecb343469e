import { HOLD_MESSAGES, isHoldCode } from '../collectible.js';
import { PaymentHoldError } from '../errors.js';
import type { BillingRecord } from '../records.js';
import { runCollectionAttempt, type AttemptDeps, type AttemptOutcome } from './collect.js';
import { findSubscription, type ActorRequest } from './locked-subscription.js';

export interface ManualPayResult {
  readonly replayed: boolean;
  readonly outcome: AttemptOutcome;
  readonly subscription: BillingRecord;
}

/**
 * Manual pay (DESIGN 8): the attempt with process MANUAL. A repeat of the same Idempotency-Key is
 * answered with the record as it is, never re-run. A hold (DESIGN 3.1) is a PaymentHoldError
 * (409 with the hold's code): the attempt's gate refused it before anything was presented or written.
 */
export async function manualPay(
  deps: AttemptDeps,
  request: ActorRequest & { readonly idempotencyKey: string },
): Promise<ManualPayResult> {
  const located = await findSubscription(deps, request.subscriptionId);
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
  if (outcome.kind === 'not_due' && isHoldCode(outcome.reason)) throw new PaymentHoldError(outcome.reason, HOLD_MESSAGES[outcome.reason]);
  const current = 'record' in outcome && outcome.record ? outcome.record : ((await deps.billing.get(located)) ?? located);
  if (outcome.kind === 'not_due' && current.last_request_key === request.idempotencyKey) {
    return { replayed: true, outcome, subscription: current };
  }
  return { replayed: false, outcome, subscription: current };
}

