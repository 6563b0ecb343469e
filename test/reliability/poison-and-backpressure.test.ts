import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { acquireUserLock } from '../../src/domain/lock.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { injectThrottling, type ThrottlePlan } from '../support/faults.js';
import { httpEvent, responseOf } from '../support/http-events.js';
import { allRecords, dueRecord, ledgerViolations } from '../support/ledger.js';
import { seedRecords } from '../support/seed.js';

/**
 * Poison and backpressure (DESIGN 5, 7): a poison Kinesis record is reported without holding back
 * other users' records in the batch; DynamoDB throttling (ProvisionedThroughputExceededException
 * injected below the SDK's retry layer) is retried by the SDK or reported as an uncounted failure,
 * never saved as a billing failure.
 */

const NOW = '2026-12-01T12:00:00.000Z';
let app: TestApp;
let throttle: ThrottlePlan;

beforeAll(async () => {
  app = await createTestApp({ label: 'poison', now: NOW });
  throttle = injectThrottling(app.db.client);
});

beforeEach(() => {
  throttle.remaining = 0;
  throttle.thrown = 0;
  throttle.commands = [];
});

function newMember(userId: string) {
  return {
    event_id: `mem_${randomUUID()}`,
    type: 'NEW',
    user_id: userId,
    occurred_at: formatInstant(app.clock.now()),
    plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: '2027-01-15T00:00:00Z' },
  };
}

function collectionMessage(record: BillingRecord) {
  return sqsRecord({ user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: formatInstant(app.clock.now()) });
}

describe('poison records', () => {
  it('a poison Kinesis record is a batch item failure and does not block later records of other users', async () => {
    const [a, b, c] = [`user-${randomUUID()}`, `user-${randomUUID()}`, `user-${randomUUID()}`];
    const poison = kinesisRecord('{"type":"NEW","user_id":', { partitionKey: a });
    const notBase64 = kinesisRecord('x', { partitionKey: a });
    notBase64.kinesis.data = '%%%not-base64%%%';
    const records = [poison, kinesisRecord(newMember(b)), notBase64, kinesisRecord(newMember(c)), kinesisRecord(newMember(a))];
    const out = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent(records));
    expect(out.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual([poison.kinesis.sequenceNumber, notBase64.kinesis.sequenceNumber].sort());
    for (const user of [a, b, c]) expect(await allRecords(app.deps.billing, user), user).toHaveLength(1);
  });

  it('a record that cannot be applied (its user is locked) holds back only that user’s later records', async () => {
    const [blocked, b, c] = [`user-${randomUUID()}`, `user-${randomUUID()}`, `user-${randomUUID()}`];
    await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([kinesisRecord(newMember(blocked))]));
    const held = await acquireUserLock(app.deps.locks, app.clock, blocked, 'someone-else', { newVersion: () => randomUUID(), heartbeatMs: 600_000 });
    const pause = kinesisRecord({ event_id: `mem_${randomUUID()}`, type: 'PAUSE', months: 1, user_id: blocked, occurred_at: formatInstant(app.clock.now()) });
    const cancel = kinesisRecord({ event_id: `mem_${randomUUID()}`, type: 'CANCEL', user_id: blocked, occurred_at: formatInstant(new Date(app.clock.now().getTime() + 1000)) });
    const out = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([pause, kinesisRecord(newMember(b)), cancel, kinesisRecord(newMember(c))]));
    expect(out.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([pause.kinesis.sequenceNumber, cancel.kinesis.sequenceNumber]);
    expect(await allRecords(app.deps.billing, b)).toHaveLength(1);
    expect(await allRecords(app.deps.billing, c)).toHaveLength(1);
    await held.release();
    const retried = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([pause, cancel]));
    expect(retried.batchItemFailures).toEqual([]);
  });

  it('a poison SQS message is reported alone; the other messages of the batch are collected', async () => {
    const good = await seedRecords(app, ...[0, 1, 2].map(() => dueRecord(app.clock.now(), 'pinless')));
    const poison = sqsRecord('{"user_id": 42}');
    const event = sqsEvent([collectionMessage(good[0]!), poison, collectionMessage(good[1]!), collectionMessage(good[2]!)]);
    const out = await createBatchWorkerHandler(app.depsFor('batch-worker'))(event);
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: poison.messageId }]);
    for (const r of good) expect((await app.deps.billing.get(r))?.billing_status).toBe('COMPLETED');
  });
});

describe('throttling', () => {
  it('a throttle the SDK retries away is invisible: the attempt collects, nothing is counted', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    throttle.commands = ['TransactWriteItemsCommand', 'TransactGetItemsCommand', 'PutItemCommand'];
    throttle.remaining = 2;
    const out = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([collectionMessage(record)]));
    expect(throttle.thrown).toBe(2);
    expect(out.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED' });
    expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
  });

  it.each(['TransactGetItemsCommand', 'TransactWriteItemsCommand', 'DeleteItemCommand'])(
    'persistent throttling of %s is reported as a batch item failure, uncounted; the redelivery collects once',
    async (command) => {
      const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
      throttle.commands = [command];
      throttle.remaining = 1_000;
      const message = collectionMessage(record);
      const first = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([message]));
      throttle.remaining = 0;
      const stored = await app.deps.billing.get(record);
      expect(stored?.billing_failure_count ?? 0).toBe(0);
      if (command === 'DeleteItemCommand') {
        // Only the release was throttled: the payment is recorded; the lease lapses on its own.
        expect(first.batchItemFailures).toEqual([]);
        expect(stored?.billing_status).toBe('COMPLETED');
        app.clock.advance(61_000);
      } else {
        expect(first.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
        expect(stored?.billing_status).toBe('PENDING');
        const again = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([message]));
        expect(again.batchItemFailures).toEqual([]);
      }
      expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
      expect(app.simulator.charges().filter((c) => c.user_id === record.user_id)).toHaveLength(1);
      expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
    },
  );

  it('throttling while saving a counted failure leaves nothing counted and the message redelivered', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'error' } });
    throttle.commands = ['TransactWriteItemsCommand'];
    throttle.remaining = 1_000;
    const out = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([collectionMessage(record)]));
    throttle.remaining = 0;
    expect(out.batchItemFailures).toHaveLength(1);
    expect((await app.deps.billing.get(record))?.billing_failure_count ?? 0).toBe(0);
  });

  it('a throttled batch: the throttled users are reported, the rest collected, none counted; redelivery finishes the work', async () => {
    const records = await seedRecords(app, ...Array.from({ length: 10 }, () => dueRecord(app.clock.now(), 'pinless')));
    const messages = records.map(collectionMessage);
    throttle.commands = ['TransactWriteItemsCommand'];
    throttle.remaining = 12;
    const out = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(messages));
    throttle.remaining = 0;
    const failed = new Set(out.batchItemFailures.map((f) => f.itemIdentifier));
    for (const [i, r] of records.entries()) {
      const stored = await app.deps.billing.get(r);
      expect(stored?.billing_failure_count ?? 0).toBe(0);
      expect(stored?.billing_status).toBe(failed.has(messages[i]!.messageId) ? 'PENDING' : 'COMPLETED');
    }
    const again = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(messages.filter((m) => failed.has(m.messageId))));
    expect(again.batchItemFailures).toEqual([]);
    for (const r of records) {
      expect(await ledgerViolations(app, r.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
    }
  });

  it('the API answers a throttled manual pay with 503 unavailable and retry-after, nothing counted', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    throttle.commands = ['TransactGetItemsCommand'];
    throttle.remaining = 1_000;
    const result = await createApiHandler(app.depsFor('api'))(
      httpEvent('POST', { route: '/v1/subscriptions/{subscriptionId}/pay', pathParameters: { subscriptionId: record.subscription_id }, headers: { 'idempotency-key': 'k1' } }),
    );
    throttle.remaining = 0;
    const { status, body, headers } = responseOf(result);
    expect(status).toBe(503);
    expect(body.error).toMatchObject({ code: 'unavailable' });
    expect(headers['retry-after']).toBeDefined();
    expect((await app.deps.billing.get(record))?.billing_failure_count ?? 0).toBe(0);
  });
});
