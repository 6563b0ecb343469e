import { NotFoundError } from '../errors.js';
import { withUserLock, type HeldLock } from '../lock.js';
import type { BillingKey, BillingRecord } from '../records.js';
import type { AttemptDeps } from './collect.js';

/** An operator or user action on one subscription, named by its id. */
export interface ActorRequest {
  readonly subscriptionId: string;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  readonly actor?: string | undefined;
  readonly reason?: string | undefined;
  /** The bulk retry run the action belongs to (its audit rows carry `run_id`). */
  readonly runId?: string | undefined;
  readonly signal?: AbortSignal;
}

export async function findSubscription(deps: Pick<AttemptDeps, 'billing'>, subscriptionId: string): Promise<BillingRecord> {
  const found = await deps.billing.findBySubscriptionId(subscriptionId);
  if (!found) throw new NotFoundError(`subscription ${subscriptionId} not found`);
  return found;
}

/**
 * Locates the subscription on the subscription_id-index (its keys only), takes its user's lock
 * (LockedError → 409, nothing changed), reads it strongly consistent and runs `work`. A
 * subscription never changes user, so the index's user_id names the right lock even when the index
 * lags; the consistent read under the lock is what `work` acts on (a key the index still shows after
 * a due-date change reads as another subscription or nothing, and is passed over). The lock is
 * always released, by `work`'s own transaction or afterwards; once `work` has committed, a failed
 * release never turns its result into an error (DESIGN 3.1). `attempts`: the work runs the collection
 * attempt of this period (manual pay, retry-billing), so the lease names the period.
 */
export async function withLockedSubscription<T>(
  deps: AttemptDeps,
  request: ActorRequest,
  work: (read: BillingRecord, lock: HeldLock) => Promise<T>,
  options: { readonly attempts?: boolean } = {},
): Promise<T> {
  const keys = await deps.billing.locateSubscription(request.subscriptionId);
  const userId = keys[0]?.user_id;
  if (userId === undefined) throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
  return withUserLock(
    deps,
    userId,
    request.owner,
    async (lock) => {
      const read = await currentRecord(deps, keys.filter((k) => k.user_id === userId), request.subscriptionId);
      if (!read) throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
      return work(read, lock);
    },
    (error) => deps.onError?.(error, { subscription_id: request.subscriptionId, user_id: userId, class: 'transient', recorded: false }),
    // A use case that attempts the period names it on the lease: if it dies between the processor and
    // its write, the next holder knows this period's key may be held (DESIGN 3, takeover.ts).
    options.attempts ? keys[0]?.billing_date : undefined,
  );
}

/** The newest of the keys' consistent reads that is still this subscription. */
async function currentRecord(deps: Pick<AttemptDeps, 'billing'>, keys: readonly BillingKey[], subscriptionId: string): Promise<BillingRecord | undefined> {
  const reads = await Promise.all(keys.map((key) => deps.billing.get(key)));
  const current = reads.filter((r): r is BillingRecord => r !== undefined && r.subscription_id === subscriptionId);
  return current.sort((a, b) => (a.last_run_date < b.last_run_date ? 1 : -1))[0];
}
