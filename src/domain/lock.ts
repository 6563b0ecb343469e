import { LockedError, LockLostError } from './errors.js';
import type { LockRelease } from './ports/billing-ledger.js';
import type { Clock } from './ports/clock.js';
import type { LockLease, LockStore } from './ports/locks.js';

/** DESIGN 2.6: 60 s lease, 1 s heartbeat, fail-if-locked. */
export const LOCK_LEASE_MS = 60_000;
export const LOCK_HEARTBEAT_MS = 1_000;

export function userLockKey(userId: string): string {
  return `subscription-billing:user_id:${userId}`;
}

export interface LockOptions {
  readonly leaseMs?: number;
  readonly heartbeatMs?: number;
  readonly newVersion: () => string;
  /** Stored on the lease: the period this holder attempts (a takeover tells the next holder). */
  readonly purpose?: string;
}

export interface HeldLock {
  readonly key: string;
  /** Aborted when a heartbeat finds the lease lost: the holder must stop before writing. */
  readonly signal: AbortSignal;
  /**
   * The expired lease this lock replaced, when there was one: its holder died (or lost its release)
   * while it held the user, so an attempt of its period may have reached the processor unrecorded.
   */
  readonly takenOver?: LockLease;
  release(): Promise<void>;
  /**
   * Runs `commit` with the lease as it is now, heartbeats held so that it cannot change meanwhile;
   * `commit` deletes the lock item in its own transaction. On success the lock is released (a later
   * `release()` is a no-op); on failure heartbeats resume and the lock is still held.
   */
  releaseWith<T>(commit: (release: LockRelease) => Promise<T>): Promise<T>;
  /**
   * Names the period this holder is about to attempt on the lease now (one conditional put), so
   * that if it dies between the processor and its write, the next holder learns it (`takenOver`).
   * For a holder that took the lock for several periods (the memberships consumer's catch-up).
   */
  declarePurpose(purpose: string): Promise<void>;
  /**
   * Writes `since` as the lease's `held_since` when it is earlier (one conditional put): for a holder
   * about to resend, past the account gate, the key of the dead holder whose lease it took over, so
   * that if it dies too, the next holder judges the account against the first holder's instant.
   */
  carryHeldSince(since: number): Promise<void>;
  /**
   * Releases by putting back the expired lease this lock replaced (`takenOver`), so the evidence it
   * carries (a dead holder attempting its period) stays for the next holder; without one, `release()`.
   * For a holder that learnt of it and must leave the period to an attempt (a waive answering 409).
   */
  handBack(): Promise<void>;
}

/**
 * Acquires the user's billing lock or throws LockedError at once (fail-if-locked).
 * A heartbeat renews the lease every second; if it is lost, `signal` aborts. The lock alone never
 * guarantees exclusivity (a paused process can outlive its lease): the record's `version` is the fence.
 */
export async function acquireUserLock(
  store: LockStore,
  clock: Clock,
  userId: string,
  owner: string,
  options: LockOptions,
): Promise<HeldLock> {
  const key = userLockKey(userId);
  const leaseMs = options.leaseMs ?? LOCK_LEASE_MS;
  const heartbeatMs = options.heartbeatMs ?? LOCK_HEARTBEAT_MS;
  let purpose = options.purpose;
  let heldSince = clock.now().getTime();
  const leaseAt = (version: string): LockLease => ({
    key,
    owner_name: owner,
    record_version_number: version,
    lease_duration_ms: leaseMs,
    lease_expires_at: clock.now().getTime() + leaseMs,
    ...(purpose !== undefined ? { purpose } : {}),
    held_since: heldSince,
  });
  let current = leaseAt(options.newVersion());
  let takenOver: LockLease | undefined;
  if (!(await store.tryAcquire(current, clock.now().getTime(), (previous) => (takenOver = previous)))) {
    throw new LockedError(`billing lock for user ${userId} is held`);
  }
  const controller = new AbortController();
  let renewing: Promise<void> = Promise.resolve();
  let held = false;
  let released = false;
  /**
   * Queues one put of the lease as it now reads (a fresh version; purpose and held_since as set),
   * conditional on holding it, unless `skip` says not now. A refused put or a failed one aborts the holder.
   */
  const putLease = (skip: () => boolean, failure: string): Promise<void> =>
    (renewing = renewing.then(async () => {
      if (controller.signal.aborted || skip()) return;
      const next = leaseAt(options.newVersion());
      try {
        if (await store.renew(key, current.record_version_number, next)) current = next;
        else controller.abort(new LockLostError(`billing lock for user ${userId} was lost`));
      } catch (error) {
        controller.abort(new LockLostError(`${failure} for user ${userId}`, { cause: error }));
      }
    }));
  const timer = setInterval(() => {
    void putLease(() => held, 'heartbeat failed').then(() => {
      if (controller.signal.aborted) clearInterval(timer);
    });
  }, heartbeatMs);
  timer.unref?.();
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    clearInterval(timer);
    await renewing;
    if (!controller.signal.aborted) controller.abort(new LockLostError('released'));
    await store.release(key, current.record_version_number);
  };
  /** Puts the lease again now (a new purpose or held_since), conditional on holding it; throws if the lock is lost. */
  const rewrite = async (): Promise<void> => {
    await putLease(() => released, 'renewal failed');
    if (controller.signal.aborted) throw controller.signal.reason instanceof Error ? controller.signal.reason : new LockLostError(`billing lock for user ${userId} was lost`);
  };
  return {
    key,
    signal: controller.signal,
    ...(takenOver !== undefined ? { takenOver } : {}),
    release,
    async handBack() {
      if (released) return;
      if (takenOver === undefined) return release();
      released = true;
      clearInterval(timer);
      await renewing;
      if (!controller.signal.aborted) controller.abort(new LockLostError('released'));
      await store.renew(key, current.record_version_number, takenOver);
    },
    async declarePurpose(next) {
      if (purpose === next) return;
      purpose = next;
      await rewrite();
    },
    async carryHeldSince(since) {
      if (since >= heldSince) return;
      heldSince = since;
      await rewrite();
    },
    async releaseWith(commit) {
      if (released) throw new LockLostError(`billing lock for user ${userId} was already released`);
      held = true;
      await renewing;
      if (controller.signal.aborted) {
        held = false;
        throw controller.signal.reason instanceof Error ? controller.signal.reason : new LockLostError(`billing lock for user ${userId} was lost`);
      }
      try {
        const result = await commit({ key, recordVersionNumber: current.record_version_number });
        released = true;
        clearInterval(timer);
        controller.abort(new LockLostError('released'));
        return result;
      } finally {
        held = false;
      }
    },
  };
}

/** What taking a user's lock needs, as every use case's deps carry it. */
export interface LockDeps {
  readonly locks: LockStore;
  readonly clock: Clock;
  readonly ids: { newId(): string };
  readonly lockLeaseMs?: number;
  readonly lockHeartbeatMs?: number;
}

/** The one way a use case takes a user's lock (fail-if-locked: LockedError at once). */
export function lockUser(deps: LockDeps, userId: string, owner: string, purpose?: string): Promise<HeldLock> {
  return acquireUserLock(deps.locks, deps.clock, userId, owner, {
    newVersion: () => deps.ids.newId(),
    ...(purpose !== undefined ? { purpose } : {}),
    ...(deps.lockLeaseMs !== undefined ? { leaseMs: deps.lockLeaseMs } : {}),
    ...(deps.lockHeartbeatMs !== undefined ? { heartbeatMs: deps.lockHeartbeatMs } : {}),
  });
}

/**
 * Releases a lock without letting a failed release change the answer: once a change has committed,
 * its result stands (DESIGN 3.1); the lease lapses on its own. The failure is reported.
 */
export async function releaseQuietly(lock: HeldLock, onError?: (error: unknown) => void): Promise<void> {
  try {
    await lock.release();
  } catch (error) {
    onError?.(error);
  }
}

/**
 * Runs `work` under the user's lock and always releases it. The work's own outcome (result or
 * error) is the answer; a failed release never replaces it. A lock that replaced a dead holder's
 * lease naming a period, and was not released by an attempt's own commit, hands that lease back:
 * the evidence that the period's key may be held stays until an attempt of it takes it over.
 */
export async function withUserLock<T>(
  deps: LockDeps,
  userId: string,
  owner: string,
  work: (lock: HeldLock) => Promise<T>,
  onReleaseError?: (error: unknown) => void,
  purpose?: string,
): Promise<T> {
  const lock = await lockUser(deps, userId, owner, purpose);
  try {
    return await work(lock);
  } finally {
    try {
      await (lock.takenOver?.purpose !== undefined ? lock.handBack() : lock.release());
    } catch (error) {
      onReleaseError?.(error);
    }
  }
}
