import { isCollectibleAndDue } from '../../collectible.js';
import type { BillingRecord, Process } from '../../records.js';
import { runCollectionAttempt, type AttemptOutcome } from '../collect.js';
import type { LockedContext } from './change.js';
import { recentRecords } from './periods.js';

/** Due periods attempted by one PAUSE, CANCEL or REACTIVATE before the change lands. */
const MAX_CATCH_UP = 12;

/**
 * Attempts the user's due periods, oldest first, under the lock already held; one it cannot finish
 * stays owed on its ladder. `read` (this hold's read) is reused until an attempt writes: only a lock
 * holder creates periods. Returns the attempts and the records as they stand after them.
 */
export async function collectDue(
  ctx: LockedContext,
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
