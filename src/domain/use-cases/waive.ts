import { applyIntentChange, historyRowOf, successorRecord } from '../billing-record.js';
import { ATTEMPT_OUTCOME_UNKNOWN, ATTEMPT_OUTCOME_UNKNOWN_MESSAGE, mayHoldUnrecordedCharge } from '../takeover.js';
import { PaymentHoldError } from '../errors.js';
import { intentOf } from '../intent.js';
import type { BillingRecord } from '../records.js';
import type { UseCaseDeps } from './deps.js';
import { withLockedSubscription, type ActorRequest } from './locked-subscription.js';

/**
 * Writes a period off without payment, the reason audited; the member's intent decides the successor.
 * A period whose key the processor may hold unrecorded is refused (409 `attempt_outcome_unknown`):
 * only a retry with that key can tell, and resending it here would charge the period being waived.
 */
export async function waive(deps: UseCaseDeps, request: ActorRequest & { readonly reason: string }): Promise<BillingRecord> {
  return withLockedSubscription(deps, request, async (read, lock) => {
    if (mayHoldUnrecordedCharge(read, lock.takenOver)) throw new PaymentHoldError(ATTEMPT_OUTCOME_UNKNOWN, ATTEMPT_OUTCOME_UNKNOWN_MESSAGE);
    const now = deps.clock.now();
    // The waived month is spent like a skipped one: paused_months moves to the successor.
    const { paused_months: _spent, ...intent } = intentOf(read);
    const after = applyIntentChange(read, 'WAIVED', now, intent, { process: 'UNKNOWN', updatedEvent: 'WAIVED' });
    // A FAILED period opened its successor when it left PENDING.
    const opensSuccessor = read.billing_status === 'PENDING' || read.billing_status === 'PAUSED';
    const next = opensSuccessor ? successorRecord(read, now, deps.ids, after.last_run_date) : undefined;
    await deps.billing.commit({
      writes: [{ kind: 'update', read, record: after }],
      history: [historyRowOf(after, { actor: request.actor, reason: request.reason })],
      ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}),
    });
    return after;
  });
}
