import { withUserLock, type HeldLock } from '../../lock.js';
import type { UseCaseDeps } from '../deps.js';
import { ban } from './ban.js';
import { cancel } from './cancel.js';
import type { Ctx } from './change.js';
import { closeAccount } from './close-account.js';
import { newMember } from './new-member.js';
import type { MembershipOutcome, MembershipRequest } from './outcome.js';
import { pause } from './pause.js';
import { recentRecords, replayOf } from './periods.js';
import { reactivate } from './reactivate.js';
import { unpause } from './unpause.js';

export { membershipEventSchema, type MembershipEvent, type MembershipEventType } from '../../membership-events.js';
export type { IgnoredReason, MembershipOutcome, MembershipRequest } from './outcome.js';

/**
 * Apply a membership event (DESIGN 7, 2.9), under the user's lock (CLOSEACCOUNT takes none).
 *
 * - What the member asked for lands in the intent attributes (intent.ts), never in `updated_event`.
 * - Replays are no-ops: the chain remembers the ids of the events applied to it; an event whose id
 *   is remembered, or that is older than the newest applied one, is not applied again.
 * - PAUSE and CANCEL never erase a due, unbilled period (seed 001's `unbilled_period`): the due
 *   periods are attempted first, and the change lands on the first period that is not yet due
 *   (created now when it does not exist yet, so a later attempt's next-period create finds it).
 */

/**
 * Applies one membership event. Throws LockedError when the user's lock is held and
 * ConcurrentModificationError / TransientError when a write must be retried: the caller reports
 * the record as failed and the stream delivers it again.
 */
export async function applyMembershipEvent(deps: UseCaseDeps, request: MembershipRequest): Promise<MembershipOutcome> {
  const { event } = request;
  // DESIGN 2.6: closing an account takes no lock; the version fence on each write is enough.
  if (event.type === 'CLOSEACCOUNT') return closeAccount(deps, event);
  return withUserLock(deps, event.user_id, request.owner, (lock) => underLock(deps, request, lock));
}

async function underLock(deps: UseCaseDeps, request: MembershipRequest, lock: HeldLock): Promise<MembershipOutcome> {
  const { event } = request;
  const records = await recentRecords(deps, event.user_id);
  const replay = replayOf(records, event);
  if (replay) return replay;
  const ctx: Ctx = { deps, request, lock, event };
  switch (event.type) {
    case 'NEW':
      return newMember(ctx, records, event);
    case 'PAUSE':
      return pause(ctx, records, event.months);
    case 'UNPAUSE':
      return unpause(ctx, records);
    case 'CANCEL':
      return cancel(ctx, records);
    case 'REACTIVATE':
      return reactivate(ctx, records);
    case 'BAN':
      return ban(ctx, records);
    case 'CLOSEACCOUNT':
      return closeAccount(deps, event);
  }
}
