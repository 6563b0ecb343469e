import { randomUUID } from 'node:crypto';
import type { Context, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoReconciliationStore } from '../../src/adapters/dynamodb/reconciliation-store.js';
import { SimulatedProcessorReport } from '../../src/adapters/processor/simulator-report.js';
import type { ProcessorReport } from '../../src/domain/ports/processor-report.js';
import type { ReconciliationEvents, ReconciliationRun, StoredException } from '../../src/domain/ports/reconciliation.js';
import type { PaymentMethod } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { reconcileDay } from '../../src/domain/use-cases/reconcile-day.js';
import { createReconciliationJobHandler } from '../../src/handlers/reconciliation-job.js';
import { createTestApp, RecordingQueue, type TestApp } from '../support/app.js';
import { sqsRecord } from '../support/aws-events.js';
import { createTestDynamo } from '../support/dynamo.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord } from './api-fixtures.js';

/**
 * A large day across invocations (DESIGN 14): with a time budget that lets each invocation read one
 * page, the run hands over again and again through its queue, and ends with the result one
 * uninterrupted run gives; a duplicate continuation changes nothing.
 */

let app: TestApp;
let report: SimulatedProcessorReport;
let date: string;

/** The simulator's report two items a page, so the processor's side takes several pages too. */
function smallPages(inner: ProcessorReport): ProcessorReport {
  return {
    page: async (rail, from, to, cursor) => {
      const all: Awaited<ReturnType<ProcessorReport['page']>>['items'][number][] = [];
      let next: string | null = null;
      do {
        const page = await inner.page(rail, from, to, next);
        all.push(...page.items);
        next = page.next;
      } while (next !== null);
      const offset = cursor === null ? 0 : Number(cursor);
      return { items: all.slice(offset, offset + 2), next: offset + 2 < all.length ? String(offset + 2) : null };
    },
  };
}

class Recorded implements ReconciliationEvents {
  readonly runs: ReconciliationRun[] = [];
  readonly exceptions: StoredException[] = [];
  completed = async (run: ReconciliationRun) => void this.runs.push(run);
  exception = async (e: StoredException) => void this.exceptions.push(e);
}

/** No time left after the first page: every invocation reads one page and hands over. */
const nearTimeout = { awsRequestId: 'test', getRemainingTimeInMillis: () => 1_000 } as unknown as Context;

beforeAll(async () => {
  app = await createTestApp({ label: 'recon-cont' });
  report = new SimulatedProcessorReport(app.simulator);
  const rails: PaymentMethod[] = ['card', 'ach', 'pinless', 'card', 'ach', 'pinless', 'pinless'];
  const records = await seedRecords(app, ...rails.map((rail, i) => billingRecord(app, { payment_method: rail, amount_cents: 1000 + i * 111 })));
  for (const record of records) await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `t-${randomUUID()}` });
  date = formatInstant(app.clock.now()).slice(0, 10);
  report.inject({ kind: 'drop', date, user_id: records[2]!.user_id });
  report.inject({ kind: 'amount_skew', date, user_id: records[4]!.user_id });
  report.inject({ kind: 'phantom', date, user_id: records[0]!.user_id });
});

function handlerWith(queue: RecordingQueue, events: Recorded) {
  const reports = smallPages(report);
  const deps = app.depsFor('reconciliation-job', { processorReports: { card: reports, ach: reports, pinless: reports }, reconciliationEvents: events, reconciliationQueue: queue });
  return createReconciliationJobHandler({ ...deps, settings: { ...deps.settings, reconciliationMarginMs: 60_000 } });
}

const sqsEvent = (body: string, receiveCount = 1): SQSEvent => ({ Records: [sqsRecord(body, { queue: 'test-reconciliation', receiveCount })] });

/** The uninterrupted result of each rail, on tables of its own. */
async function baseline(): Promise<Map<PaymentMethod, ReconciliationRun>> {
  const other = await createTestDynamo('recon-base');
  const reports = smallPages(report);
  const deps = { clock: app.clock, ids: app.deps.ids, movements: app.deps.movements, reports: { card: reports, ach: reports, pinless: reports }, reconciliation: new DynamoReconciliationStore(other.client, other.tables.reconciliation), events: new Recorded() };
  const runs = new Map<PaymentMethod, ReconciliationRun>();
  for (const rail of ['card', 'ach', 'pinless'] as const) runs.set(rail, (await reconcileDay(deps, rail, date)).run);
  return runs;
}

const comparable = (run: ReconciliationRun) => ({ ours: run.ours, theirs: run.theirs, net: run.net_drift_cents, gross: run.gross_drift_cents, exceptions: [...run.exception_ids].sort() });

describe('reconciliation-job continuations', () => {
  it('a run handed over at every page ends with the result of one uninterrupted run, each new exception published once', async () => {
    const expected = await baseline();
    expect([...expected.values()].reduce((sum, r) => sum + r.exception_ids.length, 0)).toBe(3);

    const queue = new RecordingQueue();
    const events = new Recorded();
    const handler = handlerWith(queue, events);
    const first = await handler({ date }, nearTimeout);
    expect(first.runs).toEqual([]);
    expect(first.continued).toEqual(['card', 'ach', 'pinless']);

    let invocations = 1;
    let duplicated = false;
    while (queue.sent.length > 0) {
      const message = queue.sent.shift()!;
      const answer = await handler(sqsEvent(message.body), nearTimeout);
      expect(answer.batchItemFailures).toEqual([]);
      invocations += 1;
      if (!duplicated && JSON.parse(message.body).step === 5) {
        // The same message again, once its step is done: it is stale and does nothing.
        const sentBefore = queue.sent.length;
        expect((await handler(sqsEvent(message.body), nearTimeout)).batchItemFailures).toEqual([]);
        expect(queue.sent.length).toBe(sentBefore);
        duplicated = true;
      }
    }
    expect(duplicated).toBe(true);
    // 24 movement pages (3 days x 8 shards) and the report's pages, per rail.
    expect(invocations).toBeGreaterThan(3 * 24);

    const store = app.deps.reconciliation;
    for (const rail of ['card', 'ach', 'pinless'] as const) {
      const stored = await store.getRun(date, rail);
      expect(stored?.run.status, rail).toBe('completed');
      expect(comparable(stored!.run), rail).toEqual(comparable(expected.get(rail)!));
      expect(stored!.exceptions.map((e) => e.exception_id).sort(), rail).toEqual(comparable(expected.get(rail)!).exceptions);
      expect(Object.keys(stored!.run)).not.toContain('checkpoint');
    }
    expect(events.runs.map((r) => r.rail).sort()).toEqual(['ach', 'card', 'pinless']);
    expect(events.exceptions.map((e) => e.code).sort()).toEqual(['amount_mismatch', 'missing_at_processor', 'missing_in_records']);
  });

  it('two deliveries of one continuation at once: one moves the run on, the other stops; the result is the same', async () => {
    const queue = new RecordingQueue();
    const events = new Recorded();
    const handler = handlerWith(queue, events);
    await handler({ date, rails: ['pinless'] }, nearTimeout);
    let raced = 0;
    while (queue.sent.length > 0) {
      const message = queue.sent.shift()!;
      const sentBefore = queue.sent.length;
      const answers = await Promise.all([handler(sqsEvent(message.body), nearTimeout), handler(sqsEvent(message.body), nearTimeout)]);
      expect(answers.map((a) => a.batchItemFailures)).toEqual([[], []]);
      // At most one of the two sent the next continuation.
      expect(queue.sent.length - sentBefore).toBeLessThanOrEqual(1);
      raced += 1;
    }
    expect(raced).toBeGreaterThan(24);
    expect(events.runs).toHaveLength(1);
    const expected = (await baseline()).get('pinless')!;
    expect(comparable((await app.deps.reconciliation.getRun(date, 'pinless'))!.run)).toEqual(comparable(expected));
    // The exceptions were stored by the first test's run: none is new, none is published again.
    expect(events.exceptions).toEqual([]);
  });

  it('a continuation redelivered after its invocation failed before the send sends it again; a bad message is a batch item failure', async () => {
    const queue = new RecordingQueue();
    const handler = handlerWith(queue, new Recorded());
    await handler({ date, rails: ['ach'] }, nearTimeout);
    await handler(sqsEvent(queue.sent.shift()!.body), nearTimeout);
    const stepOne = queue.sent.shift()!;
    await handler(sqsEvent(stepOne.body), nearTimeout);
    // The send of step 2 "failed": its message never reached the queue.
    const lost = queue.sent.shift()!;
    expect(JSON.parse(lost.body)).toMatchObject({ rail: 'ach', step: 2 });
    // Step 1 seen once more on its first receive: a duplicate, nothing sent.
    expect((await handler(sqsEvent(stepOne.body, 1), nearTimeout)).batchItemFailures).toEqual([]);
    expect(queue.sent).toEqual([]);
    // Step 1 redelivered (its invocation failed): step 2 is sent again.
    expect((await handler(sqsEvent(stepOne.body, 2), nearTimeout)).batchItemFailures).toEqual([]);
    expect(queue.bodies()).toEqual([JSON.parse(lost.body)]);

    const bad = sqsEvent(JSON.stringify({ date, rail: 'ach', step: -1 }));
    expect((await handler(bad, nearTimeout)).batchItemFailures).toEqual([{ itemIdentifier: bad.Records[0]!.messageId }]);
  });
});
