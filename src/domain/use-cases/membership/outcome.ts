import type { MembershipEvent } from '../../membership-events.js';
import type { BillingRecord } from '../../records.js';
import type { AttemptOutcome } from '../collect.js';

export type MembershipOutcome =
  | { readonly kind: 'applied'; readonly written: readonly BillingRecord[]; readonly attempts: readonly AttemptOutcome[] }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'stale'; readonly newer_applied_at: string }
  | { readonly kind: 'ignored'; readonly reason: IgnoredReason; readonly attempts: readonly AttemptOutcome[] };

export type IgnoredReason =
  | 'already_member'
  | 'period_exists'
  | 'no_open_period'
  | 'already_paused'
  | 'cancel_requested'
  | 'not_paused'
  | 'not_inactive';

export interface MembershipRequest {
  readonly event: MembershipEvent;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  readonly signal?: AbortSignal;
}
