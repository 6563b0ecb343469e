import { NotFoundError } from '../errors.js';
import { withUserLock, type HeldLock } from '../lock.js';
import type { InstrumentsItem } from '../instruments/instrument.js';
import type { BillingKey, BillingRecord } from '../records.js';
import type { UseCaseDeps } from './deps.js';

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

export async function findSubscription(deps: Pick<UseCaseDeps, 'billing'>, subscriptionId: string): Promise<BillingRecord> {
  const found = await deps.billing.findBySubscriptionId(subscriptionId);
  if (!found) throw new NotFoundError(`subscription ${subscriptionId} not found`);
  return found;
}

/**
 * Takes the lock of the subscription's user (LockedError: 409, nothing changed) and runs `work` on a
 * consistent read. The index may lag, but a subscription never changes user, so its user_id names
 * the right lock. An attempt under it names its period on the lease just before it presents.
 */
export async function withLockedSubscription<T>(
  deps: UseCaseDeps,
  request: ActorRequest,
  work: (read: BillingRecord, lock: HeldLock, instruments: InstrumentsItem) => Promise<T>,
): Promise<T> {
  const keys = await deps.billing.locateSubscription(request.subscriptionId);
  const userId = keys[0]?.user_id;
  if (userId === undefined) throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
  return withUserLock(
    deps,
    userId,
    request.owner,
    async (lock) => {
      const current = await currentRecord(deps, keys.filter((k) => k.user_id === userId), request.subscriptionId);
      if (!current) throw new NotFoundError(`subscription ${request.subscriptionId} not found`);
      return work(current.record, lock, current.instruments);
    },
    (error) => deps.onError?.(error, { subscription_id: request.subscriptionId, user_id: userId, class: 'transient', recorded: false }),
  );
}

/** The newest of the keys' consistent reads that is still this subscription, with the user's instruments read beside it. */
async function currentRecord(
  deps: Pick<UseCaseDeps, 'billing'>,
  keys: readonly BillingKey[],
  subscriptionId: string,
): Promise<{ record: BillingRecord; instruments: InstrumentsItem } | undefined> {
  const reads = await Promise.all(keys.map((key) => deps.billing.getForAttempt(key)));
  const current = reads.filter((r): r is { record: BillingRecord; instruments: InstrumentsItem } => r.record !== undefined && r.record.subscription_id === subscriptionId);
  return current.sort((a, b) => (a.record.last_run_date < b.record.last_run_date ? 1 : -1))[0];
}
