import { LockedError, LockLostError } from './errors.js';
import type { Clock, LockLease, LockRelease, LockStore } from './ports.js';

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
  const holder = new LeaseHolder(store, clock, userId, owner, options);
  let takenOver: LockLease | undefined;
  if (!(await store.tryAcquire(holder.current, clock.now().getTime(), (previous) => (takenOver = previous)))) {
    throw new LockedError(`billing lock for user ${userId} is held`);
  }
  holder.startHeartbeat(options.heartbeatMs ?? LOCK_HEARTBEAT_MS);
  return heldLockOf(holder, takenOver);
}

function heldLockOf(holder: LeaseHolder, takenOver: LockLease | undefined): HeldLock {
  return {
    key: holder.key,
    signal: holder.signal,
    ...(takenOver !== undefined ? { takenOver } : {}),
    release: () => holder.release(),
    handBack: () => holder.handBack(takenOver),
    declarePurpose: (next) => holder.declarePurpose(next),
    carryHeldSince: (since) => holder.carryHeldSince(since),
    releaseWith: (commit) => holder.releaseWith(commit),
  };
}

/** One holder's lease: what it puts, its heartbeat, and the ways it lets go. */
class LeaseHolder {
  readonly key: string;
  current: LockLease;
  private readonly leaseMs: number;
  private purpose: string | undefined;
  private heldSince: number;
  private readonly controller = new AbortController();
  /** The lease puts, one after another. */
  private renewing: Promise<void> = Promise.resolve();
  /** True while a commit that releases the lock runs: the heartbeat must not move the lease under it. */
  private held = false;
  private released = false;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly store: LockStore,
    private readonly clock: Clock,
    private readonly userId: string,
    private readonly owner: string,
    private readonly options: LockOptions,
  ) {
    this.key = userLockKey(userId);
    this.leaseMs = options.leaseMs ?? LOCK_LEASE_MS;
    this.purpose = options.purpose;
    this.heldSince = clock.now().getTime();
    this.current = this.leaseAt(options.newVersion());
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  startHeartbeat(heartbeatMs: number): void {
    const timer = setInterval(() => {
      void this.putLease(() => this.held, 'heartbeat failed').then(() => {
        if (this.signal.aborted) clearInterval(timer);
      });
    }, heartbeatMs);
    timer.unref?.();
    this.timer = timer;
  }

  async release(): Promise<void> {
    if (this.released) return;
    await this.stop();
    await this.store.release(this.key, this.current.record_version_number);
  }

  /** Puts back the expired lease this lock replaced, so its evidence stays for the next holder. */
  async handBack(takenOver: LockLease | undefined): Promise<void> {
    if (this.released) return;
    if (takenOver === undefined) return this.release();
    await this.stop();
    await this.store.renew(this.key, this.current.record_version_number, takenOver);
  }

  async declarePurpose(next: string): Promise<void> {
    if (this.purpose === next) return;
    this.purpose = next;
    await this.rewrite();
  }

  async carryHeldSince(since: number): Promise<void> {
    if (since >= this.heldSince) return;
    this.heldSince = since;
    await this.rewrite();
  }

  async releaseWith<T>(commit: (release: LockRelease) => Promise<T>): Promise<T> {
    if (this.released) throw new LockLostError(`billing lock for user ${this.userId} was already released`);
    this.held = true;
    await this.renewing;
    if (this.signal.aborted) {
      this.held = false;
      throw this.lostError();
    }
    try {
      const result = await commit({ key: this.key, recordVersionNumber: this.current.record_version_number });
      this.released = true;
      clearInterval(this.timer);
      this.controller.abort(new LockLostError('released'));
      return result;
    } finally {
      this.held = false;
    }
  }

  private leaseAt(version: string): LockLease {
    return {
      key: this.key,
      owner_name: this.owner,
      record_version_number: version,
      lease_duration_ms: this.leaseMs,
      lease_expires_at: this.clock.now().getTime() + this.leaseMs,
      ...(this.purpose !== undefined ? { purpose: this.purpose } : {}),
      held_since: this.heldSince,
    };
  }

  /** Queues one conditional put of the lease as it now reads, unless `skip` says not now; a refused or failed put aborts the holder. */
  private putLease(skip: () => boolean, failure: string): Promise<void> {
    this.renewing = this.renewing.then(async () => {
      if (this.signal.aborted || skip()) return;
      const next = this.leaseAt(this.options.newVersion());
      try {
        if (await this.store.renew(this.key, this.current.record_version_number, next)) this.current = next;
        else this.controller.abort(new LockLostError(`billing lock for user ${this.userId} was lost`));
      } catch (error) {
        this.controller.abort(new LockLostError(`${failure} for user ${this.userId}`, { cause: error }));
      }
    });
    return this.renewing;
  }

  /** Puts the lease again now (a new purpose or held_since); throws if the lock is lost. */
  private async rewrite(): Promise<void> {
    await this.putLease(() => this.released, 'renewal failed');
    if (this.signal.aborted) throw this.lostError();
  }

  private async stop(): Promise<void> {
    this.released = true;
    clearInterval(this.timer);
    await this.renewing;
    if (!this.signal.aborted) this.controller.abort(new LockLostError('released'));
  }

  private lostError(): Error {
    const reason: unknown = this.signal.reason;
    return reason instanceof Error ? reason : new LockLostError(`billing lock for user ${this.userId} was lost`);
  }
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
