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
  /** The expired lease this lock replaced: its holder's attempt may have reached the processor unrecorded. */
  readonly takenOver?: LockLease;
  release(): Promise<void>;
  /** Runs `commit`, which deletes the lock in its own transaction, with heartbeats held so the lease cannot move under it. */
  releaseWith<T>(commit: (release: LockRelease) => Promise<T>): Promise<T>;
  /** Names the period about to be attempted on the lease, so that a holder dying mid-attempt tells the next one. */
  declarePurpose(purpose: string): Promise<void>;
  /** Keeps a dead holder's earlier `held_since` when resending its key, for the account gate of the next holder (takeover.ts). */
  carryHeldSince(since: number): Promise<void>;
  /** Releases by putting back `takenOver`, so its evidence stays for the attempt that must resolve it. */
  handBack(): Promise<void>;
}

/** Fail-if-locked. A paused process can outlive its lease, so the lock alone never fences: the record's `version` does. */
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

class LeaseHolder {
  readonly key: string;
  current: LockLease;
  private readonly leaseMs: number;
  private purpose: string | undefined;
  private heldSince: number;
  private readonly controller = new AbortController();
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

  /** One conditional put of the lease as it now reads, queued; a refused or failed put aborts the holder. */
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

export interface LockDeps {
  readonly locks: LockStore;
  readonly clock: Clock;
  readonly ids: { newId(): string };
  readonly lockLeaseMs?: number;
  readonly lockHeartbeatMs?: number;
}

export function lockUser(deps: LockDeps, userId: string, owner: string, purpose?: string): Promise<HeldLock> {
  return acquireUserLock(deps.locks, deps.clock, userId, owner, {
    newVersion: () => deps.ids.newId(),
    ...(purpose !== undefined ? { purpose } : {}),
    ...(deps.lockLeaseMs !== undefined ? { leaseMs: deps.lockLeaseMs } : {}),
    ...(deps.lockHeartbeatMs !== undefined ? { heartbeatMs: deps.lockHeartbeatMs } : {}),
  });
}

/** Once a change has committed its result stands: a failed release is reported, and the lease lapses on its own. */
export async function releaseQuietly(lock: HeldLock, onError?: (error: unknown) => void): Promise<void> {
  try {
    await lock.release();
  } catch (error) {
    onError?.(error);
  }
}

/**
 * Runs `work` under the user's lock; a failed release never replaces its outcome. A dead holder's lease
 * naming a period is handed back, so the evidence stays until an attempt of that period takes it over.
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
