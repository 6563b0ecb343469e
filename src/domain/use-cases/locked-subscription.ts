import { NotFoundError } from '../errors.js';
import { withUserLock, type HeldLock } from '../lock.js';
import type { BillingRecord } from '../records.js';
import type { AttemptDeps } from './collect.js';

/** An operator or user action on one subscription, named by its id. */
export interface ActorRequest {
  readonly subscriptionId: string;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  readonly actor?: string | undefined;
  readonly reason?: string | undefined;
  readonly signal?: AbortSignal;
}

export async function findSubscription(deps: Pick<AttemptDeps, 'billing'>, subscriptionId: string): Promise<BillingRecord> {
  const found = await deps.billing.findBySubscriptionId(subscriptionId);
  if (!found) throw new NotFoundError(`subscription ${subscriptionId} not found`);
  return found;
}

/**
 * Locates the subscription, takes its user's lock (LockedError → 409, nothing changed), reads it
 * strongly consistent and runs `work`. The lock is always released; once `work` has committed, a
 * failed release never turns its result into an error (DESIGN 3.1).
 */
export async function withLockedSubscription<T>(
  deps: AttemptDeps,
  request: ActorRequest,
  work: (read: BillingRecord, lock: HeldLock) => Promise<T>,
): Promise<T> {
  const located = await findSubscription(deps, request.subscriptionId);
  return withUserLock(
    deps,
    located.user_id,
    request.owner,
    async (lock) => {
      const read = await deps.billing.get(located);
      if (!read) throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
      return work(read, lock);
    },
    (error) => deps.onError?.(error, { subscription_id: located.subscription_id, user_id: located.user_id, class: 'transient', recorded: false }),
  );
}
