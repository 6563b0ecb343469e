import { withIntent } from '../../billing-record.js';
import { isCollectibleAndDue } from '../../collectible.js';
import { isCancelRequested, rememberEvent } from '../../intent.js';
import type { BillingRecord } from '../../records.js';
import { changed, commitAll, type LockedContext } from './change.js';
import { collectDue, scheduledProcess } from './collect-due.js';
import type { MembershipOutcome } from './outcome.js';
import { chainHead, hasOpenPeriodWithoutSuccessor, PAUSABLE_HEADS, successorsUntilNotDue } from './periods.js';

export async function pause(ctx: LockedContext, read: BillingRecord[], months: number): Promise<MembershipOutcome> {
  const { attempts, records } = await collectDue(ctx, scheduledProcess, read);
  const newest = chainHead(records);
  const now = ctx.deps.clock.now();
  if (!newest) return { kind: 'ignored', reason: 'no_open_period', attempts };
  if (isCancelRequested(newest)) return { kind: 'ignored', reason: 'cancel_requested', attempts };
  if (newest.billing_status === 'PAUSED') return { kind: 'ignored', reason: 'already_paused', attempts };
  if (newest.billing_status === 'PENDING' && !isCollectibleAndDue(newest, now)) {
    const after = changed(ctx, newest, 'PAUSED', 'PAUSED', { paused_months: months });
    return { kind: 'applied', written: await commitAll(ctx.deps, [{ read: newest, after }]), attempts };
  }
  if (hasOpenPeriodWithoutSuccessor(newest, PAUSABLE_HEADS, records)) {
    const chain = successorsUntilNotDue(ctx, newest, (record) =>
      withIntent(record, { ...rememberEvent(record, ctx.event), paused_months: months }, { billing_status: 'PAUSED', updated_event: 'PAUSED' }),
    );
    return { kind: 'applied', written: await commitAll(ctx.deps, [], chain), attempts };
  }
  return { kind: 'ignored', reason: 'no_open_period', attempts };
}
