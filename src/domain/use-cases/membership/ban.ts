import { successorRecord, withIntent } from '../../billing-record.js';
import { mayHoldUnrecordedCharge } from '../../takeover.js';
import { rememberEvent } from '../../intent.js';
import type { BillingRecord } from '../../records.js';
import { changed, commitAll, type LockedContext } from './change.js';
import type { MembershipOutcome } from './outcome.js';
import { hasOpenPeriodWithoutSuccessor, PAUSABLE_HEADS } from './periods.js';

/**
 * Deactivates the open periods, except one whose key the processor may hold unrecorded: it stays owed
 * so a retry resends that key and records what was taken; the ban lands on its next period instead.
 */
export async function ban(ctx: LockedContext, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
  const open = records.filter((r) => r.billing_status === 'PENDING' || r.billing_status === 'FAILED' || r.billing_status === 'PAUSED');
  if (open.length === 0) return { kind: 'ignored', reason: 'no_open_period', attempts: [] };
  const unresolved = open.filter((r) => mayHoldUnrecordedCharge(r, ctx.lock.takenOver));
  const updates = open.filter((r) => !unresolved.includes(r)).map((read) => ({ read, after: changed(ctx, read, 'USER_NOT_ACTIVE', 'USER_BANNED') }));
  const creates = unresolved.flatMap((held) => {
    if (!hasOpenPeriodWithoutSuccessor(held, PAUSABLE_HEADS, records)) return [];
    const next = successorRecord(held, ctx.deps.clock.now(), ctx.deps.ids, held.last_run_date);
    return next ? [{ ...withIntent(next, rememberEvent(next, ctx.event), { updated_event: 'USER_BANNED' }), billing_status: 'INACTIVE' as const }] : [];
  });
  if (updates.length === 0 && creates.length === 0) return { kind: 'ignored', reason: 'no_open_period', attempts: [] };
  return { kind: 'applied', written: await commitAll(ctx.deps, updates, creates), attempts: [] };
}
