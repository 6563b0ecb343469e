import { applyBillingEvent, historyRowOf } from '../billing-record.js';
import { holdOf } from '../collectible.js';
import { ConcurrentModificationError } from '../errors.js';
import { decideInstrument, heldIndexAt, isHoldRefusal } from '../instruments/attempt.js';
import type { AccountDirectory } from '../ports/account-directory.js';
import type { BillingStore } from '../ports/billing-store.js';
import type { Clock } from '../ports/clock.js';
import type { BillingRecord } from '../records.js';

/** Held periods back on the schedule (DESIGN 3.2): when no hold binds the instrument they would use now. */

export interface ReleaseHeldDeps {
  readonly billing: Pick<BillingStore, 'getForAttempt' | 'commit' | 'listByUser'> & Partial<Pick<BillingStore, 'listHeld'>>;
  readonly accounts: AccountDirectory;
  readonly clock: Clock;
}

export interface ReleaseAudit {
  readonly actor?: string | undefined;
  readonly reason?: string | undefined;
}

/** The held period due again at once: its hold mark and the record holds a new instrument lifts are removed, audited. */
export function releasedPeriod(record: BillingRecord, now: Date): BillingRecord {
  const lifted = holdOf(record, now);
  return applyBillingEvent(record, 'HOLD_RELEASED', now, {
    set: {
      held_on: undefined,
      ...(lifted === 'ach_authorization_required' ? { ach_unauthorized: undefined } : {}),
      ...(lifted === 'ach_account_invalid' ? { ach_blocked: undefined } : {}),
    },
  });
}

/** Releases one held period if the account's instrument is now free of holds; false when it stays held. */
async function releaseIfFree(deps: ReleaseHeldDeps, key: BillingRecord, audit: ReleaseAudit): Promise<boolean> {
  const { record, instruments } = await deps.billing.getForAttempt(key);
  if (!record || heldIndexAt(record) === undefined) return false;
  const now = deps.clock.now();
  const account = await deps.accounts.getAccount(record.user_id);
  // A ceiling does not keep it held: it frees up with time, and the attempt keys the period until then.
  const { refusal } = decideInstrument(record, instruments, account, now, 'SCHEDULED');
  if (refusal && isHoldRefusal(refusal)) return false;
  const after = releasedPeriod(record, now);
  try {
    await deps.billing.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyRowOf(after, { actor: audit.actor, reason: audit.reason })] });
  } catch (error) {
    // Another writer moved it: the next sweep judges it again.
    if (error instanceof ConcurrentModificationError) return false;
    throw error;
  }
  return true;
}

/** A user's held periods that no hold binds any more (after an operator's release, a manual pay on a new instrument). */
export async function releaseUserHeldPeriods(deps: ReleaseHeldDeps, userId: string, audit: ReleaseAudit): Promise<number> {
  const { items } = await deps.billing.listByUser(userId, { limit: 100, cursor: null });
  let released = 0;
  for (const record of items.filter((r) => heldIndexAt(r) !== undefined)) if (await releaseIfFree(deps, record, audit)) released += 1;
  return released;
}

/** The daily sweep of the held index: each period whose user's instrument has changed (or whose hold was lifted) is due again. */
export async function sweepHeldPeriods(deps: ReleaseHeldDeps, options: { readonly shouldContinue?: () => boolean } = {}): Promise<{ examined: number; released: number }> {
  let cursor: string | null = null;
  let examined = 0;
  let released = 0;
  do {
    const page = await deps.billing.listHeld!({ limit: 100, cursor });
    for (const record of page.items) {
      if (options.shouldContinue && !options.shouldContinue()) return { examined, released };
      examined += 1;
      if (await releaseIfFree(deps, record, { actor: 'system:held-sweep', reason: 'the instrument changed or its hold was lifted' })) released += 1;
    }
    cursor = page.next;
  } while (cursor);
  return { examined, released };
}
