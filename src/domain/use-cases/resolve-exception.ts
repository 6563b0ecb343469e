import { PaymentHoldError, ProcessorError } from '../errors.js';
import { checkRefund, ExceptionResolutionError, receivedMoneyOf, RESOLUTION_EVENTS, resolveException, type Resolution } from '../exception-resolution.js';
import type { BillingRecord } from '../records.js';
import { ATTEMPT_OUTCOME_UNKNOWN, ATTEMPT_OUTCOME_UNKNOWN_MESSAGE, mayHoldUnrecordedCharge } from '../takeover.js';
import { billingTransitions } from '../transitions.js';
import type { UseCaseDeps } from './deps.js';
import { withLockedSubscription, type ActorRequest } from './locked-subscription.js';

/**
 * An operator closes a period's exception (DESIGN 12) under the user's lock: accept the money as the
 * payment, waive the period, or, once the money went back (the processor must know the refund),
 * make the period owed in full again. Nothing is presented: no resolution charges.
 */
export async function resolvePeriodException(deps: UseCaseDeps, request: ActorRequest & Resolution): Promise<BillingRecord> {
  return withLockedSubscription(deps, request, async (read, lock) => {
    const money = receivedMoneyOf(read);
    if (!money) throw new ExceptionResolutionError('no_exception', `subscription ${read.subscription_id} carries no exception that received money`);
    // The status check first: a refund lookup for a period no resolution may leave would be wasted.
    billingTransitions.apply(read.billing_status, RESOLUTION_EVENTS[request.resolution]);
    if (mayHoldUnrecordedCharge(read, lock.takenOver)) throw new PaymentHoldError(ATTEMPT_OUTCOME_UNKNOWN, ATTEMPT_OUTCOME_UNKNOWN_MESSAGE);
    if (request.resolution === 'refunded_retry') {
      const refundId = request.refund_id ?? '';
      if (!deps.processor.findRefund) throw new ProcessorError('refund_lookup_unavailable', 'the processor of this rail cannot look up refunds');
      checkRefund(money, refundId, await deps.processor.findRefund({ refund_id: refundId, rail: read.payment_method }, request.signal));
    }
    const { after, tx } = resolveException(read, money, request, deps.clock.now(), deps.ids);
    await deps.billing.commit(tx);
    return after;
  });
}
