import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../../src/adapters/dynamodb/billing/store.js';
import { DynamoLockStore, LOCK_TTL_SLACK_SECONDS, ttlOf } from '../../../../src/adapters/dynamodb/lock-store.js';
import { historyRowOf } from '../../../../src/domain/billing-record.js';
import { ConcurrentModificationError } from '../../../../src/domain/errors.js';
import { acquireUserLock, userLockKey } from '../../../../src/domain/lock.js';
import { runCollectionAttempt } from '../../../../src/domain/use-cases/collect.js';
import { createTestApp, type TestApp } from '../../../support/app.js';
import { dueRecord, makeRecord, nextVersion } from '../../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../../support/dynamo.js';
import { seedRecords } from '../../../support/seed.js';

/** Issue 13: the user lock is released inside the attempt's transaction (3 requests per billed subscription). */
describe('releasing the user lock inside the billing transaction, on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoBillingStore;
  let locks: DynamoLockStore;
  const clock = { now: () => new Date() };
  let n = 0;
  const newVersion = () => `rvn-${++n}`;

  beforeAll(async () => {
    db = await createTestDynamo('lock-in-tx');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory, locksTableName: db.tables.locks });
    locks = new DynamoLockStore(db.client, db.tables.locks);
  });

  const lockItem = async (userId: string) =>
    (await db.client.send(new GetItemCommand({ TableName: db.tables.locks, Key: { PartitionKey: { S: userLockKey(userId) } }, ConsistentRead: true }))).Item;

  it('deletes the holder’s lock in the same transaction as the write, and a later release is a no-op', async () => {
    const record = makeRecord();
    await store.commit({ writes: [{ kind: 'create', record }], history: [historyRowOf(record)] });
    const lock = await acquireUserLock(locks, clock, record.user_id, 'worker', { newVersion, heartbeatMs: 60_000 });
    const after = nextVersion(record, { payment_error: 'x' });
    await lock.releaseWith((releaseLock) => store.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyRowOf(after)], releaseLock }));
    expect(await lockItem(record.user_id)).toBeUndefined();
    expect((await store.get(record))?.version).toBe(after.version);
    await lock.release();
  });

  it('a lock taken on a business clock hours behind the wall clock keeps a TTL after wall-clock now (DynamoDB deletes by wall time)', async () => {
    const behind = { now: () => new Date(Date.now() - 6 * 3_600_000) };
    const userId = `user-ttl-${++n}`;
    const lock = await acquireUserLock(locks, behind, userId, 'worker', { newVersion, heartbeatMs: 60_000 });
    const expiresAt = Number((await lockItem(userId))?.expires_at?.N);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + LOCK_TTL_SLACK_SECONDS - 5);
    expect(ttlOf({ lease_expires_at: 0 }, 1_000_000)).toBe(1000 + LOCK_TTL_SLACK_SECONDS);
    expect(ttlOf({ lease_expires_at: 5_000_000 }, 1_000_000)).toBe(5000 + LOCK_TTL_SLACK_SECONDS);
    await lock.release();
  });

  it('a lock taken over by another holder fails the whole transaction: nothing lands, the other lock stays', async () => {
    const record = makeRecord();
    await store.commit({ writes: [{ kind: 'create', record }], history: [historyRowOf(record)] });
    const mine = await acquireUserLock(locks, clock, record.user_id, 'worker', { newVersion, heartbeatMs: 60_000, leaseMs: 1 });
    await new Promise((r) => setTimeout(r, 5));
    const theirs = await acquireUserLock(locks, clock, record.user_id, 'other', { newVersion, heartbeatMs: 60_000 });
    const after = nextVersion(record, { payment_error: 'x' });
    await expect(
      mine.releaseWith((releaseLock) => store.commit({ writes: [{ kind: 'update', read: record, record: after }], history: [historyRowOf(after)], releaseLock })),
    ).rejects.toBeInstanceOf(ConcurrentModificationError);
    expect((await store.get(record))?.version).toBe(record.version);
    expect((await lockItem(record.user_id))?.owner_name?.S).toBe('other');
    await theirs.release();
  });
});

describe('requests per billed subscription on the scheduled path', () => {
  let app: TestApp;
  const sent: string[] = [];
  beforeAll(async () => {
    app = await createTestApp({ label: 'requests' });
    app.db.client.middlewareStack.add((next, context) => async (args) => {
      sent.push(context.commandName ?? '?');
      return next(args);
    }, { step: 'initialize', name: 'countRequests' });
  });

  it('is 3: acquire the lock, read the record, one transaction that also releases the lock', async () => {
    const record = dueRecord(app.clock.now(), 'pinless');
    await seedRecords(app, record);
    sent.length = 0;
    const outcome = await runCollectionAttempt({ ...app.deps, lockHeartbeatMs: 60_000 }, { key: record, process: 'SCHEDULED', owner: 'worker', namedAtLock: true });
    expect(outcome.kind).toBe('collected');
    expect(sent).toEqual(['PutItemCommand', 'TransactGetItemsCommand', 'TransactWriteItemsCommand']);
  });
});
