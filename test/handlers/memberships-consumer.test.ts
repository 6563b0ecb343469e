import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { formatInstant } from '../../src/domain/time.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { holdUserLock, recordsOf, releaseUserLock, seedRecords } from '../support/seed.js';
import { DAY, HOUR } from '../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));

let tick = 0;
function membership(type: string, userId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  tick += 1;
  return { event_id: randomUUID(), type, user_id: userId, occurred_at: formatInstant(new Date(Date.parse(NOW) - 60_000 + tick)), ...extra };
}

const plan = (first = '2026-12-15T00:00:00Z') => ({
  amount: '19.99',
  term: 'MONTHLY',
  tier: 'plus:v3',
  payment_method: 'ach',
  account_last_four: '6789',
  first_billing_date: first,
});

describe('memberships-consumer', () => {
  let app: TestApp;
  let consume: ReturnType<typeof createMembershipsConsumerHandler>;
  beforeEach(async () => {
    app = await createTestApp({ label: 'members', now: NOW });
    consume = createMembershipsConsumerHandler(app.depsFor('memberships-consumer'));
  });

  it('NEW writes the first PENDING record with the amount in exact cents; a replay is a no-op', async () => {
    const user = `user-${randomUUID()}`;
    const event = membership('NEW', user, { plan: { ...plan(), friday_billing: 2 } });
    const response = await consume(kinesisEvent([kinesisRecord(event)]), lambdaContext());
    const replay = await consume(kinesisEvent([kinesisRecord(event)]));

    expect(response.batchItemFailures).toEqual([]);
    expect(replay.batchItemFailures).toEqual([]);
    const records = await recordsOf(app, user);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      billing_status: 'PENDING',
      amount_cents: 1999,
      billing_date: '2026-12-15T00:00:00.000000000Z',
      term: 'MONTHLY',
      tier: 'plus:v3',
      payment_method: 'ach',
      account_last_four: '6789',
      friday_billing: 2,
      membership_event_ids: [event.event_id],
      payment_attempts: 0,
    });
    expect((await app.deps.billing.history(records[0]!.subscription_id)).items).toHaveLength(1);
  });

  it('PAUSE of a period not yet due pauses it for the given months', async () => {
    const record = makeRecord({ billing_date: at(10 * DAY) });
    await seedRecords(app, record);
    const event = membership('PAUSE', record.user_id, { months: 2 });
    expect((await consume(kinesisEvent([kinesisRecord(event)]))).batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'PAUSED', paused_months: 2, updated_event: 'PAUSED', membership_event_ids: [event.event_id] });
  });

  it('PAUSE never erases a due, unbilled period: it is collected first and the pause starts with the next period', async () => {
    const due = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, due);

    const response = await consume(kinesisEvent([kinesisRecord(membership('PAUSE', due.user_id, { months: 1 }))]));

    expect(response.batchItemFailures).toEqual([]);
    const [next, collected] = await recordsOf(app, due.user_id);
    expect(collected).toMatchObject({ subscription_id: due.subscription_id, billing_status: 'COMPLETED', process: 'SCHEDULED' });
    expect(next).toMatchObject({ billing_status: 'PAUSED', paused_months: 1, billing_date: '2027-01-01T11:00:00.000000000Z' });
    expect(app.simulator.charges()).toHaveLength(1);
  });

  it('PAUSE while the due period cannot be collected leaves it owed (on the ladder) and pauses the next period', async () => {
    const due = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, due);
    app.simulator.configure({ users: { [due.user_id]: 'error' } });

    const response = await consume(kinesisEvent([kinesisRecord(membership('PAUSE', due.user_id, { months: 3 }))]));

    expect(response.batchItemFailures).toEqual([]);
    const [next, owed] = await recordsOf(app, due.user_id);
    expect(owed).toMatchObject({ subscription_id: due.subscription_id, billing_status: 'PENDING', billing_failure_count: 1 });
    expect(next).toMatchObject({ billing_status: 'PAUSED', paused_months: 3, billing_date: '2027-01-01T11:00:00.000000000Z' });

    // Once the processor recovers, the owed period is collected and its next-period create finds the paused one.
    app.simulator.configure({ default: 'approve' });
    app.clock.advance(HOUR);
    const msg = { user_id: due.user_id, billing_date: due.billing_date, subscription_id: due.subscription_id, process: 'SCHEDULED', enqueued_at: at(HOUR) };
    expect((await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(msg)]))).batchItemFailures).toEqual([]);
    const after = await recordsOf(app, due.user_id);
    expect(after.map((r) => r.billing_status)).toEqual(['PAUSED', 'ACHSENT']);
  });

  it('CANCEL of a period not yet due marks it; the collections run completes the cancel at its billing date without charging', async () => {
    const record = makeRecord({ billing_date: at(10 * DAY), payment_method: 'pinless' });
    await seedRecords(app, record);
    expect((await consume(kinesisEvent([kinesisRecord(membership('CANCEL', record.user_id))]))).batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'PENDING', updated_event: 'CANCEL_REQUESTED' });

    app.clock.advance(10 * DAY);
    const msg = { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: at(10 * DAY) };
    await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(msg)]));
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED' });
    expect(await recordsOf(app, record.user_id)).toHaveLength(1);
    expect(app.simulator.charges()).toHaveLength(0);
  });

  it('CANCEL with a due period collects it first and marks the next period', async () => {
    const due = makeRecord({ billing_date: at(-HOUR), payment_method: 'card' });
    await seedRecords(app, due);
    await consume(kinesisEvent([kinesisRecord(membership('CANCEL', due.user_id))]));
    const [next, collected] = await recordsOf(app, due.user_id);
    expect(collected).toMatchObject({ billing_status: 'COMPLETED' });
    expect(next).toMatchObject({ billing_status: 'PENDING', updated_event: 'CANCEL_REQUESTED' });
    expect(app.simulator.charges()).toHaveLength(1);
  });

  it('CANCEL of a paused period cancels it at once', async () => {
    const record = makeRecord({ billing_status: 'PAUSED', paused_months: 2, billing_date: at(5 * DAY) });
    await seedRecords(app, record);
    await consume(kinesisEvent([kinesisRecord(membership('CANCEL', record.user_id))]));
    const after = await app.deps.billing.get(record);
    expect(after).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED' });
    expect(after?.paused_months).toBeUndefined();
  });

  it('UNPAUSE returns a paused period to PENDING', async () => {
    const record = makeRecord({ billing_status: 'PAUSED', paused_months: 2, billing_date: at(5 * DAY) });
    await seedRecords(app, record);
    await consume(kinesisEvent([kinesisRecord(membership('UNPAUSE', record.user_id))]));
    const after = await app.deps.billing.get(record);
    expect(after).toMatchObject({ billing_status: 'PENDING', updated_event: 'UNPAUSED' });
    expect(after?.paused_months).toBeUndefined();
  });

  it('REACTIVATE returns an INACTIVE period to PENDING and collects it at once (process REACTIVATION)', async () => {
    const record = makeRecord({ billing_status: 'INACTIVE', updated_event: 'USER_BANNED', billing_date: at(-2 * DAY), payment_method: 'pinless' });
    await seedRecords(app, record);
    await consume(kinesisEvent([kinesisRecord(membership('REACTIVATE', record.user_id))]));
    const [next, collected] = await recordsOf(app, record.user_id);
    expect(collected).toMatchObject({ billing_status: 'COMPLETED', process: 'REACTIVATION' });
    expect(next?.billing_status).toBe('PENDING');
    const rows = (await app.deps.billing.history(record.subscription_id)).items.map((r) => r.updated_event);
    expect(rows).toContain('REACTIVATED');
  });

  it('BAN makes every open period INACTIVE (USER_BANNED)', async () => {
    const user = `user-${randomUUID()}`;
    const failed = makeRecord({ user_id: user, billing_status: 'FAILED', billing_date: at(-3 * DAY), payment_attempts: 1, last_attempt_date: at(-2 * DAY) });
    const next = makeRecord({ user_id: user, billing_date: at(27 * DAY) });
    await seedRecords(app, failed, next);
    await consume(kinesisEvent([kinesisRecord(membership('BAN', user))]));
    for (const r of [failed, next]) expect(await app.deps.billing.get(r)).toMatchObject({ billing_status: 'INACTIVE', updated_event: 'USER_BANNED' });
  });

  it('CLOSEACCOUNT cancels periods not yet due without taking the lock, and leaves a due period owed', async () => {
    const user = `user-${randomUUID()}`;
    const failed = makeRecord({ user_id: user, billing_status: 'FAILED', billing_date: at(-3 * DAY), payment_attempts: 1, last_attempt_date: at(-2 * DAY) });
    const upcoming = makeRecord({ user_id: user, billing_date: at(27 * DAY) });
    await seedRecords(app, failed, upcoming);
    await holdUserLock(app, user);

    const response = await consume(kinesisEvent([kinesisRecord(membership('CLOSEACCOUNT', user))]));

    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(upcoming)).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'ACCOUNT_CLOSED' });
    expect(await app.deps.billing.get(failed)).toEqual(failed);
  });

  it('fails a locked user\'s record and every later record of that user, while other users go ahead', async () => {
    const locked = makeRecord({ billing_date: at(10 * DAY) });
    const free = makeRecord({ billing_date: at(10 * DAY) });
    await seedRecords(app, locked, free);
    await holdUserLock(app, locked.user_id);
    const pause = kinesisRecord(membership('PAUSE', locked.user_id, { months: 1 }));
    const freeCancel = kinesisRecord(membership('CANCEL', free.user_id));
    const unpause = kinesisRecord(membership('UNPAUSE', locked.user_id));
    const cancel = kinesisRecord(membership('CANCEL', locked.user_id));

    const response = await consume(kinesisEvent([pause, freeCancel, unpause, cancel]));

    expect(response.batchItemFailures).toEqual([pause, unpause, cancel].map((r) => ({ itemIdentifier: r.kinesis.sequenceNumber })));
    expect(await app.deps.billing.get(locked)).toEqual(locked);
    expect((await app.deps.billing.get(free))?.updated_event).toBe('CANCEL_REQUESTED');

    // Lambda redelivers from the lowest failed sequence number: the retried batch applies in order,
    // and the record that was already applied is a no-op.
    await releaseUserLock(app, locked.user_id);
    const retry = await consume(kinesisEvent([pause, freeCancel, unpause, cancel]));
    expect(retry.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(locked)).toMatchObject({ billing_status: 'PENDING', updated_event: 'CANCEL_REQUESTED' });
    expect((await app.deps.billing.history(locked.subscription_id)).items.map((r) => r.updated_event)).toEqual(['CANCEL_REQUESTED', 'UNPAUSED', 'PAUSED', undefined]);
    expect((await app.deps.billing.history(free.subscription_id)).items).toHaveLength(2);
  });

  it('an event older than one already applied is not applied again (no out-of-order undo)', async () => {
    const record = makeRecord({ billing_date: at(10 * DAY) });
    await seedRecords(app, record);
    const pause = membership('PAUSE', record.user_id, { months: 1 });
    const unpause = membership('UNPAUSE', record.user_id);
    await consume(kinesisEvent([kinesisRecord(pause), kinesisRecord(unpause)]));
    const settled = await app.deps.billing.get(record);
    expect(settled).toMatchObject({ billing_status: 'PENDING', updated_event: 'UNPAUSED' });

    // The pause alone arrives again (an on-failure replay): its id was overwritten, its time is older.
    const response = await consume(kinesisEvent([kinesisRecord(pause)]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toEqual(settled);
  });

  it('reports undecodable records as failures without holding back that user\'s valid records', async () => {
    const record = makeRecord({ billing_date: at(10 * DAY) });
    await seedRecords(app, record);
    const garbage = kinesisRecord('not json at all', { partitionKey: record.user_id });
    const badMonths = kinesisRecord(membership('PAUSE', record.user_id, { months: 13 }));
    const badAmount = kinesisRecord(membership('NEW', 'someone', { plan: { ...plan(), amount: 19.99 } }));
    const unknownType = kinesisRecord(membership('UPGRADE', record.user_id));
    const pause = kinesisRecord(membership('PAUSE', record.user_id, { months: 2 }));

    const response = await consume(kinesisEvent([garbage, badMonths, badAmount, unknownType, pause]));

    expect(response.batchItemFailures).toEqual([garbage, badMonths, badAmount, unknownType].map((r) => ({ itemIdentifier: r.kinesis.sequenceNumber })));
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'PAUSED', paused_months: 2 });
  });

  it('a whole batch replayed is a no-op', async () => {
    const user = `user-${randomUUID()}`;
    const batch = kinesisEvent([
      kinesisRecord(membership('NEW', user, { plan: plan('2026-12-20T00:00:00Z') })),
      kinesisRecord(membership('PAUSE', user, { months: 2 })),
      kinesisRecord(membership('CANCEL', user)),
    ]);
    await consume(batch);
    const first = await recordsOf(app, user);
    const replay = await consume(batch);
    expect(replay.batchItemFailures).toEqual([]);
    expect(await recordsOf(app, user)).toEqual(first);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED' });
  });
});
