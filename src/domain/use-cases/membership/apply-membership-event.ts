import { withUserLock, type HeldLock } from '../../lock.js';
import type { UseCaseDeps } from '../deps.js';
import { ban } from './ban.js';
import { cancel } from './cancel.js';
import type { LockedContext } from './change.js';
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
 * Applies one membership event under the user's lock; an event already applied, or older than the
 * newest applied, changes nothing. LockedError and write conflicts are thrown: the stream redelivers.
 */
export async function applyMembershipEvent(deps: UseCaseDeps, request: MembershipRequest): Promise<MembershipOutcome> {
  const { event } = request;
  // Closing an account takes no lock: the version fence on each write is enough.
  if (event.type === 'CLOSEACCOUNT') return closeAccount(deps, event);
  return withUserLock(deps, event.user_id, request.owner, (lock) => underLock(deps, request, lock));
}

async function underLock(deps: UseCaseDeps, request: MembershipRequest, lock: HeldLock): Promise<MembershipOutcome> {
  const { event } = request;
  const records = await recentRecords(deps, event.user_id);
  const replay = replayOf(records, event);
  if (replay) return replay;
  const ctx: LockedContext = { deps, request, lock, event };
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
