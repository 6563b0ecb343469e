import { randomUUID } from 'node:crypto';
import type { BillingRecord } from '../src/domain/records.js';
import { formatInstant } from '../src/domain/time.js';
import { createApiHandler } from '../src/handlers/api.js';
import { createBalanceWorkerHandler } from '../src/handlers/webhook-balance-worker.js';
import { createBatchWorkerHandler } from '../src/handlers/batch-worker.js';
import { createBenchApp, dueRecord, pool, seed, type BenchApp } from './app.js';
import type { CapacityTotals } from './capacity.js';
import type { DestinationStream } from 'pino';
import { apiEvent, sqsEvent } from './lambda-events.js';
import { measureLoanPaths } from './loan-paths.js';

/**
 * Section 1: DynamoDB requests and request units per billed subscription on each path, through
 * the handlers (batch-worker, webhook-balance-worker, api), every attempt approved.
 */

export interface PathCost {
  readonly path: string;
  readonly subscriptions: number;
  readonly billed: number;
  readonly requestsPerSub: number;
  readonly byCommandPerSub: Record<string, number>;
  readonly rruPerSub: number;
  readonly wruPerSub: number;
  readonly gsiWruPerSub: number;
  /** Lock heartbeats during the path, counted apart (per subscription). */
  readonly heartbeatsPerSub: number;
}

const DAY = 24 * 3_600_000;

function perSub(totals: CapacityTotals, n: number, path: string, billed: number): PathCost {
  const round = (x: number) => Math.round((x / n) * 100) / 100;
  return {
    path,
    subscriptions: n,
    billed,
    requestsPerSub: round(totals.requests),
    byCommandPerSub: Object.fromEntries(Object.entries(totals.byCommand).map(([k, v]) => [k, round(v)])),
    rruPerSub: round(totals.rru),
    wruPerSub: round(totals.wru),
    gsiWruPerSub: round(totals.gsiWru),
    heartbeatsPerSub: round(totals.heartbeats),
  };
}

type Runner = (app: BenchApp, records: BillingRecord[]) => Promise<void>;

function collectionMessages(records: BillingRecord[], process: 'SCHEDULED' | 'RETRY', enqueuedAt: string) {
  return records.map((r) => ({
    id: r.subscription_id,
    body: JSON.stringify({ user_id: r.user_id, billing_date: r.billing_date, subscription_id: r.subscription_id, process, enqueued_at: enqueuedAt }),
  }));
}

async function inBatches(messages: { id: string; body: string }[], handle: (batch: typeof messages) => Promise<unknown>): Promise<void> {
  const batches: (typeof messages)[] = [];
  for (let i = 0; i < messages.length; i += 10) batches.push(messages.slice(i, i + 10));
  await pool(batches, 4, handle);
}

const PATHS: readonly { name: string; records: (now: Date) => BillingRecord; run: Runner }[] = [
  {
    name: 'scheduled (batch-worker)',
    records: (now) => dueRecord(now),
    run: async (app, records) => {
      const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
      await inBatches(collectionMessages(records, 'SCHEDULED', formatInstant(app.clock.now())), (b) => worker(sqsEvent(b)));
    },
  },
  {
    name: 'retry (batch-worker)',
    records: (now) =>
      dueRecord(now, 'pinless', {
        billing_status: 'FAILED',
        payment_attempts: 1,
        last_attempt_date: formatInstant(new Date(now.getTime() - DAY - 3_600_000)),
        payment_error: 'The payment was declined by the bank.',
      }),
    run: async (app, records) => {
      const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
      await inBatches(collectionMessages(records, 'RETRY', formatInstant(app.clock.now())), (b) => worker(sqsEvent(b)));
    },
  },
  {
    name: 'balance webhook (webhook-balance-worker)',
    records: (now) => dueRecord(now),
    run: async (app, records) => {
      const worker = createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'));
      const messages = records.map((r) => ({
        id: randomUUID(),
        body: JSON.stringify({
          event_id: randomUUID(),
          user_id: r.user_id,
          institution_id: 'ins_1',
          available_balance_cents: 100_000,
          current_balance_cents: 100_000,
          occurred_at: formatInstant(app.clock.now()),
        }),
      }));
      await inBatches(messages, (b) => worker(sqsEvent(b)));
    },
  },
  {
    name: 'manual pay (api)',
    records: (now) => dueRecord(now),
    run: async (app, records) => {
      const api = createApiHandler(app.depsFor('api'));
      await pool(records, 16, (r) => api(apiEvent('POST', `/v1/subscriptions/${r.subscription_id}/pay`, { 'idempotency-key': randomUUID() })));
    },
  },
  {
    name: 'operator retry (api)',
    records: (now) => dueRecord(now, 'pinless', { billing_status: 'FAILED', payment_attempts: 1, last_attempt_date: formatInstant(now) }),
    run: async (app, records) => {
      const api = createApiHandler(app.depsFor('api'));
      await pool(records, 16, (r) => api(apiEvent('POST', `/v1/subscriptions/${r.subscription_id}/retry-billing`, {}, '{"reason":"bench"}')));
    },
  },
];

export async function measurePathCosts(endpoint: string, perPath = 200, logTo?: DestinationStream): Promise<PathCost[]> {
  const app = await createBenchApp(endpoint, 'paths', logTo);
  const results: PathCost[] = [];
  for (const path of PATHS) {
    const records = Array.from({ length: perPath }, () => path.records(app.clock.now()));
    await seed(app, records);
    app.meter.reset();
    await path.run(app, records);
    const totals = app.meter.snapshot();
    app.meter.pause(true);
    let billed = 0;
    await pool(records, 16, async (r) => {
      const s = (await app.deps.billing.get(r))?.billing_status;
      if (s === 'COMPLETED' || s === 'ACHSENT') billed += 1;
    });
    app.meter.pause(false);
    results.push(perSub(totals, records.length, path.name, billed));
  }
  // Loan paths: per loan payment billed (a payment is the loan's unit, as a period is a subscription's).
  for (const run of await measureLoanPaths(app, perPath)) results.push(perSub(run.totals, run.payments, run.path, run.billed));
  app.client.destroy();
  return results;
}
