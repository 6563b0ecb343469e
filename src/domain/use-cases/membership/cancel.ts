import { isCancelRequested } from '../../intent.js';
import type { BillingRecord } from '../../records.js';
import { cancelRequested, changed, commitAll, type LockedContext } from './change.js';
import { collectDue, scheduledProcess } from './collect-due.js';
import type { MembershipOutcome } from './outcome.js';
import { CANCELLABLE_HEADS, chainHead, hasOpenPeriodWithoutSuccessor, notYetDue, successorsUntilNotDue } from './periods.js';

export async function cancel(ctx: LockedContext, read: BillingRecord[]): Promise<MembershipOutcome> {
  const { attempts, records } = await collectDue(ctx, scheduledProcess, read);
  const newest = chainHead(records);
  const now = ctx.deps.clock.now();
  if (!newest) return { kind: 'ignored', reason: 'no_open_period', attempts };
  if (newest.billing_status === 'PAUSED') {
    // A paused period owes nothing: cancel it now (the pause run would otherwise skip past it).
    const after = changed(ctx, newest, 'CANCEL_COMPLETED', 'CANCEL_COMPLETED', { paused_months: undefined });
    return { kind: 'applied', written: await commitAll(ctx.deps, [{ read: newest, after }]), attempts };
  }
  if (isCancelRequested(newest)) return { kind: 'ignored', reason: 'cancel_requested', attempts };
  if ((newest.billing_status === 'PENDING' || newest.billing_status === 'INACTIVE') && notYetDue(newest, now)) {
    const after = changed(ctx, newest, 'CANCEL_REQUESTED', 'CANCEL_REQUESTED', { cancel_requested_at: ctx.event.occurred_at });
    return { kind: 'applied', written: await commitAll(ctx.deps, [{ read: newest, after }]), attempts };
  }
  if (hasOpenPeriodWithoutSuccessor(newest, CANCELLABLE_HEADS, records)) {
    const chain = successorsUntilNotDue(ctx, newest, (record) => cancelRequested(ctx, record));
    return { kind: 'applied', written: await commitAll(ctx.deps, [], chain), attempts };
  }
  return { kind: 'ignored', reason: 'no_open_period', attempts };
}
