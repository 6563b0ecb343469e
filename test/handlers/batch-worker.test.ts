import { beforeEach, describe, expect, it } from 'vitest';
import type { BillingPeriodMessage as CollectionMessage } from '../../src/domain/collections.js';
import { TransientError } from '../../src/domain/errors.js';
import type { PaymentProcessor } from '../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { historyCount, holdUserLock, recordsOf, seedRecords } from '../support/seed.js';
import { BILLING_RETRY_WAITS_MS, HOUR } from '../support/time.js';

/** The ladder's first wait: where a first counted failure saves its next attempt. */
const FIRST_WAIT = BILLING_RETRY_WAITS_MS[0]!;

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));

function messageFor(record: BillingRecord, process: CollectionMessage['process'] = 'SCHEDULED'): CollectionMessage {
  return { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process, enqueued_at: at(0) };
}

describe('batch-worker', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp({ label: 'bworker', now: NOW });
  });

  it('collects a due pinless record, opens the next period and reports no failures', async () => {
    const record = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, record);

    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(record))]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    const [next, collected] = await recordsOf(app, record.user_id);
    expect(collected).toMatchObject({ subscription_id: record.subscription_id, billing_status: 'COMPLETED', process: 'SCHEDULED', payment_attempts: 1 });
    expect(next).toMatchObject({ billing_status: 'PENDING', billing_date: '2027-01-01T11:00:00.000000000Z' });
    expect(app.simulator.charges()).toHaveLength(1);
  });

  it('submits ACH (ACHSENT) and carries the process of the message', async () => {
    const record = makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-25 * HOUR) });
    await seedRecords(app, record);
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(record, 'RETRY'))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'ACHSENT', process: 'RETRY', payment_attempts: 2 });
  });

  it('accepts an ad-hoc BATCH message', async () => {
    const record = makeRecord({ billing_date: at(-HOUR), payment_method: 'card' });
    await seedRecords(app, record);
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(record, 'BATCH'))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED', process: 'BATCH' });
  });

  it('reports malformed messages as failures and writes nothing for them', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, record);
    const notJson = sqsRecord('{not json');
    const missingField = sqsRecord({ ...messageFor(record), subscription_id: undefined });
    const badProcess = sqsRecord({ ...messageFor(record), process: 'MANUAL' });
    const badDate = sqsRecord({ ...messageFor(record), billing_date: 'yesterday' });

    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([notJson, missingField, badProcess, badDate]));

    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([notJson, missingField, badProcess, badDate].map((r) => r.messageId));
    expect(await app.deps.billing.get(record)).toEqual(record);
    expect(app.simulator.charges()).toHaveLength(0);
  });

  it('fails only the message of a user whose lock is held; the rest of the batch is collected', async () => {
    const locked = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    const free = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, locked, free);
    await holdUserLock(app, locked.user_id);
    const lockedMessage = sqsRecord(messageFor(locked));

    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([lockedMessage, sqsRecord(messageFor(free))]));

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: lockedMessage.messageId }]);
    expect(await app.deps.billing.get(locked)).toEqual(locked);
    expect((await app.deps.billing.get(free))?.billing_status).toBe('COMPLETED');
  });

  it('does not retry a decline: the record is FAILED with the decline text', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, record);
    app.simulator.configure({ users: { [record.user_id]: 'decline' } });
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(record))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'FAILED', payment_error: 'The payment was declined by the bank.' });
  });

  it('does not retry a counted failure: it is saved on the ladder instead', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, record);
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(record))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({
      billing_status: 'PENDING',
      billing_failure_count: 1,
      billing_failed_for: `${record.billing_date}#0`,
      billing_last_error: 'The payment processor is unavailable.',
      billing_next_attempt_at: at(FIRST_WAIT),
    });
  });

  it('retries an uncounted (transient) failure and saves nothing', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    const flaky: PaymentProcessor = { submit: async () => { throw new TransientError('connection reset'); } };
    const faulty = await createTestApp({ label: 'bworker-t', now: NOW, processor: flaky });
    await seedRecords(faulty, record);
    const message = sqsRecord(messageFor(record));
    const response = await createBatchWorkerHandler(faulty.depsFor('batch-worker'))(sqsEvent([message]));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
    expect(await faulty.deps.billing.get(record)).toEqual(record);
  });

  it('does not retry a record that is not due, waiting on the ladder, or already collected', async () => {
    const future = makeRecord({ billing_date: at(HOUR) });
    const waiting = makeRecord({
      billing_date: at(-HOUR),
      billing_failed_for: `${at(-HOUR)}#0`,
      billing_failure_count: 1,
      billing_failed_at: at(-60_000),
      billing_next_attempt_at: at(14 * 60_000),
      billing_last_error: 'The payment processor is unavailable.',
    });
    const done = makeRecord({ billing_date: at(-HOUR), billing_status: 'COMPLETED' });
    const missing = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, future, waiting, done);
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([future, waiting, done, missing].map((r) => sqsRecord(messageFor(r)))));
    expect(response.batchItemFailures).toEqual([]);
    expect(app.simulator.charges()).toHaveLength(0);
    expect(await app.deps.billing.get(waiting)).toEqual(waiting);
  });

  it('charges once when the same record arrives twice (duplicate delivery), in one batch or across batches', async () => {
    const record = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, record);
    const handler = createBatchWorkerHandler(app.depsFor('batch-worker'));
    const first = await handler(sqsEvent([sqsRecord(messageFor(record)), sqsRecord(messageFor(record))]));
    const again = await handler(sqsEvent([sqsRecord(messageFor(record))]));
    expect(first.batchItemFailures).toEqual([]);
    expect(again.batchItemFailures).toEqual([]);
    expect(app.simulator.charges()).toHaveLength(1);
    expect(await historyCount(app, record.subscription_id)).toBe(2);
  });

  it('runs messages of one user in order (no self-inflicted lock conflict) and users concurrently', async () => {
    const user = 'user-many-periods';
    const older = makeRecord({ user_id: user, billing_date: at(-40 * 24 * HOUR), payment_method: 'pinless' });
    const newer = makeRecord({ user_id: user, billing_date: at(-10 * 24 * HOUR), payment_method: 'pinless' });
    const others = Array.from({ length: 12 }, () => makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' }));
    await seedRecords(app, older, newer, ...others);

    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(
      sqsEvent([older, ...others.slice(0, 6), newer, ...others.slice(6)].map((r) => sqsRecord(messageFor(r)))),
      lambdaContext(),
    );

    expect(response.batchItemFailures).toEqual([]);
    expect((await app.deps.billing.get(older))?.billing_status).toBe('COMPLETED');
    expect((await app.deps.billing.get(newer))?.billing_status).toBe('COMPLETED');
    expect(app.simulator.charges()).toHaveLength(14);
  });

  it('marks a user that is not active INACTIVE and does not retry', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, record);
    app.simulator.configure({ accounts: { [record.user_id]: { status: 'banned' } } });
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(record))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'INACTIVE', updated_event: 'USER_BANNED' });
  });

  it('retries a message whose attempt raised (the store is unreachable)', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, record);
    const guarded = app.depsFor('batch-worker');
    const deps = { ...guarded, billing: Object.assign(Object.create(guarded.billing) as typeof guarded.billing, { getForAttempt: async () => { throw new Error('boom'); } }) };
    const message = sqsRecord(messageFor(record));
    const response = await createBatchWorkerHandler(deps)(sqsEvent([message]));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
  });
});
