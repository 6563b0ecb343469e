import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoLockStore } from '../../../src/adapters/dynamodb/lock-store.js';
import type { LockLease } from '../../../src/domain/ports/locks.js';
import { userLockKey } from '../../../src/domain/lock.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';

// Real time: DynamoDB Local honours TTL, so a lock whose expires_at is in the past disappears.
const NOW = Date.now();

function lease(key: string, owner: string, nowMs = NOW, durationMs = 60_000): LockLease {
  return { key, owner_name: owner, record_version_number: randomUUID(), lease_duration_ms: durationMs, lease_expires_at: nowMs + durationMs };
}

describe('DynamoLockStore on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoLockStore;
  beforeAll(async () => {
    db = await createTestDynamo('locks');
    store = new DynamoLockStore(db.client, db.tables.locks);
  });

  async function stored(key: string) {
    return (await db.client.send(new GetItemCommand({ TableName: db.tables.locks, Key: { PartitionKey: { S: key } }, ConsistentRead: true }))).Item;
  }

  it('writes the DESIGN 2.6 attributes, with expires_at in epoch seconds after the lease', async () => {
    const key = userLockKey(randomUUID());
    const l = lease(key, 'invocation-1');
    expect(await store.tryAcquire(l, NOW)).toBe(true);
    const item = await stored(key);
    expect(item?.owner_name).toEqual({ S: 'invocation-1' });
    expect(item?.record_version_number).toEqual({ S: l.record_version_number });
    expect(item?.lease_duration_ms).toEqual({ N: '60000' });
    expect(item?.lease_expires_at).toEqual({ N: String(NOW + 60_000) });
    expect(Number(item?.expires_at?.N)).toBeGreaterThanOrEqual(Math.ceil((NOW + 60_000) / 1000));
    expect(Number(item?.expires_at?.N)).toBeLessThan((NOW + 60_000) / 100); // seconds, not ms
  });

  it('lets exactly one of 20 concurrent acquirers win', async () => {
    const key = userLockKey(randomUUID());
    const leases = Array.from({ length: 20 }, (_, i) => lease(key, `owner-${i}`));
    const results = await Promise.all(leases.map((l) => store.tryAcquire(l, NOW)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = leases[results.indexOf(true)]!;
    expect((await stored(key))?.record_version_number).toEqual({ S: winner.record_version_number });
  });

  it('refuses a live lease and lets another owner take over an expired one', async () => {
    const key = userLockKey(randomUUID());
    expect(await store.tryAcquire(lease(key, 'a', NOW, 1_000), NOW)).toBe(true);
    expect(await store.tryAcquire(lease(key, 'b', NOW + 999), NOW + 999)).toBe(false);
    expect(await store.tryAcquire(lease(key, 'b', NOW + 1_000), NOW + 1_000)).toBe(false); // not yet strictly expired
    const b = lease(key, 'b', NOW + 1_001);
    expect(await store.tryAcquire(b, NOW + 1_001)).toBe(true);
    expect((await stored(key))?.owner_name).toEqual({ S: 'b' });
  });

  it('tells the new holder which expired lease it took over (its purpose included), in the same request', async () => {
    const key = userLockKey(randomUUID());
    const dead = { ...lease(key, 'dead', NOW, 1_000), purpose: '2026-12-01T12:00:00.000000000Z' };
    const seen: LockLease[] = [];
    expect(await store.tryAcquire(dead, NOW, (previous) => seen.push(previous))).toBe(true);
    expect(seen).toEqual([]); // nothing was there
    expect((await stored(key))?.purpose).toEqual({ S: dead.purpose });
    expect(await store.tryAcquire(lease(key, 'next', NOW + 2_000), NOW + 2_000, (previous) => seen.push(previous))).toBe(true);
    expect(seen).toEqual([dead]);
  });

  it('stores held_since and hands it to the holder that takes the lease over', async () => {
    const key = userLockKey(randomUUID());
    const dead = { ...lease(key, 'dead', NOW, 1_000), purpose: '2026-12-01T12:00:00.000000000Z', held_since: NOW - 5_000 };
    expect(await store.tryAcquire(dead, NOW)).toBe(true);
    expect((await stored(key))?.held_since).toEqual({ N: String(NOW - 5_000) });
    const seen: LockLease[] = [];
    expect(await store.tryAcquire(lease(key, 'next', NOW + 2_000), NOW + 2_000, (previous) => seen.push(previous))).toBe(true);
    expect(seen).toEqual([dead]);
  });

  it('renews with the current record_version_number and refuses a stale one', async () => {
    const key = userLockKey(randomUUID());
    const first = lease(key, 'a');
    await store.tryAcquire(first, NOW);
    const second = lease(key, 'a', NOW + 1_000);
    expect(await store.renew(key, first.record_version_number, second)).toBe(true);
    expect(await store.renew(key, first.record_version_number, lease(key, 'a', NOW + 2_000))).toBe(false);
    expect((await stored(key))?.record_version_number).toEqual({ S: second.record_version_number });
  });

  it('fails renewal after the lease was taken over', async () => {
    const key = userLockKey(randomUUID());
    const a = lease(key, 'a', NOW, 1_000);
    await store.tryAcquire(a, NOW);
    await store.tryAcquire(lease(key, 'b', NOW + 5_000), NOW + 5_000);
    expect(await store.renew(key, a.record_version_number, lease(key, 'a', NOW + 5_001))).toBe(false);
    expect((await stored(key))?.owner_name).toEqual({ S: 'b' });
  });

  it('releases its own lock, and a stale release leaves the new holder alone', async () => {
    const key = userLockKey(randomUUID());
    const a = lease(key, 'a', NOW, 1_000);
    await store.tryAcquire(a, NOW);
    const b = lease(key, 'b', NOW + 2_000);
    await store.tryAcquire(b, NOW + 2_000);
    await expect(store.release(key, a.record_version_number)).resolves.toBeUndefined();
    expect((await stored(key))?.owner_name).toEqual({ S: 'b' });
    await store.release(key, b.record_version_number);
    expect(await stored(key)).toBeUndefined();
    await expect(store.release(key, b.record_version_number)).resolves.toBeUndefined(); // already gone
    expect(await store.tryAcquire(lease(key, 'c', NOW + 2_001), NOW + 2_001)).toBe(true);
  });
});
