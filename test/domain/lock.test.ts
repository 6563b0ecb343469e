import { afterEach, describe, expect, it, vi } from 'vitest';
import { LockedError, LockLostError } from '../../src/domain/errors.js';
import { acquireUserLock, LOCK_HEARTBEAT_MS, LOCK_LEASE_MS, userLockKey, withUserLock, type HeldLock, type LockDeps } from '../../src/domain/lock.js';
import type { Clock } from '../../src/domain/ports/clock.js';
import type { LockStore } from '../../src/domain/ports/locks.js';
import { InMemoryLockStore, ManualClock } from '../support/fakes.js';

const HEARTBEAT_MS = 20;
const KEY = 'subscription-billing:user_id:user-1';

function versions(prefix = 'v') {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function setup() {
  const store = new InMemoryLockStore();
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  return { store, clock };
}

const held: HeldLock[] = [];
async function acquire(
  store: InMemoryLockStore,
  clock: ManualClock,
  owner: string,
  options: { heartbeatMs?: number; leaseMs?: number } = {},
): Promise<HeldLock> {
  const lock = await acquireUserLock(store, clock, 'user-1', owner, {
    newVersion: versions(owner),
    leaseMs: options.leaseMs ?? LOCK_LEASE_MS,
    heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
  });
  held.push(lock);
  return lock;
}

afterEach(async () => {
  // Stop every heartbeat a test left running.
  await Promise.all(held.splice(0).map((lock) => lock.release().catch(() => undefined)));
});

describe('lock key and defaults', () => {
  it('uses subscription-billing:user_id:{id}', () => {
    expect(userLockKey('user-1')).toBe(KEY);
    expect(userLockKey('42')).toBe('subscription-billing:user_id:42');
  });

  it('defaults to a 60 s lease and a 1 s heartbeat', () => {
    expect(LOCK_LEASE_MS).toBe(60_000);
    expect(LOCK_HEARTBEAT_MS).toBe(1_000);
  });
});

describe('acquireUserLock', () => {
  it('writes the lease item under the user key', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    expect(lock.key).toBe(KEY);
    expect(lock.signal.aborted).toBe(false);
    expect(store.get(KEY)).toEqual({
      key: KEY,
      owner_name: 'worker-a',
      record_version_number: 'worker-a-1',
      lease_duration_ms: LOCK_LEASE_MS,
      lease_expires_at: clock.now().getTime() + LOCK_LEASE_MS,
      held_since: clock.now().getTime(),
    });
  });

  it('fails at once with LockedError for a second acquirer, leaving the holder untouched', async () => {
    const { store, clock } = setup();
    await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    const before = store.get(KEY);
    const started = Date.now();
    await expect(acquire(store, clock, 'worker-b')).rejects.toBeInstanceOf(LockedError);
    expect(Date.now() - started).toBeLessThan(HEARTBEAT_MS * 5);
    expect(store.calls.tryAcquire).toBe(2);
    expect(store.get(KEY)).toEqual(before);
  });

  it('is still locked at the exact expiry instant (the condition is lease_expires_at < now)', async () => {
    const { store, clock } = setup();
    await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    clock.advance(LOCK_LEASE_MS);
    await expect(acquire(store, clock, 'worker-b')).rejects.toBeInstanceOf(LockedError);
  });

  it('takes over a lease that has expired', async () => {
    const { store, clock } = setup();
    await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    clock.advance(LOCK_LEASE_MS + 1);
    const lock = await acquire(store, clock, 'worker-b', { heartbeatMs: 60_000 });
    expect(lock.key).toBe(KEY);
    expect(store.get(KEY)).toMatchObject({ owner_name: 'worker-b', record_version_number: 'worker-b-1' });
  });

  it('locks per user: another user is not blocked', async () => {
    const { store, clock } = setup();
    await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    const other = await acquireUserLock(store, clock, 'user-2', 'worker-b', { newVersion: versions('b'), heartbeatMs: 60_000 });
    held.push(other);
    expect(other.key).toBe('subscription-billing:user_id:user-2');
  });
});

describe('held_since', () => {
  it('keeps the acquisition instant through heartbeats', async () => {
    const { store, clock } = setup();
    const acquiredAt = clock.now().getTime();
    await acquire(store, clock, 'worker-a');
    const first = store.get(KEY)!;
    clock.advance(30_000);
    await vi.waitFor(() => expect(store.get(KEY)!.record_version_number).not.toBe(first.record_version_number), { timeout: 2_000 });
    expect(store.get(KEY)!.held_since).toBe(acquiredAt);
  });

  it('carries an earlier instant onto the lease at once, ignores a later one, and keeps it through heartbeats', async () => {
    const { store, clock } = setup();
    const acquiredAt = clock.now().getTime();
    const lock = await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    const renewsBefore = store.calls.renew;
    await lock.carryHeldSince(acquiredAt + 5_000);
    expect(store.calls.renew).toBe(renewsBefore); // later: nothing written
    await lock.carryHeldSince(acquiredAt - 86_400_000);
    expect(store.calls.renew).toBe(renewsBefore + 1);
    expect(store.get(KEY)!.held_since).toBe(acquiredAt - 86_400_000);
    expect(store.get(KEY)!.owner_name).toBe('worker-a');
  });

  it('tells a takeover the dead holder\'s instant', async () => {
    const { store, clock } = setup();
    const acquiredAt = clock.now().getTime();
    await acquireUserLock(store, clock, 'user-1', 'dead', { newVersion: versions('dead'), leaseMs: 1_000, heartbeatMs: 60_000_000 });
    // The holder dies: its heartbeat never runs again (a new store handle would not stop it, so the lease is left to lapse).
    clock.advance(1_001);
    const next = await acquire(store, clock, 'next', { heartbeatMs: 60_000 });
    expect(next.takenOver?.held_since).toBe(acquiredAt);
    expect(store.get(KEY)!.held_since).toBe(clock.now().getTime());
  });
});

describe('heartbeat', () => {
  it('renews the lease with a fresh record_version_number and a lease from the current time', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a');
    const first = store.get(KEY)!;
    clock.advance(30_000);
    await vi.waitFor(() => expect(store.get(KEY)!.record_version_number).not.toBe(first.record_version_number), { timeout: 2_000 });
    const renewed = store.get(KEY)!;
    expect(renewed.owner_name).toBe('worker-a');
    expect(renewed.lease_expires_at).toBe(clock.now().getTime() + LOCK_LEASE_MS);
    await vi.waitFor(() => expect(store.calls.renew).toBeGreaterThanOrEqual(3), { timeout: 2_000 });
    expect(store.get(KEY)!.record_version_number).toMatch(/^worker-a-\d+$/);
    expect(store.get(KEY)!.record_version_number).not.toBe(renewed.record_version_number);
    expect(lock.signal.aborted).toBe(false);
  });

  it('keeps a live holder from being taken over past the original lease', async () => {
    const { store, clock } = setup();
    await acquire(store, clock, 'worker-a');
    clock.advance(LOCK_LEASE_MS - 1_000);
    const calls = store.calls.renew;
    await vi.waitFor(() => expect(store.calls.renew).toBeGreaterThan(calls), { timeout: 2_000 });
    clock.advance(2_000); // past the first lease, within the renewed one
    await expect(acquire(store, clock, 'worker-b')).rejects.toBeInstanceOf(LockedError);
  });

  it('aborts the signal with LockLostError when another process took the lease over', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a');
    // Worker A was paused past its lease; worker B took the lock over.
    store.put({ key: KEY, owner_name: 'worker-b', record_version_number: 'b-1', lease_duration_ms: LOCK_LEASE_MS, lease_expires_at: 0 });
    await vi.waitFor(() => expect(lock.signal.aborted).toBe(true), { timeout: 2_000 });
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(store.get(KEY)!.owner_name).toBe('worker-b');
  });

  it('stops renewing once the lease is lost', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a');
    store.put({ key: KEY, owner_name: 'worker-b', record_version_number: 'b-1', lease_duration_ms: LOCK_LEASE_MS, lease_expires_at: 0 });
    await vi.waitFor(() => expect(lock.signal.aborted).toBe(true), { timeout: 2_000 });
    const calls = store.calls.renew;
    await sleep(HEARTBEAT_MS * 5);
    expect(store.calls.renew).toBe(calls);
  });

  it('aborts the signal with LockLostError, carrying the cause, when a heartbeat cannot reach the store', async () => {
    const { store, clock } = setup();
    const outage = new Error('connection reset');
    store.failNextRenewWith = outage;
    const lock = await acquire(store, clock, 'worker-a');
    await vi.waitFor(() => expect(lock.signal.aborted).toBe(true), { timeout: 2_000 });
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as LockLostError).cause).toBe(outage);
  });
});

describe('release', () => {
  it('deletes its own lock so the next acquirer gets it at once', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a');
    await lock.release();
    expect(store.get(KEY)).toBeUndefined();
    await expect(acquire(store, clock, 'worker-b', { heartbeatMs: 60_000 })).resolves.toMatchObject({ key: KEY });
  });

  it('releases the renewed version, not the first one', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a');
    await vi.waitFor(() => expect(store.get(KEY)!.record_version_number).not.toBe('worker-a-1'), { timeout: 2_000 });
    await lock.release();
    expect(store.get(KEY)).toBeUndefined();
  });

  it('is conditional: an old holder does not release a lock taken over after its lease expired', async () => {
    const { store, clock } = setup();
    const a = await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    clock.advance(LOCK_LEASE_MS + 1);
    await acquire(store, clock, 'worker-b', { heartbeatMs: 60_000 });
    await a.release();
    expect(store.get(KEY)).toMatchObject({ owner_name: 'worker-b', record_version_number: 'worker-b-1' });
    await expect(acquire(store, clock, 'worker-c')).rejects.toBeInstanceOf(LockedError);
  });

  it('stops the heartbeat and aborts the holder signal', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a');
    await lock.release();
    expect(lock.signal.aborted).toBe(true);
    const calls = store.calls.renew;
    await sleep(HEARTBEAT_MS * 5);
    expect(store.calls.renew).toBe(calls);
  });

  it('is idempotent', async () => {
    const { store, clock } = setup();
    const lock = await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    await lock.release();
    await lock.release();
    expect(store.calls.release).toBe(1);
  });
});

describe('withUserLock', () => {
  let n = 0;
  const deps = (store: LockStore, clock: Clock): LockDeps => ({ locks: store, clock, ids: { newId: () => `w-${++n}` }, lockHeartbeatMs: HEARTBEAT_MS });

  it('runs the work under the lock and releases it', async () => {
    const { store, clock } = setup();
    const result = await withUserLock(deps(store, clock), 'user-1', 'worker-a', async (lock) => {
      expect(store.get(KEY)?.owner_name).toBe('worker-a');
      expect(lock.key).toBe(KEY);
      return 'billed';
    });
    expect(result).toBe('billed');
    expect(store.get(KEY)).toBeUndefined();
  });

  it('releases the lock when the work throws, and rethrows the work error', async () => {
    const { store, clock } = setup();
    const failure = new Error('processor down');
    await expect(
      withUserLock(deps(store, clock), 'user-1', 'worker-a', async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(store.get(KEY)).toBeUndefined();
  });

  it('keeps the work error when the release fails too', async () => {
    const { store, clock } = setup();
    store.release = async () => {
      throw new Error('release failed');
    };
    const failure = new Error('processor down');
    await expect(
      withUserLock(deps(store, clock), 'user-1', 'worker-a', async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
  });

  it('throws LockedError without running the work when the user is locked', async () => {
    const { store, clock } = setup();
    await acquire(store, clock, 'worker-a', { heartbeatMs: 60_000 });
    const work = vi.fn(async () => 'never');
    await expect(withUserLock(deps(store, clock), 'user-1', 'worker-b', work)).rejects.toBeInstanceOf(LockedError);
    expect(work).not.toHaveBeenCalled();
  });
});
