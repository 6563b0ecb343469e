import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoProcessorBudgetStore } from '../../src/adapters/dynamodb/processor-budget-store.js';
import type { BillingPeriodMessage } from '../../src/domain/collections.js';
import { ProcessorThrottledError } from '../../src/domain/errors.js';
import type { PaymentProcessor, PaymentRequest } from '../../src/domain/ports/processor.js';
import { processorOfRail } from '../../src/domain/processor-budget.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { historyCount, holdUserLock, seedRecords } from '../support/seed.js';
import { HOUR } from '../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));

function messageFor(record: BillingRecord): BillingPeriodMessage {
  return { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: at(0), processor: processorOfRail(record.payment_method) };
}

/** A processor that accepts `accept` presentments and throttles every one after: what it was asked, in order. */
function throttlingAfter(accept: number): PaymentProcessor & { presented: PaymentRequest[] } {
  const presented: PaymentRequest[] = [];
  return {
    presented,
    submit: async (request) => {
      presented.push(request);
      if (presented.length > accept) throw new ProcessorThrottledError(processorOfRail(request.rail));
      return { outcome: 'approved', confirmation_id: `ch_${presented.length}` };
    },
  };
}

describe('batch-worker: a throttled answer is not a failure (DESIGN 13)', () => {
  let app: TestApp;
  let processor: ReturnType<typeof throttlingAfter>;
  beforeAll(async () => {
    processor = throttlingAfter(2);
    app = await createTestApp({
      label: 'bw-throttle',
      now: NOW,
      processor,
      settings: { processorBudget: { perSecond: { stripe: 1000, payments: 1000 }, personShare: 0.1 } },
    });
  });

  it('stops presenting after the throttle, answers every message done, writes nothing for the rest, and counts them for the planner', async () => {
    const records = Array.from({ length: 10 }, () => makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' }));
    await seedRecords(app, ...records);
    const store = new DynamoProcessorBudgetStore(app.db.client, app.db.tables.locks);
    const reportedBefore = await store.throttledTotal('payments');
    const historyBefore = await Promise.all(records.map((r) => historyCount(app, r.user_id)));

    const messages = records.map((r) => sqsRecord(messageFor(r)));
    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(messages), lambdaContext());

    // Done: nothing is delivered again, so nothing reaches the DLQ.
    expect(response).toEqual({ batchItemFailures: [] });
    const after = await Promise.all(records.map((r) => app.deps.billing.get(r)));
    const collected = records.filter((_, i) => after[i]?.billing_status === 'COMPLETED');
    expect(collected).toHaveLength(2);
    const historyAfter = await Promise.all(records.map((r) => historyCount(app, r.user_id)));
    // The periods left due are exactly as they were: nothing counted on the ladder, no dunning move, no audit row.
    records.forEach((record, i) => {
      if (collected.includes(record)) return;
      expect(after[i]).toEqual(record);
      expect(historyAfter[i]).toBe(historyBefore[i]);
    });
    // Presented: the two accepted and the throttled ones in flight when it came, never the whole batch.
    expect(processor.presented.length).toBeGreaterThan(2);
    expect(processor.presented.length).toBeLessThan(10);
    // Every message not collected is counted for the planner: the throttled and the not presented.
    expect(await store.throttledTotal('payments')).toBe(reportedBefore + 8);
  });

  it('a throttled loan payment retry is done, not failed: nothing written, still due in RETRY, counted for the planner', async () => {
    const app = await createTestApp({ label: 'bw-loan-throttle', now: NOW, processor: throttlingAfter(0), settings: { processorBudget: { perSecond: { stripe: 1000, payments: 1000 }, personShare: 0.1 } } });
    const store = new DynamoProcessorBudgetStore(app.db.client, app.db.tables.locks);
    const loans = Array.from({ length: 3 }, (_, i) => ({
      loc_user_id: `user-${randomUUID()}`, loc_loan_id: 'loan-th', loc_payment_id: `pay-th${i}`, loc_amount: 700, loc_payment_method: 'ach' as const, loc_account_last_four: '6789',
      loc_status: 'RETRY' as const, loc_process: 'AUTO' as const, loc_payment_attempts: 1, loc_confirmation_id: `conf-th${i}`, loc_decline_code: 'insufficient_funds',
      loc_decline_class: 'retry_later' as const, loc_update_reason: 'declined', loc_first_declined_at: at(-24 * HOUR), loc_next_attempt_at: at(-HOUR),
      loc_created_date: at(-48 * HOUR), loc_last_updated: at(-24 * HOUR), version: 1,
    }));
    for (const loan of loans) await app.deps.payments.create(loan, { actor: 'test', reason: 'fixture' });
    const before = await Promise.all(loans.map((l) => app.deps.payments.get(l.loc_user_id, l.loc_loan_id, l.loc_payment_id)));
    const messages = loans.map((l) => sqsRecord({ kind: 'loan_payment_retry', user_id: l.loc_user_id, loan_id: l.loc_loan_id, payment_id: l.loc_payment_id, enqueued_at: at(0) }));

    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(messages), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    const after = await Promise.all(loans.map((l) => app.deps.payments.get(l.loc_user_id, l.loc_loan_id, l.loc_payment_id)));
    expect(after).toEqual(before);
    expect(await store.throttledTotal('payments')).toBe(3);
  });

  it('paced, a period whose user is locked is done and left exactly as it was (still due): the next run plans it, no redelivery hides it', async () => {
    const fresh = await createTestApp({ label: 'bw-locked', now: NOW, settings: { processorBudget: { perSecond: { stripe: 1000, payments: 1000 }, personShare: 0.1 } } });
    const [locked, free] = [makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' }), makeRecord({ billing_date: at(-HOUR), payment_method: 'card' })];
    await seedRecords(fresh, locked!, free!);
    await holdUserLock(fresh, locked!.user_id);

    const response = await createBatchWorkerHandler(fresh.depsFor('batch-worker'))(sqsEvent([sqsRecord(messageFor(locked!)), sqsRecord(messageFor(free!))]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect(await fresh.deps.billing.get(locked!)).toEqual(locked);
    expect((await fresh.deps.billing.get(free!))?.billing_status).toBe('COMPLETED');
  });

  it('unpaced, a period whose user is locked is delivered again, as before budgets', async () => {
    const fresh = await createTestApp({ label: 'bw-locked-unpaced', now: NOW });
    const locked = makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' });
    await seedRecords(fresh, locked);
    await holdUserLock(fresh, locked.user_id);
    const message = sqsRecord(messageFor(locked));

    const response = await createBatchWorkerHandler(fresh.depsFor('batch-worker'))(sqsEvent([message]), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: message.messageId }] });
    expect(await fresh.deps.billing.get(locked)).toEqual(locked);
  });

  it('leases the batch tokens of each processor in one request', async () => {
    const fresh = await createTestApp({
      label: 'bw-lease',
      now: NOW,
      settings: { processorBudget: { perSecond: { stripe: 1000, payments: 1000 }, personShare: 0.1 } },
    });
    const records = Array.from({ length: 10 }, () => makeRecord({ billing_date: at(-HOUR), payment_method: 'pinless' }));
    await seedRecords(fresh, ...records);
    const updates: number[] = [];
    const deps = fresh.depsFor('batch-worker');
    const client = fresh.db.client;
    const send = client.send.bind(client);
    type Sent = { constructor: { name: string }; input: { Key?: { PartitionKey?: { S?: string } }; ExpressionAttributeValues?: { ':n'?: { N?: string } } } };
    (client as { send: unknown }).send = async (command: Sent) => {
      const key = command.input.Key?.PartitionKey?.S;
      if (command.constructor.name === 'UpdateItemCommand' && key?.startsWith('processor-budget:')) updates.push(Number(command.input.ExpressionAttributeValues?.[':n']?.N));
      return send(command as never);
    };
    try {
      const response = await createBatchWorkerHandler(deps)(sqsEvent(records.map((r) => sqsRecord(messageFor(r)))), lambdaContext());
      expect(response).toEqual({ batchItemFailures: [] });
    } finally {
      (client as { send: unknown }).send = send;
    }
    expect(fresh.simulator.charges()).toHaveLength(10);
    // The first lease asks for the whole batch at once (a later one only for what a past second left unused).
    expect(updates[0]).toBe(10);
  });
});
