import { randomUUID } from 'node:crypto';
import type { Context, EventBridgeEvent, KinesisStreamRecord, SQSRecord } from 'aws-lambda';
import type { Message } from '@aws-sdk/client-sqs';
import type { _Record as KinesisRecord } from '@aws-sdk/client-kinesis';
import { FUNCTION_NAMES, FUNCTIONS, type FunctionName } from '../manifest/index.js';
import { LOCAL_REGION } from './emulators.js';

export const LOCAL_ACCOUNT = '000000000000';

/** Lambda timeouts as the stack sets them (from the manifest), so getRemainingTimeInMillis means the same. */
export const FUNCTION_TIMEOUT_MS = Object.fromEntries(FUNCTION_NAMES.map((name) => [name, FUNCTIONS[name].timeoutSeconds * 1000])) as Record<FunctionName, number>;
export type { FunctionName };

/** A Lambda context for one invocation of `functionName`. */
export function lambdaContext(functionName: FunctionName, requestId: string = randomUUID()): Context {
  const deadline = Date.now() + FUNCTION_TIMEOUT_MS[functionName];
  const qualified = `local-${functionName}`;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: qualified,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${qualified}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${qualified}`,
    logStreamName: `local/[$LATEST]${requestId.replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** An SQS record as Lambda's event source mapping delivers it. */
export function sqsRecord(message: Message, queueArn: string): SQSRecord {
  const a = message.Attributes ?? {};
  const now = String(Date.now());
  return {
    messageId: message.MessageId!,
    receiptHandle: message.ReceiptHandle!,
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? now,
      SenderId: a.SenderId ?? LOCAL_ACCOUNT,
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? now,
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: LOCAL_REGION,
  };
}

/** A Kinesis record as Lambda's event source mapping delivers it (data base64-encoded). */
export function kinesisRecord(record: KinesisRecord, shardId: string, streamArn: string, functionName: string): KinesisStreamRecord {
  const arrival = record.ApproximateArrivalTimestamp ?? new Date();
  return {
    kinesis: {
      kinesisSchemaVersion: '1.0',
      partitionKey: record.PartitionKey ?? '',
      sequenceNumber: record.SequenceNumber!,
      data: Buffer.from(record.Data ?? new Uint8Array()).toString('base64'),
      approximateArrivalTimestamp: arrival.getTime() / 1000,
    },
    eventSource: 'aws:kinesis',
    eventVersion: '1.0',
    eventID: `${shardId}:${record.SequenceNumber}`,
    eventName: 'aws:kinesis:record',
    invokeIdentityArn: `arn:aws:iam::${LOCAL_ACCOUNT}:role/local-${functionName}`,
    awsRegion: LOCAL_REGION,
    eventSourceARN: streamArn,
  };
}

/** The EventBridge scheduled event the collections rule sends, stamped at the simulated now. */
export function scheduledEvent(now: Date, ruleName: string): EventBridgeEvent<'Scheduled Event', Record<string, never>> {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: LOCAL_ACCOUNT,
    time: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: LOCAL_REGION,
    resources: [`arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:rule/${ruleName}`],
    detail: {},
  };
}
