import { applyIntentChange, historyRowOf, successorRecord } from '../billing-record.js';
import { ATTEMPT_OUTCOME_UNKNOWN, ATTEMPT_OUTCOME_UNKNOWN_MESSAGE, mayHoldUnrecordedCharge } from '../takeover.js';
import { PaymentHoldError } from '../errors.js';
import { intentOf } from '../intent.js';
import type { BillingRecord } from '../records.js';
import type { AttemptDeps } from './collect.js';
import { withLockedSubscription, type ActorRequest } from './locked-subscription.js';

/**
 * Waive (operator): writes a period off without payment; the reason is required and audited. The
 * member's intent decides what follows, as for any period: no successor after a cancel request, and
 * a waived paused month still counts as one of the pause's months (the rest of the pause is kept).
 *
 * A period whose current key the processor may hold (an attempt presented it and its outcome is not
 * recorded) is not written off blind: 409 `attempt_outcome_unknown`, nothing changed. Resending the
 * key here would charge the period being waived when the processor does not hold it; retry-billing
 * (or the scheduled retry) resolves it with the same key, then the waive can follow.
 */
export async function waive(deps: AttemptDeps, request: ActorRequest & { readonly reason: string }): Promise<BillingRecord> {
  return withLockedSubscription(deps, request, async (read, lock) => {
    // (A dead holder's lease naming this period is handed back when the lock is left: withUserLock.)
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
