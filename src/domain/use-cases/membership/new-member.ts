import { firstBillingRecord } from '../../billing-record.js';
import { AlreadyExistsError } from '../../errors.js';
import { appliedEventIds, hasOpenChain } from '../../intent.js';
import type { MembershipEvent } from '../../membership-events.js';
import type { BillingRecord } from '../../records.js';
import { commitAll, type LockedContext } from './change.js';
import type { MembershipOutcome } from './outcome.js';

export async function newMember(ctx: LockedContext, records: readonly BillingRecord[], event: Extract<MembershipEvent, { type: 'NEW' }>): Promise<MembershipOutcome> {
  // One billing chain per user (DESIGN 2.9): a second NEW while one is open would bill twice.
  if (hasOpenChain(records)) return { kind: 'ignored', reason: 'already_member', attempts: [] };
  const record = firstBillingRecord(
    {
      user_id: event.user_id,
      amount_cents: event.plan.amount,
      term: event.plan.term,
      tier: event.plan.tier,
      payment_method: event.plan.payment_method,
      account_last_four: event.plan.account_last_four,
      first_billing_date: event.plan.first_billing_date,
      friday_billing: event.plan.friday_billing,
      membership_event: event,
    },
    ctx.deps.clock.now(),
    ctx.deps.ids,
  );
  try {
    return { kind: 'applied', written: await commitAll(ctx.deps, [], [record]), attempts: [] };
  } catch (error) {
    if (!(error instanceof AlreadyExistsError)) throw error;
    const existing = await ctx.deps.billing.get(record);
    if (existing && appliedEventIds(existing).includes(event.event_id)) return { kind: 'duplicate' };
    return { kind: 'ignored', reason: 'period_exists', attempts: [] };
  }
}
