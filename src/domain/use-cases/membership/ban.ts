import { successorRecord, withIntent } from '../../billing-record.js';
import { mayHoldUnrecordedCharge } from '../../collectible.js';
import { rememberEvent } from '../../intent.js';
import type { BillingRecord } from '../../records.js';
import { changed, commitAll, type Ctx } from './change.js';
import type { MembershipOutcome } from './outcome.js';
import { hasOpenPeriodWithoutSuccessor, PAUSABLE_HEADS } from './periods.js';

/**
 * BAN deactivates the user's open periods, except one whose current key the processor may hold (an
 * attempt presented it while the member was active and its outcome is not recorded): that one stays
 * owed, so the ladder's retry resends the same key and records what the processor took (F11); the
 * ban lands on its next period instead (created INACTIVE now, so the retry's next-period create finds
 * it).
 */
export async function ban(ctx: Ctx, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
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
  // A dead holder's lease naming the unresolved period is handed back when the lock is left (withUserLock).
  return { kind: 'applied', written: await commitAll(ctx.deps, updates, creates), attempts: [] };
}
