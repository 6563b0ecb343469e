import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { marshallItem } from '../src/adapters/dynamodb/attribute-codec.js';
import { DEFAULT_STATUS_SHARD_COUNT, historyItem, primaryItem, primaryKey } from '../src/adapters/dynamodb/billing-item.js';
import { applyBillingEvent, historyRowOf, successorRecord } from '../src/domain/billing-record.js';
import { userLockKey } from '../src/domain/lock.js';
import { formatInstant } from '../src/domain/time.js';
import { createBatchWorkerHandler } from '../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../src/handlers/collections-job.js';
import { uuidIds } from '../src/runtime/compose.js';
import { createBenchApp, dueRecord, pool, seed } from './app.js';
import { scheduledEvent, sqsEvent } from './lambda-events.js';

/**
 * Sections 2 and 5: N due subscriptions through collections-job → queue → batch-worker, and the
 * raw floor: the same four requests per subscription (PutItem lock, GetItem, TransactWriteItems
 * with the same four items, DeleteItem) issued directly at the same concurrency.
 *
 * Queue delivery is in memory (the SQS emulator's HTTP round trips would be noise here): the
 * collections-job's messages are handed to the batch-worker in batches of 10, `invocations`
 * batches at a time; each invocation runs up to 8 users at once (USER_CONCURRENCY), so at most
 * invocations × 8 attempts are in flight, and the floor runs that many workers.
 */

export interface CollectionRun {
  readonly subscriptions: number;
  readonly enqueued: number;
  readonly billed: number;
  readonly retried: number;
  readonly jobSeconds: number;
  readonly totalSeconds: number;
  readonly subsPerSecond: number;
  readonly requestsPerSub: number;
  readonly byCommandPerSub: Record<string, number>;
  readonly rruPerSub: number;
  readonly wruPerSub: number;
  readonly gsiWruPerSub: number;
  /** CPU time of this (client) process per subscription: on one machine it competes with DynamoDB Local. */
  readonly clientCpuMsPerSub: number;
}

export interface FloorRun {
  readonly subscriptions: number;
  readonly seconds: number;
  readonly subsPerSecond: number;
  readonly clientCpuMsPerSub: number;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

export async function collectionRun(endpoint: string, n: number, invocations: number): Promise<CollectionRun> {
  const app = await createBenchApp(endpoint, `run${n}`);
  const records = Array.from({ length: n }, () => dueRecord(app.clock.now()));
  await seed(app, records);
  app.meter.reset();
  const job = createCollectionsJobHandler(app.deps, { pageSize: 1000 });
  const worker = createBatchWorkerHandler(app.deps);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const summary = await job(scheduledEvent(formatInstant(app.clock.now())));
  const jobDone = performance.now();
  const messages = app.collectionsQueue.drain();
  const batches: (typeof messages)[] = [];
  for (let i = 0; i < messages.length; i += 10) batches.push(messages.slice(i, i + 10));
  let retried = 0;
  await pool(batches, invocations, async (batch) => {
    const out = await worker(sqsEvent(batch));
    retried += out.batchItemFailures.length;
  });
  const finished = performance.now();
  const clientCpu = cpuMs(cpu);
  const totals = app.meter.snapshot();
  app.meter.pause(true);
  let billed = 0;
  await pool(records, 32, async (r) => {
    if ((await app.deps.billing.get(r))?.billing_status === 'COMPLETED') billed += 1;
  });
  app.client.destroy();
  const seconds = (finished - started) / 1000;
  return {
    subscriptions: n,
    enqueued: summary.enqueued,
    billed,
    retried,
    jobSeconds: round2((jobDone - started) / 1000),
    totalSeconds: round2(seconds),
    subsPerSecond: round2(billed / seconds),
    requestsPerSub: round2(totals.requests / n),
    byCommandPerSub: Object.fromEntries(Object.entries(totals.byCommand).map(([k, v]) => [k, round2(v / n)])),
    rruPerSub: round2(totals.rru / n),
    wruPerSub: round2(totals.wru / n),
    gsiWruPerSub: round2(totals.gsiWru / n),
    clientCpuMsPerSub: round2(clientCpu / n),
  };
}

export async function rawFloor(endpoint: string, n: number, concurrency: number): Promise<FloorRun> {
  const app = await createBenchApp(endpoint, `floor${n}`);
  const records = Array.from({ length: n }, () => dueRecord(app.clock.now()));
  await seed(app, records);
  const now = app.clock.now();
  const { client, tables } = app;
  // Everything but the requests is prepared before the clock starts.
  const plans = records.map((read) => {
    const after = applyBillingEvent(read, 'COLLECTED', now, { process: 'SCHEDULED', set: { payment_attempts: 1, transaction_id: `sim_${randomUUID()}`, payment_error: '' } });
    const next = successorRecord(after, now, uuidIds, after.last_run_date)!;
    const lockKey = userLockKey(read.user_id);
    const rvn = randomUUID();
    return {
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
        ],
      }),
      release: new DeleteItemCommand({
        TableName: tables.locks,
        Key: { PartitionKey: { S: lockKey } },
        ConditionExpression: 'record_version_number = :rvn',
        ExpressionAttributeValues: { ':rvn': { S: rvn } },
      }),
    };
  });
  const cpu = process.cpuUsage();
  const started = performance.now();
  await pool(plans, concurrency, async (p) => {
    await client.send(p.lock);
    await client.send(p.get);
    await client.send(p.tx);
    await client.send(p.release);
  });
  const seconds = (performance.now() - started) / 1000;
  const clientCpu = cpuMs(cpu);
  app.client.destroy();
  return { subscriptions: n, seconds: round2(seconds), subsPerSecond: round2(n / seconds), clientCpuMsPerSub: round2(clientCpu / n) };
}
