import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { formatInstant } from '../../src/domain/time.js';
import { createBalanceWorkerHandler, type BalanceEvent } from '../../src/handlers/webhook-balance-worker.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { historyCount, holdUserLock, seedRecords } from '../support/seed.js';
import { DAY, HOUR } from '../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));
const THRESHOLD = 5000;

function balanceEvent(userId: string, available: number, extra: Partial<BalanceEvent> = {}): Record<string, unknown> {
  return {
    event_id: randomUUID(),
    user_id: userId,
    institution_id: 'ins_1234',
    available_balance_cents: available,
    current_balance_cents: available + 100,
    occurred_at: '2026-12-01T11:59:00Z',
    ...extra,
  };
}

async function latestHistory(app: TestApp, subscriptionId: string) {
  return (await app.deps.billing.history(subscriptionId, { limit: 1 })).items[0];
}

describe('webhook-balance-worker', () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp({ label: 'balance', now: NOW, settings: { balanceThresholdCents: THRESHOLD } });
  });

  it('collects a due record when the balance passes the gate, with the observation on the history row', async () => {
    const record = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, record);

    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(balanceEvent(record.user_id, 9000))]), lambdaContext());

    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED', process: 'BALANCE_WEBHOOK' });
    expect(await latestHistory(app, record.subscription_id)).toMatchObject({
      billing_status: 'COMPLETED',
      data_institution_id: 'ins_1234',
      data_available_balance_cents: 9000,
      data_current_balance_cents: 9100,
      data_threshold_cents: THRESHOLD,
      data_balance_source: 'available',
      data_payment_method: 'pinless',
    });
    expect((await latestHistory(app, record.subscription_id))?.data_calc_available_balance_cents).toBeUndefined();
  });

  it('writes nothing when the gate is closed (below the threshold)', async () => {
    const record = makeRecord({ billing_date: at(-HOUR), amount_cents: 1999 });
    await seedRecords(app, record);
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(balanceEvent(record.user_id, THRESHOLD - 1))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toEqual(record);
    expect(await historyCount(app, record.subscription_id)).toBe(1);
    expect(app.simulator.charges()).toHaveLength(0);
  });

  it('gates on calc_available when the event carries it', async () => {
    const record = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    const other = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, record, other);
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(
      sqsEvent([
        sqsRecord(balanceEvent(record.user_id, 100_000, { calc_available_balance_cents: 100 })),
        sqsRecord(balanceEvent(other.user_id, 0, { calc_available_balance_cents: 8000 })),
      ]),
    );
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toEqual(record);
    expect((await app.deps.billing.get(other))?.billing_status).toBe('COMPLETED');
    expect(await latestHistory(app, other.subscription_id)).toMatchObject({ data_balance_source: 'calc_available', data_calc_available_balance_cents: 8000 });
  });

  it('collects the oldest due record first and never spends the observed balance twice', async () => {
    const user = `user-${randomUUID()}`;
    // Declined more than a day ago: past the daily wait, which binds the balance webhook too.
    const older = makeRecord({ user_id: user, billing_status: 'FAILED', billing_date: at(-31 * DAY), payment_attempts: 1, last_attempt_date: at(-25 * HOUR), payment_method: 'pinless', amount_cents: 4000 });
    const newer = makeRecord({ user_id: user, billing_date: at(-HOUR), payment_method: 'pinless', amount_cents: 4000 });
    const future = makeRecord({ user_id: user, billing_date: at(20 * DAY), payment_method: 'pinless', amount_cents: 4000 });
    await seedRecords(app, older, newer, future);

    // 9000 passes the gate for the first (>= 5000 and >= 4000); 5000 left is still enough for the second.
    await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(balanceEvent(user, 9000))]));
    expect((await app.deps.billing.get(older))?.billing_status).toBe('COMPLETED');
    expect((await app.deps.billing.get(newer))?.billing_status).toBe('COMPLETED');
    expect((await app.deps.billing.get(future))?.billing_status).toBe('PENDING');
    expect(await latestHistory(app, newer.subscription_id)).toMatchObject({ data_available_balance_cents: 5000 });
  });

  it('stops after the oldest when what is left of the balance no longer passes the gate', async () => {
    const user = `user-${randomUUID()}`;
    const older = makeRecord({ user_id: user, billing_date: at(-31 * DAY), payment_method: 'pinless', amount_cents: 4000 });
    const newer = makeRecord({ user_id: user, billing_date: at(-HOUR), payment_method: 'pinless', amount_cents: 4000 });
    await seedRecords(app, older, newer);
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(balanceEvent(user, 8000))]));
    expect(response.batchItemFailures).toEqual([]);
    expect((await app.deps.billing.get(older))?.billing_status).toBe('COMPLETED');
    expect((await app.deps.billing.get(newer))?.billing_status).toBe('PENDING');
    expect(app.simulator.charges()).toHaveLength(1);
  });

  it('does nothing (and does not retry) for a user with nothing due', async () => {
    const record = makeRecord({ billing_date: at(DAY) });
    await seedRecords(app, record);
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(balanceEvent(record.user_id, 90_000)), sqsRecord(balanceEvent('nobody', 90_000))]));
    expect(response.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(record)).toEqual(record);
  });

  it('rejects malformed events (non-integer cents, missing fields, bad JSON) as batch item failures', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, record);
    const bad = [
      sqsRecord(balanceEvent(record.user_id, 12.5 as number)),
      sqsRecord({ ...balanceEvent(record.user_id, 9000), available_balance_cents: '9000' }),
      sqsRecord({ ...balanceEvent(record.user_id, 9000), event_id: undefined }),
      sqsRecord({ ...balanceEvent(record.user_id, 9000), occurred_at: 'soon' }),
      sqsRecord('[]'),
    ];
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent(bad));
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(bad.map((r) => r.messageId));
    expect(await app.deps.billing.get(record)).toEqual(record);
  });

  it('fails only the locked user\'s message', async () => {
    const locked = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    const free = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, locked, free);
    await holdUserLock(app, locked.user_id);
    const lockedMessage = sqsRecord(balanceEvent(locked.user_id, 9000));
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([lockedMessage, sqsRecord(balanceEvent(free.user_id, 9000))]));
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: lockedMessage.messageId }]);
    expect(await app.deps.billing.get(locked)).toEqual(locked);
    expect((await app.deps.billing.get(free))?.billing_status).toBe('COMPLETED');
  });

  it('skips a record parked on the ladder; a replayed event charges nothing more', async () => {
    const parked = makeRecord({
      billing_date: at(-HOUR),
      billing_failed_for: `${at(-HOUR)}#0`,
      billing_failure_count: 8,
      billing_failed_at: at(-60_000),
      billing_last_error: 'The payment processor is unavailable.',
    });
    const due = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(app, parked, due);
    const handler = createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'));
    const event = balanceEvent(due.user_id, 9000);
    await handler(sqsEvent([sqsRecord(balanceEvent(parked.user_id, 9000)), sqsRecord(event)]));
    const replay = await handler(sqsEvent([sqsRecord(event)]));
    expect(replay.batchItemFailures).toEqual([]);
    expect(await app.deps.billing.get(parked)).toEqual(parked);
    expect(app.simulator.charges()).toHaveLength(1);
  });
});
