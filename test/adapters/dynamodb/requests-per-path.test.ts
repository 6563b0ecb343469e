import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { LockedError } from '../../../src/domain/errors.js';
import { acquireUserLock, userLockKey, type HeldLock } from '../../../src/domain/lock.js';
import { runCollectionAttempt } from '../../../src/domain/use-cases/collect.js';
import { manualPay } from '../../../src/domain/use-cases/manual-pay.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { createApiHandler } from '../../../src/handlers/api.js';
import { createBatchWorkerHandler } from '../../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../../src/handlers/memberships-consumer.js';
import { createBalanceWorkerHandler } from '../../../src/handlers/webhook-balance-worker.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { kinesisEvent, kinesisRecord, sqsEvent, sqsRecord } from '../../support/aws-events.js';
import { dueRecord } from '../../support/billing-fixtures.js';
import { httpEvent, operatorAuth, responseOf } from '../../support/http-events.js';
import { seedRecords } from '../../support/seed.js';
import { DAY } from '../../support/time.js';

/**
 * Issue 13: DynamoDB requests per billed subscription on each path, counted by an SDK middleware
 * on the real handlers against DynamoDB Local. Lock heartbeats (a PutItem on the locks table
 * conditioned on the previous record_version_number) are counted apart.
 */

interface Sent {
  readonly command: string;
  readonly table: string;
  readonly heartbeat: boolean;
  /** A read of the processors' circuits: once per few seconds per container, not per subscription. */
  readonly circuit: boolean;
}

let app: TestApp;
const sent: Sent[] = [];

beforeAll(async () => {
  app = await createTestApp({ label: 'requests-per-path' });
  app.db.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; ConditionExpression?: string; TransactItems?: unknown[] };
      const command = String(context.commandName ?? '?').replace(/Command$/, '');
      const heartbeat = command === 'PutItem' && input.TableName === app.db.tables.locks && /record_version_number = :previous/.test(input.ConditionExpression ?? '');
      // The attempt never reads the locks table: a GetItem there is a circuit read (DESIGN 15).
      const circuit = command === 'GetItem' && input.TableName === app.db.tables.locks;
      sent.push({ command, table: input.TableName ?? (input.TransactItems ? 'transaction' : '?'), heartbeat, circuit });
      return next(args);
    },
    { step: 'initialize', name: 'countRequestsPerPath' },
  );
});

/** Runs `work` and answers the requests it sent, heartbeats and circuit reads apart. */
async function counted(work: () => Promise<unknown>): Promise<{ requests: string[]; heartbeats: number; circuitReads: number }> {
  sent.length = 0;
  await work();
  return {
    requests: sent.filter((s) => !s.heartbeat && !s.circuit).map((s) => s.command),
    heartbeats: sent.filter((s) => s.heartbeat).length,
    circuitReads: sent.filter((s) => s.circuit).length,
  };
}

const message = (record: BillingRecord, process: 'SCHEDULED' | 'RETRY') =>
  sqsRecord({ user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process, enqueued_at: formatInstant(app.clock.now()) });

const api = () => createApiHandler(app.depsFor('api'));

describe('DynamoDB requests per billed subscription', () => {
  it('scheduled (batch-worker): 3 — lock, the period with the instruments item (one TransactGetItems), one transaction that releases the lock', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    const { requests } = await counted(() => createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([message(record, 'SCHEDULED')])));
    expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
    expect(requests).toEqual(['PutItem', 'TransactGetItems', 'TransactWriteItems']);
  });

  it('retry (batch-worker): 3', async () => {
    const now = app.clock.now();
    const [record] = await seedRecords(
      app,
      dueRecord(now, 'pinless', { billing_status: 'FAILED', payment_attempts: 1, last_attempt_date: formatInstant(new Date(now.getTime() - DAY - 3_600_000)), payment_error: 'declined' }),
    );
    const { requests } = await counted(() => createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([message(record, 'RETRY')])));
    expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
    expect(requests).toEqual(['PutItem', 'TransactGetItems', 'TransactWriteItems']);
  });

  it('batch of ten (batch-worker): 3 per subscription', async () => {
    const records = await seedRecords(app, ...Array.from({ length: 10 }, () => dueRecord(app.clock.now())));
    const { requests, circuitReads } = await counted(() => createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(records.map((r) => message(r, 'SCHEDULED')))));
    for (const r of records) expect((await app.deps.billing.get(r))?.billing_status).toBe('COMPLETED');
    expect(requests).toHaveLength(30);
    // The circuits are read once for the batch (one GetItem per service), not once per subscription.
    expect(circuitReads).toBe(3);
  });

  it('manual pay (api): at most 5', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    let status = 0;
    const { requests } = await counted(async () => {
      const res = responseOf(
        await api()(
          httpEvent('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: record.subscription_id }, headers: { 'Idempotency-Key': randomUUID() }, auth: operatorAuth }),
        ),
      );
      status = res.status;
      expect(res.body).toMatchObject({ outcome: 'collected', subscription: { billing_status: 'COMPLETED' } });
    });
    expect(status).toBe(200);
    // The index lookup (keys only), the lock, the consistent read under it, the member's daily debit
    // reservation (DESIGN 15: before anything is presented), one transaction that releases the lock.
    expect(requests).toEqual(['Query', 'PutItem', 'TransactGetItems', 'UpdateItem', 'TransactWriteItems']);
  });

  it('operator retry-billing (api): at most 6', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless', { billing_status: 'FAILED', payment_attempts: 1, last_attempt_date: formatInstant(app.clock.now()) }));
    const { requests } = await counted(async () => {
      const res = responseOf(
        await api()(
          httpEvent('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'customer called' }, auth: operatorAuth }),
        ),
      );
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ outcome: 'billed', subscription: { billing_status: 'COMPLETED' } });
    });
    // Lookup, lock, read, the daily debit reservation, the clear with its audit row, the attempt's transaction (which releases the lock).
    expect(requests).toEqual(['Query', 'PutItem', 'TransactGetItems', 'UpdateItem', 'TransactWriteItems', 'TransactWriteItems']);
  });

  it('balance webhook (webhook-balance-worker): at most 4', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    const body = { event_id: randomUUID(), user_id: record.user_id, institution_id: 'ins_1', available_balance_cents: 100_000, current_balance_cents: 100_000, occurred_at: formatInstant(app.clock.now()) };
    const { requests } = await counted(() => createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(body)])));
    expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
    // The user's recent records, the lock, the consistent read, one transaction that releases the lock.
    expect(requests).toEqual(['Query', 'PutItem', 'TransactGetItems', 'TransactWriteItems']);
  });

  it('heartbeats are counted apart: a slow submission renews the lease, the attempt is still 3', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    const slow = { submit: async (r: Parameters<typeof app.simulator.submit>[0]) => (await new Promise((done) => setTimeout(done, 250)), app.simulator.submit(r)) };
    const { requests, heartbeats } = await counted(() =>
      runCollectionAttempt({ ...app.deps, processor: slow, lockHeartbeatMs: 40 }, { key: record, process: 'SCHEDULED', owner: 'worker' }),
    );
    expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
    expect(heartbeats).toBeGreaterThan(0);
    expect(requests).toEqual(['PutItem', 'TransactGetItems', 'TransactWriteItems']);
  });
});

describe('the lock released inside the transaction of a caller that holds it', () => {
  it('manual pay whose lease was taken over fails its transaction: nothing lands, nothing is released', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    let theirs: HeldLock | undefined;
    // The processor stalls past the lease; another invocation takes the expired lock meanwhile.
    const stalling = {
      submit: async (r: Parameters<typeof app.simulator.submit>[0]) => {
        await new Promise((done) => setTimeout(done, 30));
        app.clock.advance(5); // the 1 ms lease has lapsed on the lock's clock
        theirs = await acquireUserLock(app.deps.locks, app.deps.clock, record.user_id, 'other', { newVersion: () => randomUUID(), heartbeatMs: 60_000 });
        return app.simulator.submit(r);
      },
    };
    const deps = { ...app.deps, processor: stalling, lockLeaseMs: 1, lockHeartbeatMs: 60_000 };
    const result = await manualPay(deps, { subscriptionId: record.subscription_id, owner: 'api', idempotencyKey: randomUUID() });
    expect(result.outcome.kind, JSON.stringify(result.outcome)).toBe('failed_uncounted');
    const stored = await app.deps.billing.get(record);
    expect(stored?.billing_status).toBe('PENDING');
    expect(stored?.version).toBe(record.version);
    expect((await app.deps.locks.tryAcquire({ key: userLockKey(record.user_id), owner_name: 'probe', record_version_number: 'probe', lease_duration_ms: 60_000, lease_expires_at: Date.now() + 60_000 }, app.deps.clock.now().getTime()))).toBe(false);
    await theirs?.release();
  });

  it('a repeat of an answered manual pay is answered while another invocation holds the lock', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    const key = randomUUID();
    const first = await manualPay(app.deps, { subscriptionId: record.subscription_id, owner: 'api', idempotencyKey: key });
    expect(first.outcome.kind).toBe('collected');
    const other = await acquireUserLock(app.deps.locks, app.deps.clock, record.user_id, 'other', { newVersion: () => randomUUID(), heartbeatMs: 60_000 });
    const again = await manualPay(app.deps, { subscriptionId: record.subscription_id, owner: 'api', idempotencyKey: key });
    expect(again).toMatchObject({ replayed: true, subscription: { billing_status: 'COMPLETED', payment_attempts: 1 } });
    await expect(manualPay(app.deps, { subscriptionId: record.subscription_id, owner: 'api', idempotencyKey: randomUUID() })).rejects.toBeInstanceOf(LockedError);
    await other.release();
  });
});

describe('DynamoDB requests per membership event (memberships-consumer)', () => {
  const membership = (type: 'PAUSE' | 'CANCEL', userId: string) =>
    kinesisEvent([kinesisRecord({ event_id: randomUUID(), type, user_id: userId, occurred_at: formatInstant(app.clock.now()), ...(type === 'PAUSE' ? { months: 1 } : {}) })]);
  const notDue = () => {
    const now = app.clock.now();
    return dueRecord(now, 'pinless', { billing_date: formatInstant(new Date(now.getTime() + 10 * DAY)), last_run_date: formatInstant(new Date(now.getTime() - DAY)) });
  };

  for (const type of ['PAUSE', 'CANCEL'] as const) {
    it(`${type} of a period not due yet: 4 — lock, the chain read once, one transaction, release`, async () => {
      const [record] = await seedRecords(app, notDue());
      const { requests } = await counted(async () => expect((await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(membership(type, record.user_id))).batchItemFailures).toEqual([]));
      const after = await app.deps.billing.get(record);
      expect(type === 'PAUSE' ? after?.billing_status : after?.cancel_requested_at).toBe(type === 'PAUSE' ? 'PAUSED' : formatInstant(app.clock.now()));
      expect(requests).toEqual(['PutItem', 'Query', 'TransactWriteItems', 'DeleteItem']);
    });
  }

  it('PAUSE with a due period: the attempt collects it first, the chain is read again after it, the pause lands on the next period', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    const { requests } = await counted(async () => expect((await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(membership('PAUSE', record.user_id))).batchItemFailures).toEqual([]));
    expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
    const chain = (await app.deps.billing.listByUser(record.user_id, { limit: 5 })).items;
    expect(chain[0]).toMatchObject({ billing_status: 'PAUSED' });
    // Lock, chain read, the attempt (purpose, read, transaction), the chain read after it, the pause's transaction, release.
    expect(requests.filter((r) => r === 'Query')).toHaveLength(2);
    expect(requests[0]).toBe('PutItem');
    expect(requests.at(-1)).toBe('DeleteItem');
  });
});
