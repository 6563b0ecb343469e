import { applyIntentChange, freshStamp, historyRowOf } from '../billing-record.js';
import { isCollectibleAndDue } from '../collectible.js';
import { PreconditionFailedError, UnbilledPeriodError } from '../errors.js';
import { intentOf } from '../intent.js';
import type { BillingRecord } from '../records.js';
import { toDate } from '../time.js';
import type { AttemptDeps } from './collect.js';
import { withLockedSubscription, type ActorRequest } from './locked-subscription.js';

/**
 * Due-date change (DESIGN 8): delete-then-put in one transaction. Refused with `unbilled_period`
 * when the period is already due and unbilled. It moves the billing anchor, and only the anchor
 * (DESIGN 2.9): the periods after it follow the new date's day; a cancel request or pause stays.
 */
export async function changeBillingDate(
  deps: AttemptDeps,
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
