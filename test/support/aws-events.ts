import { randomUUID } from 'node:crypto';
import type { Context, KinesisStreamEvent, KinesisStreamRecord, ScheduledEvent, SQSEvent, SQSRecord } from 'aws-lambda';

/** Fixtures shaped like the events AWS delivers to Lambda (EventBridge schedule, SQS, Kinesis). */

const REGION = 'us-east-1';
const ACCOUNT = '123456789012';

export function scheduledEvent(time = '2026-12-01T12:00:00Z'): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: ACCOUNT,
    time,
    region: REGION,
    resources: [`arn:aws:events:${REGION}:${ACCOUNT}:rule/test-collections-schedule`],
    detail: {},
  };
}

export function lambdaContext(options: { remainingMs?: () => number; requestId?: string; functionName?: string } = {}): Context {
  const functionName = options.functionName ?? 'test-billing-fn';
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: options.requestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `2026/12/01/[$LATEST]${randomUUID().replace(/-/g, '')}`,
    getRemainingTimeInMillis: options.remainingMs ?? (() => 120_000),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export function sqsRecord(body: unknown, options: { messageId?: string; queue?: string; receiveCount?: number } = {}): SQSRecord {
  const queue = options.queue ?? 'test-collections';
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return {
    messageId: options.messageId ?? randomUUID(),
    receiptHandle: Buffer.from(randomUUID()).toString('base64'),
    body: text,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: String(Date.parse('2026-12-01T12:00:00Z')),
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: String(Date.parse('2026-12-01T12:00:01Z')),
    },
    messageAttributes: {},
    md5OfBody: 'not-checked-by-the-handlers',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:${REGION}:${ACCOUNT}:${queue}`,
    awsRegion: REGION,
  };
}

export function sqsEvent(records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

let sequence = 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898n;

export function kinesisRecord(data: unknown, options: { partitionKey?: string; sequenceNumber?: string; stream?: string } = {}): KinesisStreamRecord {
  sequence += 1n;
  const stream = options.stream ?? 'test-memberships';
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  const partitionKey = options.partitionKey ?? (typeof data === 'object' && data !== null && 'user_id' in data ? String((data as { user_id: unknown }).user_id) : 'unknown');
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey,
      sequenceNumber: options.sequenceNumber ?? sequence.toString(),
      data: Buffer.from(text, 'utf8').toString('base64'),
      approximateArrivalTimestamp: Date.parse('2026-12-01T12:00:00Z') / 1000,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `shardId-000000000000:${options.sequenceNumber ?? sequence.toString()}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: `arn:aws:iam::${ACCOUNT}:role/test-memberships-consumer`,
    awsRegion: REGION,
    eventSourceARN: `arn:aws:kinesis:${REGION}:${ACCOUNT}:stream/${stream}`,
  };
}

export function kinesisEvent(records: KinesisStreamRecord[]): KinesisStreamEvent {
  return { Records: records };
}
