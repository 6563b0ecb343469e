import { isCollectibleAndDue } from '../../collectible.js';
import { dueKey } from '../../ladder.js';
import type { BillingRecord, Process } from '../../records.js';
import { runCollectionAttempt, type AttemptOutcome } from '../collect.js';
import type { Ctx } from './change.js';
import { recentRecords } from './periods.js';

/** Due periods attempted by one PAUSE, CANCEL or REACTIVATE before the change lands. */
const MAX_CATCH_UP = 12;

/**
 * Attempts every due period of the user, oldest first, through the one collection attempt under
 * the lock already held. A period the attempt cannot finish stays due and owed: the collections
 * run keeps trying it on its ladder. Returns the attempts and the user's records as they stand
 * after them, for the change that follows.
 *
 * `read`: the records this event already read under the same lock hold; reused until an attempt
 * runs (only a lock holder creates periods, and every update is fenced on the version it read,
 * so reading them again before anything was written here would return the same decision input).
 * Absent: read first (after this event wrote something itself).
 */
export async function collectDue(
  ctx: Ctx,
  processFor: (record: BillingRecord) => Process,
  read?: BillingRecord[],
): Promise<{ attempts: AttemptOutcome[]; records: BillingRecord[] }> {
  const attempts: AttemptOutcome[] = [];
  const tried = new Set<string>();
  let records = read ?? (await recentRecords(ctx.deps, ctx.event.user_id));
  for (let i = 0; i < MAX_CATCH_UP; i += 1) {
    const now = ctx.deps.clock.now();
    const due = records
      .filter((r) => isCollectibleAndDue(r, now) && !tried.has(r.subscription_id))
      .sort((a, b) => (a.billing_date < b.billing_date ? -1 : 1))[0];
    if (!due) break;
    tried.add(due.subscription_id);
    // The lease names the period's work (its due key) before its attempt can reach the processor: a
    // dead holder's next one knows; once this attempt is recorded, the key no longer matches.
    await ctx.lock.declarePurpose(dueKey(due));
    attempts.push(
      await runCollectionAttempt(ctx.deps, {
        key: due,
        process: processFor(due),
        owner: ctx.request.owner,
        heldLock: ctx.lock,
        ...(ctx.request.signal ? { signal: ctx.request.signal } : {}),
      }),
    );
    records = await recentRecords(ctx.deps, ctx.event.user_id);
  }
  return { attempts, records };
}

export const scheduledProcess = (r: BillingRecord): Process => (r.billing_status === 'FAILED' ? 'RETRY' : 'SCHEDULED');
