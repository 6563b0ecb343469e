import type { MembershipEvent } from '../../membership-events.js';
import type { UseCaseDeps } from '../deps.js';
import { cancelRequested, changed, commitAll, type ChangeContext } from './change.js';
import type { MembershipOutcome } from './outcome.js';
import { CANCELLABLE_HEADS, chainHead, hasOpenPeriodWithoutSuccessor, notYetDue, recentRecords, replayOf, successorsUntilNotDue } from './periods.js';

/**
 * Cancels paused and not-yet-due periods, each write fenced on the version read (no lock). A due
 * period stays owed; its missing next period is created with a cancel request, so nothing renews.
 */
export async function closeAccount(deps: UseCaseDeps, event: Extract<MembershipEvent, { type: 'CLOSEACCOUNT' }>): Promise<MembershipOutcome> {
  const records = await recentRecords(deps, event.user_id);
  const replay = replayOf(records, event);
  if (replay) return replay;
  const now = deps.clock.now();
  const ctx: ChangeContext = { deps, event };
  const targets = records.filter(
    (r) => r.billing_status === 'PAUSED' || ((r.billing_status === 'PENDING' || r.billing_status === 'INACTIVE') && notYetDue(r, now)),
  );
  const updates = targets.map((read) => ({
    read,
    after: changed(ctx, read, 'ACCOUNT_CLOSED', 'ACCOUNT_CLOSED', { paused_months: undefined }),
  }));
  const newest = chainHead(records);
  const owedHead = newest !== undefined && !notYetDue(newest, now) && hasOpenPeriodWithoutSuccessor(newest, CANCELLABLE_HEADS, records) && newest.billing_status !== 'COMPLETED';
  const creates = owedHead ? successorsUntilNotDue(ctx, newest, (record) => cancelRequested(ctx, record)) : [];
  if (updates.length === 0 && creates.length === 0) return { kind: 'ignored', reason: 'no_open_period', attempts: [] };
  return { kind: 'applied', written: await commitAll(deps, updates, creates), attempts: [] };
}
