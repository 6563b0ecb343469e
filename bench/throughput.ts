import { randomUUID } from 'node:crypto';
import { GetItemCommand, PutItemCommand, QueryCommand, TransactWriteItemsCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshallItem } from '../src/adapters/dynamodb/attribute-codec.js';
import { PROCESSOR_IDS } from '../src/domain/processor-budget.js';
import { DEFAULT_STATUS_SHARD_COUNT, dueShardOf, historyItem, primaryItem, primaryKey } from '../src/adapters/dynamodb/billing-item.js';
import { BILLING_ACTIVITY_INDEXES } from '../src/adapters/dynamodb/table-definitions.js';
import { applyBillingEvent, historyRowOf, successorRecord } from '../src/domain/billing-record.js';
import { userLockKey } from '../src/domain/lock.js';
import type { BillingRecord } from '../src/domain/records.js';
import { addNanos, formatInstant } from '../src/domain/time.js';
import { createBatchWorkerHandler } from '../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../src/handlers/collections-job.js';
import { USER_CONCURRENCY } from '../src/handlers/shared/batch.js';
import { uuidIds } from '../src/runtime/compose.js';
import { createBenchApp, dueRecord, pool, seed, type BenchApp } from './app.js';
import type { CapacityTotals } from './capacity.js';
import { scheduledEvent, sqsEvent } from './lambda-events.js';
import type { LogSink } from './log-sink.js';

/**
 * Throughput and growth: N due subscriptions through collections-job → queue → batch-worker (the
 * project, logging at info), and the floor: the least DynamoDB work that bills the same
 * subscriptions the same way — one Query per due-index shard (paged like the job) for the due keys,
 * then per subscription the three requests of the attempt (conditional PutItem lock, consistent
 * GetItem, one TransactWriteItems: record, history row, next period, its history row, lock delete),
 * items built before the clock starts, no logging.
 *
 * Both are fed the same way: the planned keys go out in batches of 10 (an SQS batch), `invocations`
 * batches at a time, each batch with up to USER_CONCURRENCY (8) subscriptions in flight. The queue
 * is in memory on both sides (the SQS emulator's HTTP round trips would be noise).
 */

export interface PhaseCost {
  readonly requests: number;
  readonly heartbeats: number;
  readonly itemsRead: number;
  /** Items DynamoDB read (filtered and COUNT queries read more than they return). */
  readonly itemsScanned: number;
  readonly rru: number;
  readonly wru: number;
  readonly gsiWru: number;
  readonly byCommand: Record<string, number>;
}

export interface CollectionRun {
  readonly subscriptions: number;
  /** Records in the table that are not due (waiting, parked, exhausted), seeded beside the due ones. */
  readonly waiting: number;
  /** False: planning only (the messages were counted, not billed). */
  readonly billedRun: boolean;
  readonly enqueued: number;
  readonly billed: number;
  readonly retried: number;
  /** Set-up (fresh tables, seeding), not timed into the rates. */
  readonly seedSeconds: number;
  readonly planSeconds: number;
  readonly totalSeconds: number;
  readonly subsPerSecond: number;
  /** The collections-job alone (totals, not per subscription). */
  readonly planning: PhaseCost;
  /** Everything (job + workers), per due subscription. */
  readonly perSub: PhaseCost;
  readonly clientCpuMsPerSub: number;
  readonly logBytesPerSub: number;
}

export interface FloorRun {
  readonly subscriptions: number;
  /** Due keys the floor's planning read. */
  readonly planned: number;
  readonly billed: number;
  /** Set-up (fresh tables, seeding), not timed into the rates. */
  readonly seedSeconds: number;
  readonly planSeconds: number;
  readonly seconds: number;
  readonly subsPerSecond: number;
  readonly planning: PhaseCost;
  readonly perSub: PhaseCost;
  readonly clientCpuMsPerSub: number;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

function phase(t: CapacityTotals, n = 1): PhaseCost {
  return {
    requests: round2(t.requests / n),
    heartbeats: round2(t.heartbeats / n),
    itemsRead: round2(t.itemsRead / n),
    itemsScanned: round2(t.itemsScanned / n),
    rru: round2(t.rru / n),
    wru: round2(t.wru / n),
    gsiWru: round2(t.gsiWru / n),
    byCommand: Object.fromEntries(Object.entries(t.byCommand).map(([k, v]) => [k, round2(v / n)])),
  };
}

function minus(a: CapacityTotals, b: CapacityTotals): CapacityTotals {
  const byCommand: Record<string, number> = {};
  for (const [k, v] of Object.entries(a.byCommand)) {
    const d = v - (b.byCommand[k] ?? 0);
    if (d !== 0) byCommand[k] = d;
  }
  return { requests: a.requests - b.requests, itemsRead: a.itemsRead - b.itemsRead, itemsScanned: a.itemsScanned - b.itemsScanned, rru: a.rru - b.rru, wru: a.wru - b.wru, gsiWru: a.gsiWru - b.gsiWru, heartbeats: a.heartbeats - b.heartbeats, byCommand };
}

function batchesOf<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += 10) out.push(items.slice(i, i + 10));
  return out;
}

/** Records that are not due now but live in the table: FAILED waiting for the daily retry, parked, exhausted. */
export function waitingRecords(now: Date, count: number): BillingRecord[] {
  const HOUR = 3_600_000;
  const at = (ms: number) => formatInstant(new Date(now.getTime() + ms));
  const out: BillingRecord[] = [];
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    if (kind === 0 || kind === 1) {
      // Declined an hour ago: its daily retry is 23 h away.
      out.push(dueRecord(now, 'pinless', { billing_status: 'FAILED', billing_date: at(-48 * HOUR), payment_attempts: 1, last_attempt_date: at(-HOUR), payment_error: 'The payment was declined by the bank.' }));
    } else if (kind === 2) {
      // Parked on the failure ladder (eight counted failures): only a person brings it back.
      const r = dueRecord(now, 'pinless', { billing_date: at(-10 * 24 * HOUR) });
      out.push({ ...r, billing_failed_for: `${r.billing_date}#0`, billing_failure_count: 8, billing_failed_at: at(-HOUR), billing_last_error: 'An internal error occurred.' });
    } else {
      // Dunning exhausted (a retry_later decline whose schedule has run out).
      out.push(
        dueRecord(now, 'pinless', {
          billing_status: 'FAILED',
          billing_date: at(-20 * 24 * HOUR),
          payment_attempts: 8,
          last_attempt_date: at(-2 * 24 * HOUR),
          payment_error: 'The payment was declined by the bank.',
          decline_code: 'insufficient_funds',
          decline_class: 'retry_later',
          dunning_first_declined_at: at(-16 * 24 * HOUR),
          dunning_attempts: 8,
        }),
      );
    }
  }
  return out;
}

async function seeded(endpoint: string, label: string, due: number, waiting: number, sink?: LogSink): Promise<{ app: BenchApp; records: BillingRecord[]; seedSeconds: number }> {
  const started = performance.now();
  const app = await createBenchApp(endpoint, label, sink?.stream);
  const records = Array.from({ length: due }, () => dueRecord(app.clock.now()));
  await seed(app, [...records, ...waitingRecords(app.clock.now(), waiting)]);
  app.meter.reset();
  return { app, records, seedSeconds: round2((performance.now() - started) / 1000) };
}

async function countBilled(app: BenchApp, records: readonly BillingRecord[]): Promise<number> {
  app.meter.pause(true);
  let billed = 0;
  await pool(records, 32, async (r) => {
    if ((await app.deps.billing.get(r))?.billing_status === 'COMPLETED') billed += 1;
  });
  return billed;
}

/** The project: collections-job, then every message through the batch-worker. */
export async function collectionRun(endpoint: string, n: number, invocations: number, sink: LogSink, waiting = 0, bill = true): Promise<CollectionRun> {
  const { app, records, seedSeconds } = await seeded(endpoint, `run${n}w${waiting}`, n, waiting, sink);
  const job = createCollectionsJobHandler(app.depsFor('collections-job'), { pageSize: 1000 });
  const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
  const logBefore = sink.bytes();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const summary = await job(scheduledEvent(formatInstant(app.clock.now())));
  const planned = performance.now();
  const planning = app.meter.snapshot();
  let retried = 0;
  const messages = app.collectionsQueue.drain();
  if (bill) {
    await pool(batchesOf(messages), invocations, async (batch) => {
      retried += (await worker(sqsEvent(batch))).batchItemFailures.length;
    });
  }
  const finished = performance.now();
  const clientCpu = cpuMs(cpu);
  const totals = app.meter.snapshot();
  const logBytes = sink.bytes() - logBefore;
  const billed = bill ? await countBilled(app, records) : 0;
  app.client.destroy();
  const seconds = (finished - started) / 1000;
  return {
    subscriptions: n,
    waiting,
    billedRun: bill,
    enqueued: summary.enqueued,
    billed,
    retried,
    seedSeconds,
    planSeconds: round2((planned - started) / 1000),
    totalSeconds: round2(seconds),
    subsPerSecond: round2(billed / seconds),
    planning: phase(planning),
    perSub: phase(totals, n),
    clientCpuMsPerSub: round2(clientCpu / n),
    logBytesPerSub: Math.round(logBytes / n),
  };
}

/** The floor: the due-index read for the due keys, then three requests per subscription, fed like the project. */
export async function floorRun(endpoint: string, n: number, invocations: number, waiting = 0, bill = true): Promise<FloorRun> {
  const { app, records, seedSeconds } = await seeded(endpoint, `floor${n}w${waiting}`, n, waiting);
  const now = app.clock.now();
  const { client, tables } = app;
  const plans = new Map<string, { lock: PutItemCommand; get: GetItemCommand; tx: TransactWriteItemsCommand }>();
  for (const read of records) {
    const after = applyBillingEvent(read, 'COLLECTED', now, { process: 'SCHEDULED', set: { payment_attempts: 1, transaction_id: `sim_${randomUUID()}`, payment_error: '' } });
    const next = successorRecord(after, now, uuidIds, after.last_run_date)!;
    const lockKey = userLockKey(read.user_id);
    const rvn = randomUUID();
    plans.set(`${read.user_id}|${read.billing_date}`, {
      lock: new PutItemCommand({
        TableName: tables.locks,
        Item: marshallItem({ PartitionKey: lockKey, owner_name: 'floor', record_version_number: rvn, lease_duration_ms: 60_000, lease_expires_at: now.getTime() + 60_000, expires_at: Math.ceil(now.getTime() / 1000) + 3660 }),
        ConditionExpression: 'attribute_not_exists(PartitionKey) OR lease_expires_at < :now',
        ExpressionAttributeValues: { ':now': { N: String(now.getTime()) } },
      }),
      get: new GetItemCommand({ TableName: tables.billingActivity, Key: primaryKey(read), ConsistentRead: true }),
      tx: new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: tables.billingActivity, Item: primaryItem(after, DEFAULT_STATUS_SHARD_COUNT), ConditionExpression: 'version = :v', ExpressionAttributeValues: { ':v': { N: String(read.version) } } } },
          { Put: { TableName: tables.billingActivityHistory, Item: historyItem(historyRowOf(after, { data_payment_method: 'pinless' })), ConditionExpression: 'attribute_not_exists(user_id)' } },
          { Put: { TableName: tables.billingActivity, Item: primaryItem(next, DEFAULT_STATUS_SHARD_COUNT), ConditionExpression: 'attribute_not_exists(user_id)' } },
          { Put: { TableName: tables.billingActivityHistory, Item: historyItem(historyRowOf(next)), ConditionExpression: 'attribute_not_exists(user_id)' } },
          { Delete: { TableName: tables.locks, Key: { PartitionKey: { S: lockKey } }, ConditionExpression: 'record_version_number = :rvn', ExpressionAttributeValues: { ':rvn': { S: rvn } } } },
        ],
      }),
    });
  }
  const before = addNanos(formatInstant(now), 1);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const keys: string[] = [];
  await Promise.all(
    PROCESSOR_IDS.flatMap((processor) => Array.from({ length: DEFAULT_STATUS_SHARD_COUNT }, (_, shard) => dueShardOf(processor, shard))).map(async (partition) => {
      let startKey: Record<string, AttributeValue> | undefined;
      do {
        const out = await client.send(
          new QueryCommand({
            TableName: tables.billingActivity,
            IndexName: BILLING_ACTIVITY_INDEXES.due,
            KeyConditionExpression: 'due_shard = :ds AND due_at < :before',
            ExpressionAttributeValues: { ':ds': { S: partition }, ':before': { S: before } },
            Limit: 1000,
            ExclusiveStartKey: startKey,
          }),
        );
        for (const item of out.Items ?? []) keys.push(`${item.user_id?.S}|${item.billing_date?.S}`);
        startKey = out.LastEvaluatedKey;
      } while (startKey);
    }),
  );
  const planned = performance.now();
  const planning = app.meter.snapshot();
  let billed = 0;
  await pool(bill ? batchesOf(keys) : [], invocations, (batch) =>
    pool(batch, USER_CONCURRENCY, async (key) => {
      const p = plans.get(key);
      if (!p) return;
      await client.send(p.lock);
      await client.send(p.get);
      await client.send(p.tx);
      billed += 1;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const clientCpu = cpuMs(cpu);
  const totals = app.meter.snapshot();
  app.client.destroy();
  return {
    subscriptions: n,
    planned: keys.length,
    billed,
    seedSeconds,
    planSeconds: round2((planned - started) / 1000),
    seconds: round2(seconds),
    subsPerSecond: round2(billed / seconds),
    planning: phase(planning),
    perSub: phase(totals, n),
    clientCpuMsPerSub: round2(clientCpu / n),
  };
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : round2((s[m - 1]! + s[m]!) / 2);
};

export { minus };
