import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetRecordsCommand, GetShardIteratorCommand, DescribeStreamCommand, type DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latestStreamArn } from '../../src/adapters/dynamodb/create-tables.js';
import { createEventBridgeClient, EventBridgePublisher } from '../../src/adapters/eventbridge/event-bus.js';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import { publishedEventSchema } from '../../src/domain/published-events.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { waive } from '../../src/domain/use-cases/waive.js';
import { createEventsPublisherHandler } from '../../src/handlers/events-publisher.js';
import { DynamoStreamEventSource, lambdaDynamoRecord, localDynamoStreamsClient } from '../../src/local/dynamodb-stream-event-source.js';
import { startLocalSqs, LOCAL_REGION, type LocalSqs } from '../../src/local/emulators.js';
import { LocalEventBus, type BusEvent } from '../../src/local/event-bus.js';
import { createLogger } from '../../src/runtime/logger.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';

/**
 * The events-publisher against DynamoDB Local's own stream of billing-activity-history and the
 * local bus (PutEvents through the real EventBridge client), polled like Lambda's event source
 * mapping: redelivery, failed entries, a poison record, batching, the webhook.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

let app: TestApp;
let sqs: LocalSqs;
let bus: LocalEventBus;
let streams: DynamoDBStreamsClient;
let streamArn: string;
let hook: { server: Server; url: string; received: BusEvent[] };

async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  [app, sqs] = await Promise.all([createTestApp({ label: 'events-pub', now: NOW, streams: true }), startLocalSqs({ prefix: `e${Date.now()}`, visibilityTimeoutS: 5, maxReceiveCount: 5 })]);
  const received: BusEvent[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(text) as BusEvent);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  hook = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
  bus = new LocalEventBus({ busName: 'billing-test', logger, webhookUrl: hook.url });
  await bus.start();
  streams = localDynamoStreamsClient(app.db.endpoint);
  streamArn = (await latestStreamArn(app.db.client, app.db.tables.billingActivityHistory))!;
});

afterAll(async () => {
  await bus?.stop();
  await sqs?.stop();
  streams?.destroy();
  await new Promise<void>((r) => (hook ? hook.server.close(() => r()) : r()));
});

function publisherHandler(options: { maxAttempts?: number } = {}) {
  const client = createEventBridgeClient({ region: LOCAL_REGION, endpoint: bus.endpoint });
  return createEventsPublisherHandler({
    logger,
    publisher: new EventBridgePublisher(client, bus.busName, { baseDelayMs: 1, ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}) }),
    eventIdOf,
    historyTableName: app.db.tables.billingActivityHistory,
  });
}

/** A mapping that reads only what is written after it is ready (what earlier tests left on the stream is not its business). */
async function startedSource(handler: (event: DynamoDBStreamEvent) => Promise<{ batchItemFailures: { itemIdentifier: string }[] }>, retryAttempts = 2) {
  const mapping = new DynamoStreamEventSource({
    client: streams,
    streamArn,
    functionName: 'events-publisher',
    handler,
    logger,
    retryAttempts,
    idleMs: 20,
    discoverMs: 200,
    onFailure: { client: sqs.client, queue: sqs.eventsFailures },
    startingPosition: 'LATEST',
  });
  await mapping.start();
  await until(() => mapping.isReady);
  return mapping;
}

/** Every record now on the stream, as Lambda would deliver them. */
async function streamRecords(): Promise<DynamoDBRecord[]> {
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const out: DynamoDBRecord[] = [];
  for (const shard of StreamDescription!.Shards ?? []) {
    let iterator = (await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    while (iterator) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      out.push(...(page.Records ?? []).map((r) => lambdaDynamoRecord(r, streamArn)));
      if ((page.Records ?? []).length === 0) break;
      iterator = page.NextShardIterator;
    }
  }
  return out;
}

const forUser = (userId: string) => bus.list({ userId });

describe('events-publisher over the history stream', () => {
  it('publishes what the rows say, with the stream record exactly as Lambda delivers it, and forwards each event to the webhook', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner: 't' });
    const records = (await streamRecords()).filter((r) => r.dynamodb?.NewImage?.user_id?.S === record.user_id);
    // The creation row, the attempt's row and the next period's row.
    expect(records).toHaveLength(3);
    expect(records[1]).toMatchObject({
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      eventSourceARN: streamArn,
      dynamodb: { StreamViewType: 'NEW_IMAGE', SequenceNumber: expect.any(String), Keys: { user_id: { S: record.user_id } } },
    });
    expect(typeof records[1]!.dynamodb!.ApproximateCreationDateTime).toBe('number');

    const response = await publisherHandler()({ Records: records });
    expect(response.batchItemFailures).toEqual([]);
    const events = forUser(record.user_id);
    expect(events.map((e) => e['detail-type'])).toEqual(['billing.period.collected']);
    expect(events[0]).toMatchObject({ version: '0', source: 'billing', account: expect.any(String), region: LOCAL_REGION, resources: [] });
    expect(publishedEventSchema.parse({ source: events[0]!.source, 'detail-type': events[0]!['detail-type'], detail: events[0]!.detail })).toBeTruthy();
    await bus.forwarded();
    expect(hook.received.filter((e) => (e.detail as { user_id: string }).user_id === record.user_id)).toEqual(events);
  });

  it('gives a redelivered record the same event ids (the envelope id differs, the detail does not)', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'duplicate charge' });
    const records = (await streamRecords()).filter((r) => r.dynamodb?.NewImage?.user_id?.S === record.user_id);
    const handler = publisherHandler();
    await handler({ Records: records });
    await handler({ Records: records });
    const events = forUser(record.user_id).filter((e) => e['detail-type'] === 'billing.period.waived');
    expect(events).toHaveLength(2);
    expect(events[0]!.detail).toEqual(events[1]!.detail);
    expect(events[0]!.id).not.toBe(events[1]!.id);
  });

  it('puts again an entry EventBridge failed, so the event is published once and nothing is reported', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'goodwill' });
    const records = (await streamRecords()).filter((r) => r.dynamodb?.NewImage?.user_id?.S === record.user_id);
    const calls = bus.calls.length;
    bus.failNextEntries(1);
    expect((await publisherHandler()({ Records: records })).batchItemFailures).toEqual([]);
    expect(forUser(record.user_id).map((e) => e['detail-type'])).toEqual(['billing.period.waived']);
    expect(bus.calls.slice(calls)).toEqual([1, 1]);
  });

  it('reports the record of an entry that keeps failing, and the event source publishes it on the retry', async () => {
    const handler = publisherHandler({ maxAttempts: 2 });
    const answers: string[][] = [];
    const mapping = await startedSource(async (event) => {
      const response = await handler(event);
      answers.push(response.batchItemFailures.map((f) => f.itemIdentifier));
      return response;
    });
    bus.failNextEntries(2);
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'goodwill' });
    try {
      await until(() => forUser(record.user_id).length === 1);
    } finally {
      await mapping.stop();
    }
    const waivedSequence = (await streamRecords()).find((r) => r.dynamodb?.NewImage?.user_id?.S === record.user_id && r.dynamodb.NewImage.billing_event?.S === 'WAIVED')!.dynamodb!.SequenceNumber!;
    expect(answers.flat()[0]).toBe(waivedSequence);
    expect(answers.flat()).toEqual([waivedSequence]);
    expect(mapping.failures()).toEqual([]);
  });

  it('logs and reports a poison record; after its retries it goes to the on-failure queue and the rows behind it are published', async () => {
    const handler = publisherHandler();
    const batches: string[][] = [];
    const mapping = await startedSource(async (event) => {
      batches.push(event.Records.map((r) => r.dynamodb!.NewImage!.user_id!.S!));
      return handler(event);
    }, 2);
    const poisonUser = `poison-${Date.now()}`;
    // An audit row of an unknown shape: no status the system knows, no amount.
    await app.db.client.send(
      new PutItemCommand({
        TableName: app.db.tables.billingActivityHistory,
        Item: { user_id: { S: poisonUser }, last_run_date: { S: '2026-12-01T12:00:00.000000000Z' }, subscription_id: { S: 'sub-poison' }, billing_status: { S: 'LOST' } },
      }),
    );
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'behind the poison' });
    try {
      await until(() => forUser(record.user_id).length >= 1 && mapping.failures().length === 1);
    } finally {
      await mapping.stop();
    }
    const poisonSequence = (await streamRecords()).find((r) => r.dynamodb?.NewImage?.user_id?.S === poisonUser)!.dynamodb!.SequenceNumber!;
    expect(mapping.failures()).toEqual([expect.objectContaining({ sequenceNumber: poisonSequence, status: 'failed', attempts: 3 })]);
    // The first batch holds the poison and what follows; then the poison alone, twice (bisected); then the rest.
    expect(batches[0]![0]).toBe(poisonUser);
    expect(batches.slice(1, 3)).toEqual([[poisonUser], [poisonUser]]);
    expect(batches[3]![0]).toBe(record.user_id);
    // Rows behind the poison in its first batch were published then and again after it (Lambda resumes at the poison): one event id.
    const waived = forUser(record.user_id);
    expect(waived.length).toBeGreaterThanOrEqual(1);
    expect(new Set(waived.map((e) => `${e['detail-type']} ${(e.detail as { event_id: string }).event_id}`)).size).toBe(1);
    expect(waived[0]!['detail-type']).toBe('billing.period.waived');
    const failures = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: sqs.eventsFailures.url, WaitTimeSeconds: 1 }));
    const body = JSON.parse(failures.Messages![0]!.Body!);
    expect(body.requestContext.condition).toBe('RetryAttemptsExhausted');
    expect(body.DDBStreamBatchInfo).toMatchObject({ startSequenceNumber: poisonSequence, endSequenceNumber: poisonSequence, batchSize: 1, streamArn });
  });

  it('answers a batch item failure for a record it cannot map and publishes the rest of the batch', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now()));
    await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'goodwill' });
    const good = (await streamRecords()).filter((r) => r.dynamodb?.NewImage?.user_id?.S === record.user_id);
    const template = good[good.length - 1]!;
    const modify: DynamoDBRecord = { ...template, eventName: 'MODIFY', dynamodb: { ...template.dynamodb, SequenceNumber: '1' } };
    const noImage: DynamoDBRecord = { ...template, dynamodb: { ...template.dynamodb, NewImage: undefined, SequenceNumber: '2' } };
    const badAmount: DynamoDBRecord = { ...template, dynamodb: { ...template.dynamodb, NewImage: { ...template.dynamodb!.NewImage, amount: { N: '19.999' } }, SequenceNumber: '3' } };
    const response = await publisherHandler()({ Records: [modify, noImage, badAmount, ...good] });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: '1' }, { itemIdentifier: '2' }, { itemIdentifier: '3' }]);
    expect(forUser(record.user_id).map((e) => e['detail-type'])).toEqual(['billing.period.waived']);
  });

  it('puts at most ten entries per PutEvents call', async () => {
    const records: DynamoDBRecord[] = [];
    const users: string[] = [];
    for (let i = 0; i < 23; i++) {
      const [record] = await seedRecords(app, dueRecord(app.clock.now()));
      users.push(record.user_id);
      await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'batch' });
    }
    records.push(...(await streamRecords()).filter((r) => users.includes(r.dynamodb!.NewImage!.user_id!.S!)));
    const calls = bus.calls.length;
    expect((await publisherHandler()({ Records: records })).batchItemFailures).toEqual([]);
    expect(bus.calls.slice(calls)).toEqual([10, 10, 3]);
    expect(users.every((u) => forUser(u).length === 1)).toBe(true);
  });

  it('keeps the event when the webhook cannot be reached', async () => {
    const deaf = new LocalEventBus({ busName: 'billing-deaf', logger, webhookUrl: 'http://127.0.0.1:9/unreachable', webhookTimeoutMs: 500 });
    await deaf.start();
    try {
      const [record] = await seedRecords(app, dueRecord(app.clock.now()));
      await waive(app.deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops', reason: 'deaf' });
      const records = (await streamRecords()).filter((r) => r.dynamodb?.NewImage?.user_id?.S === record.user_id);
      const handler = createEventsPublisherHandler({
        logger,
        publisher: new EventBridgePublisher(createEventBridgeClient({ region: LOCAL_REGION, endpoint: deaf.endpoint }), deaf.busName),
        eventIdOf,
        historyTableName: app.db.tables.billingActivityHistory,
      });
      expect((await handler({ Records: records })).batchItemFailures).toEqual([]);
      await deaf.forwarded();
      expect(deaf.list({ userId: record.user_id }).map((e) => e['detail-type'])).toEqual(['billing.period.waived']);
    } finally {
      await deaf.stop();
    }
  });
});
