import type { KinesisStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { PutRecordCommand } from '@aws-sdk/client-kinesis';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalKinesis, startLocalSqs, type LocalKinesis, type LocalSqs } from '../../src/local/emulators.js';
import { KinesisEventSource } from '../../src/local/kinesis-event-source.js';
import { SqsEventSource } from '../../src/local/sqs-event-source.js';
import { createLogger } from '../../src/runtime/logger.js';

const logger = createLogger({ level: 'silent' });

async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('local SQS event source mapping', () => {
  let sqs: LocalSqs;
  beforeAll(async () => {
    sqs = await startLocalSqs({ prefix: `t${Date.now()}`, visibilityTimeoutS: 1, maxReceiveCount: 2 });
  });
  afterAll(async () => {
    await sqs?.stop();
  });

  it('deletes what succeeded, redelivers a reported failure after the visibility timeout, then the queue moves it to its DLQ', async () => {
    const seen: SQSRecord[] = [];
    const source = new SqsEventSource({
      client: sqs.client,
      queue: sqs.queues.collectionsStripe,
      functionName: 'batch-worker',
      logger,
      waitTimeSeconds: 1,
      handler: async (event: SQSEvent) => {
        seen.push(...event.Records);
        return { batchItemFailures: event.Records.filter((r) => r.body === 'poison').map((r) => ({ itemIdentifier: r.messageId })) };
      },
    });
    source.start();
    try {
      await sqs.client.send(new SendMessageCommand({ QueueUrl: sqs.queues.collectionsStripe.url, MessageBody: 'good' }));
      await sqs.client.send(new SendMessageCommand({ QueueUrl: sqs.queues.collectionsStripe.url, MessageBody: 'poison' }));
      await until(() => seen.filter((r) => r.body === 'poison').length >= 2);
      await until(async () => {
        const dlq = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: sqs.queues.collectionsStripe.deadLetter.url, WaitTimeSeconds: 0 }));
        return (dlq.Messages ?? []).some((m) => m.Body === 'poison');
      });
    } finally {
      await source.stop();
    }
    expect(seen.filter((r) => r.body === 'good')).toHaveLength(1);
    const poison = seen.filter((r) => r.body === 'poison');
    expect(poison).toHaveLength(2);
    expect(poison.map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    expect(poison[0]).toMatchObject({ eventSource: 'aws:sqs', eventSourceARN: sqs.queues.collectionsStripe.arn, awsRegion: 'us-east-1' });
    expect(poison[0]!.messageId).toBe(poison[1]!.messageId);
    expect(poison[0]!.receiptHandle).not.toBe(poison[1]!.receiptHandle);
  });

  it('returns the whole batch when the function throws', async () => {
    let calls = 0;
    const bodies: string[] = [];
    const source = new SqsEventSource({
      client: sqs.client,
      queue: sqs.queues.balanceEvents,
      functionName: 'webhook-balance-worker',
      logger,
      waitTimeSeconds: 1,
      handler: async (event: SQSEvent) => {
        calls += 1;
        bodies.push(...event.Records.map((r) => r.body));
        if (calls === 1) throw new Error('cold start failed');
        return { batchItemFailures: [] };
      },
    });
    source.start();
    try {
      await sqs.client.send(new SendMessageCommand({ QueueUrl: sqs.queues.balanceEvents.url, MessageBody: 'once' }));
      await until(() => bodies.filter((b) => b === 'once').length === 2);
    } finally {
      await source.stop();
    }
    expect(calls).toBe(2);
  });

  it('gathers messages that come due within its batching window into one invocation, as Lambda\'s MaximumBatchingWindowInSeconds does', async () => {
    const batches: string[][] = [];
    // A visibility timeout longer than the window, as the stack sizes it.
    const paced = await startLocalSqs({ prefix: `w${Date.now()}`, visibilityTimeoutS: 30, maxReceiveCount: 2 });
    const queue = paced.queues.collectionsPayments;
    const source = new SqsEventSource({
      client: paced.client,
      queue,
      functionName: 'batch-worker',
      logger,
      waitTimeSeconds: 1,
      maxBatchingWindowMs: 3_000,
      handler: async (event: SQSEvent) => {
        batches.push(event.Records.map((r) => r.body));
        return { batchItemFailures: [] };
      },
    });
    source.start();
    try {
      await until(() => source.isReady);
      // Paced: one due now, two a second later (SQS DelaySeconds).
      await paced.client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'now' }));
      await paced.client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'later-1', DelaySeconds: 1 }));
      await paced.client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'later-2', DelaySeconds: 1 }));
      await until(() => batches.flat().length === 3);
    } finally {
      await source.stop();
      await paced.stop();
    }
    expect(batches.map((b) => [...b].sort())).toEqual([['later-1', 'later-2', 'now']]);
  });

  it('runs as many invocations at once as its concurrency (the event source\'s maximumConcurrency)', async () => {
    const queue = sqs.queues.retryRuns;
    let inFlight = 0;
    let most = 0;
    let handled = 0;
    const source = new SqsEventSource({
      client: sqs.client,
      queue,
      functionName: 'retry-run-worker',
      logger,
      waitTimeSeconds: 1,
      batchSize: 1,
      concurrency: 3,
      handler: async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        // Held until a third invocation is in flight (or long enough that one poller could not be mistaken for three).
        const deadline = Date.now() + 5_000;
        while (most < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        inFlight -= 1;
        handled += 1;
        return { batchItemFailures: [] };
      },
    });
    source.start();
    try {
      for (const body of ['a', 'b', 'c']) await sqs.client.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }));
      await until(() => handled === 3);
    } finally {
      await source.stop();
    }
    expect(most).toBe(3);
  });
});

describe('local Kinesis event source mapping', () => {
  let kinesis: LocalKinesis;
  let sqs: LocalSqs;
  beforeAll(async () => {
    [kinesis, sqs] = await Promise.all([
      startLocalKinesis({ streamName: 'memberships-test', shardCount: 1 }),
      startLocalSqs({ prefix: `k${Date.now()}`, visibilityTimeoutS: 5, maxReceiveCount: 5 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([kinesis?.stop(), sqs?.stop()]);
  });

  it('resumes from the first failed record, retries it alone, then sends it to the on-failure queue and moves on', async () => {
    const calls: { data: string[]; sequence: string[] }[] = [];
    const source = new KinesisEventSource({
      client: kinesis.client,
      streamName: kinesis.streamName,
      streamArn: kinesis.streamArn,
      functionName: 'memberships-consumer',
      logger,
      retryAttempts: 2,
      idleMs: 20,
      onFailure: { client: sqs.client, queue: sqs.membershipsFailures },
      handler: async (event: KinesisStreamEvent) => {
        const data = event.Records.map((r) => Buffer.from(r.kinesis.data, 'base64').toString('utf8'));
        calls.push({ data, sequence: event.Records.map((r) => r.kinesis.sequenceNumber) });
        const poison = event.Records.find((r) => Buffer.from(r.kinesis.data, 'base64').toString('utf8') === 'poison');
        return { batchItemFailures: poison ? [{ itemIdentifier: poison.kinesis.sequenceNumber }] : [] };
      },
    });
    const put = async (data: string) =>
      (await kinesis.client.send(new PutRecordCommand({ StreamName: kinesis.streamName, PartitionKey: 'user-1', Data: Buffer.from(data) }))).SequenceNumber!;
    // Put before the poller starts, so that the first batch holds all three.
    const [a, poison, c] = [await put('a'), await put('poison'), await put('c')];
    await source.start();
    try {
      const settled = await Promise.all([source.waitFor(a), source.waitFor(poison), source.waitFor(c)]);
      expect(settled.map((s) => s?.status)).toEqual(['applied', 'failed', 'applied']);
      expect(settled[1]!.attempts).toBe(3);
    } finally {
      await source.stop();
    }
    expect(calls[0]!.data).toEqual(['a', 'poison', 'c']);
    expect(calls.slice(1, 3).map((c) => c.data)).toEqual([['poison'], ['poison']]);
    expect(calls[3]!.data).toEqual(['c']);
    const failures = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: sqs.membershipsFailures.url, WaitTimeSeconds: 1 }));
    const body = JSON.parse(failures.Messages![0]!.Body!);
    expect(body.requestContext.condition).toBe('RetryAttemptsExhausted');
    expect(body.KinesisBatchInfo).toMatchObject({ startSequenceNumber: poison, endSequenceNumber: poison, batchSize: 1, streamArn: kinesis.streamArn });
  });
});
