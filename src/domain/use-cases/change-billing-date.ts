import { applyIntentChange, freshStamp, historyRowOf, withSuccessorLink } from '../billing-record.js';
import { isPeriodAt, sameChain } from '../chain.js';
import { isCollectibleAndDue } from '../collectible.js';
import { PreconditionFailedError, UnbilledPeriodError } from '../errors.js';
import { intentOf, successorPlan } from '../intent.js';
import { MAY_BE_OPEN_STATUSES } from '../statuses.js';
import type { BillingRecord } from '../records.js';
import { toDate } from '../time.js';

import { withLockedSubscription, type ActorRequest } from './locked-subscription.js';

/**
 * Delete-then-put in one transaction, refused (`unbilled_period`) while the period is due and unbilled.
 * Only the billing anchor moves; a cancel request or pause stays. A predecessor that may still open
 * this period is linked to the new date in the same transaction, so none opens one at the old date.
 */
export async function changeBillingDate(
  deps: UseCaseDeps,
  request: ActorRequest & { readonly billingDate: string },
): Promise<BillingRecord> {
  return withLockedSubscription(deps, request, async (read) => {
    const now = deps.clock.now();
    if (isCollectibleAndDue(read, now)) {
      throw new UnbilledPeriodError(`subscription ${read.subscription_id} is due and unbilled; bill or waive it first`);
    }
    if (Date.parse(request.billingDate) <= now.getTime()) {
      throw new PreconditionFailedError('billing_date_in_past', 'the new billing date must be in the future');
    }
    if (request.billingDate === read.billing_date) return read;
    const intent = { ...intentOf(read), billing_anchor_day: toDate(request.billingDate).getUTCDate() };
    const moved = applyIntentChange(read, 'DUE_DATE_CHANGED', now, intent, {
      updatedEvent: 'DUE_DATE_CHANGED',
      set: { billing_date: request.billingDate },
    });
    // The period keeps counting its versions (DESIGN 11): its events' `sequence` orders across the move.
    const deletedRow = historyRowOf({ ...read, last_run_date: moved.last_run_date, updated_event: 'DUE_DATE_CHANGED', version: read.version + 1 }, { actor: request.actor, reason: request.reason, billing_event: 'DUE_DATE_CHANGED' });
    const createdRow = historyRowOf({ ...moved, last_run_date: freshStamp(now, moved.last_run_date) }, { actor: request.actor, reason: request.reason, billing_event: 'DUE_DATE_CHANGED' });
    moved.last_run_date = createdRow.last_run_date;
    const predecessor = await openPredecessor(deps, read);
    const linked = predecessor ? withSuccessorLink(predecessor, request.billingDate, now) : undefined;
    await deps.billing.commit({
      writes: [
        { kind: 'delete', read },
        { kind: 'create', record: moved },
        ...(predecessor && linked ? [{ kind: 'update' as const, read: predecessor, record: linked }] : []),
      ],
      history: [deletedRow, createdRow, ...(linked ? [historyRowOf(linked, { actor: request.actor, reason: request.reason })] : [])],
    });
    return moved;
  });
}

import type { UseCaseDeps } from './deps.js';

/** Records of the user searched for the moved period's predecessor (newest first). */
const PREDECESSOR_SEARCH = 24;

/** The period of `read`'s chain, open or able to open again, whose successor is `read` (displaced or not). */
async function openPredecessor(deps: UseCaseDeps, read: BillingRecord): Promise<BillingRecord | undefined> {
  const records = (await deps.billing.listByUser(read.user_id, { limit: PREDECESSOR_SEARCH })).items;
  return records.find((r) => {
    if (r.subscription_id === read.subscription_id || !MAY_BE_OPEN_STATUSES.has(r.billing_status) || !sameChain(r, read)) return false;
    const next = successorPlan(r)?.billing_date;
    return next !== undefined && isPeriodAt(read, next);
  });
}
