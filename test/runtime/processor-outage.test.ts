import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { circuitKey } from '../../src/adapters/dynamodb/circuit-store.js';
import { ProcessorOutageError } from '../../src/domain/errors.js';
import type { PaymentProcessor } from '../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import type { CollectionsSummary } from '../../src/domain/use-cases/plan-collections.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { DAY, HOUR } from '../support/time.js';

/**
 * Our outages are ours (DESIGN 15), on DynamoDB Local through each function's grant guard: a
 * processor refusing our credentials counts against no member, moves no dunning, writes nothing;
 * it opens that processor's circuit, which the planner reads before it enqueues and the workers
 * read before they lock.
 */

type Item = Record<string, unknown>;

async function itemsOf(app: TestApp, table: string, userId: string): Promise<Item[]> {
  const out = await app.db.doc.send(new QueryCommand({ TableName: table, KeyConditionExpression: 'user_id = :u', ExpressionAttributeValues: { ':u': userId }, ConsistentRead: true }));
  return out.Items ?? [];
}

/** Every item of the users' periods and audit rows, as stored. */
async function snapshot(app: TestApp, records: readonly BillingRecord[]): Promise<Item[][]> {
  const out: Item[][] = [];
  for (const r of records) {
    out.push(await itemsOf(app, app.db.tables.billingActivity, r.user_id));
    out.push(await itemsOf(app, app.db.tables.billingActivityHistory, r.user_id));
  }
  return out;
}

async function circuitOf(app: TestApp, service: string): Promise<Item | undefined> {
  const out = await app.db.doc.send(new QueryCommand({ TableName: app.db.tables.locks, KeyConditionExpression: 'PartitionKey = :k', ExpressionAttributeValues: { ':k': circuitKey(service) }, ConsistentRead: true }));
  return out.Items?.[0];
}

/** One period per path the ladder and dunning could move: first attempts on every rail, a daily retry, a ladder retry. */
function periods(app: TestApp): BillingRecord[] {
  const now = app.clock.now();
  const at = (ms: number) => formatInstant(new Date(now.getTime() + ms));
  return [
    dueRecord(now, 'card'),
    dueRecord(now, 'ach'),
    dueRecord(now, 'pinless'),
    dueRecord(now, 'pinless', {
      billing_status: 'FAILED',
      payment_attempts: 1,
      last_attempt_date: at(-DAY - HOUR),
      payment_error: 'The payment was declined by the bank.',
    }),
    dueRecord(now, 'card', { billing_failed_for: `${at(-HOUR)}#0`, billing_failure_count: 2, billing_failed_at: at(-2 * HOUR), billing_next_attempt_at: at(-1000), billing_last_error: 'The payment processor is unavailable.' }),
  ];
}

const mine = (app: TestApp, records: readonly BillingRecord[]) =>
  app.collectionsQueue.sent.filter((m) => records.some((r) => m.body.includes(r.subscription_id)));

describe('a revoked key (the simulator answering every call as a refused client)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ label: 'outage-revoked' });
  });

  it('leaves every period exactly as it was, opens the circuit, and the next run enqueues none of its work', async () => {
    const records = await seedRecords(app, ...periods(app));
    const before = await snapshot(app, records);
    app.simulator.configure({ auth: 'revoked' });

    app.collectionsQueue.clear();
    const first = (await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(formatInstant(app.clock.now())), lambdaContext())) as CollectionsSummary;
    expect(first.processor_outage).toBeUndefined();
    const sent = mine(app, records);
    expect(sent).toHaveLength(records.length);

    const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
    const out = await worker(sqsEvent(sent.map((m) => sqsRecord(m.body, { messageId: m.id }))), lambdaContext());
    // Dropped, not redelivered: redeliveries would only walk them to the DLQ.
    expect(out.batchItemFailures).toEqual([]);
    expect(app.simulator.charges().filter((c) => records.some((r) => r.user_id === c.user_id))).toEqual([]);
    expect(await snapshot(app, records)).toEqual(before);
    const circuit = await circuitOf(app, 'accounts');
    expect(circuit?.reason).toBe('processor_auth');
    expect(Number(circuit?.open_until)).toBeGreaterThan(Date.now());

    app.collectionsQueue.clear();
    const second = (await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(formatInstant(app.clock.now())), lambdaContext())) as CollectionsSummary;
    expect(second.processor_outage).toEqual(['accounts']);
    expect(mine(app, records)).toEqual([]);
    expect(second.skipped_outage).toBeGreaterThanOrEqual(records.length);

    // A day later the key is still revoked and the circuit still open: still nothing moves.
    app.clock.advance(DAY);
    const redelivered = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(sent.map((m) => sqsRecord(m.body, { messageId: m.id }))), lambdaContext());
    expect(redelivered.batchItemFailures).toEqual([]);
    expect(await snapshot(app, records)).toEqual(before);
  });
});

describe('one processor refusing our key', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ label: 'outage-stripe' });
  });

  /** Stripe refuses the key; the payments service works (the simulator). */
  const stripeRevoked = (calls: string[]): PaymentProcessor => ({
    submit: async (request) => {
      calls.push(request.rail);
      if (request.rail === 'card') throw new ProcessorOutageError('stripe', 'processor_auth');
      return app.simulator.submit(request);
    },
  });

  it('opens only that processor’s circuit: the other rails collect, the card periods wait uncounted', async () => {
    const all = periods(app);
    const [card, ach, retrying] = await seedRecords(app, all[0]!, all[1]!, all[4]!);
    const cards = [card, retrying];
    expect(cards.map((r) => r.payment_method)).toEqual(['card', 'card']);
    const beforeCards = await snapshot(app, cards);
    const calls: string[] = [];
    const deps = () => app.depsFor('batch-worker', { processor: stripeRevoked(calls) });

    app.collectionsQueue.clear();
    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(formatInstant(app.clock.now())), lambdaContext());
    const sent = mine(app, [card, ach, retrying]);
    expect(sent).toHaveLength(3);
    const out = await createBatchWorkerHandler(deps())(sqsEvent(sent.map((m) => sqsRecord(m.body, { messageId: m.id }))), lambdaContext());
    expect(out.batchItemFailures).toEqual([]);
    // The first card attempt met the refusal; the container's circuit kept the second from calling Stripe.
    expect(calls.filter((rail) => rail === 'card')).toHaveLength(1);
    expect(await snapshot(app, cards)).toEqual(beforeCards);
    expect((await app.deps.billing.get(ach))?.billing_status).toBe('ACHSENT');
    expect((await circuitOf(app, 'stripe'))?.reason).toBe('processor_auth');
    expect(await circuitOf(app, 'payments')).toBeUndefined();

    // Another container reads the circuit before it locks: the card messages are dropped unread.
    const sentRequests: string[] = [];
    app.db.client.middlewareStack.add(
      (next, context) => async (args) => {
        sentRequests.push(`${String(context.commandName)} ${(args.input as { TableName?: string }).TableName ?? ''}`);
        return next(args);
      },
      { step: 'initialize', name: `count-${randomUUID()}` },
    );
    const cardMessages = sent.filter((m) => cards.some((r) => m.body.includes(r.subscription_id)));
    expect((await createBatchWorkerHandler(deps())(sqsEvent(cardMessages.map((m) => sqsRecord(m.body, { messageId: m.id }))), lambdaContext())).batchItemFailures).toEqual([]);
    expect(sentRequests.every((r) => r === `GetItemCommand ${app.db.tables.locks}`)).toBe(true);
    expect(calls.filter((rail) => rail === 'card')).toHaveLength(1);
    expect(await snapshot(app, cards)).toEqual(beforeCards);

    // The planner leaves the card periods in the due-index while the stripe circuit is open.
    app.collectionsQueue.clear();
    const planned = (await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(formatInstant(app.clock.now())), lambdaContext())) as CollectionsSummary;
    expect(planned.processor_outage).toEqual(['stripe']);
    expect(mine(app, cards)).toEqual([]);
  });
});
