import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamsRecord,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '../runtime/logger.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type LocalQueue } from './emulators.js';
import { firstFailedIndex, streamBatchOutcome, type StreamRetry } from './stream-batch.js';
import { lambdaContext, type FunctionName } from './lambda-shapes.js';

export type DynamoStreamHandler = (event: DynamoDBStreamEvent, context?: Context) => Promise<DynamoDBBatchResponse | void>;

export interface DynamoStreamEventSourceOptions {
  readonly client: DynamoDBStreamsClient;
  readonly streamArn: string;
  readonly functionName: FunctionName;
  readonly handler: DynamoStreamHandler;
  readonly logger: Logger;
  readonly onFailure?: { readonly client: SQSClient; readonly queue: LocalQueue };
  readonly batchSize?: number;
  /** Retries of a failing record before it goes to the on-failure destination. */
  readonly retryAttempts?: number;
  readonly idleMs?: number;
  /** How often the stream is described again for new shards. */
  readonly discoverMs?: number;
  /** Where each shard's position is kept across restarts (as Lambda's mapping keeps it across deploys). */
  readonly checkpointFile?: string;
  /** Where a shard with no saved position starts: its oldest record (the stack's choice) or only what comes next. */
  readonly startingPosition?: 'TRIM_HORIZON' | 'LATEST';
}

/** A DynamoDB Streams client for DynamoDB Local (the same endpoint as the tables). */
export function localDynamoStreamsClient(endpoint: string): DynamoDBStreamsClient {
  return new DynamoDBStreamsClient({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS, maxAttempts: 3 });
}

/** What happened to a record: given to the handler until it took it, or given up on. */
export interface StreamSettlement {
  readonly shardId: string;
  readonly sequenceNumber: string;
  readonly status: 'processed' | 'failed';
  readonly attempts: number;
}

/**
 * Lambda's DynamoDB stream event source mapping, locally: one poller per shard, in order (a child
 * shard only after its parent is read to its end), with the batch rule of stream-batch.ts.
 */
export class DynamoStreamEventSource {
  private running = false;
  private readonly loops = new Map<string, Promise<void>>();
  private readonly finished = new Set<string>();
  private readonly checkpoints = new Map<string, string>();
  private readonly caughtUp = new Set<string>();
  private readonly settlements: StreamSettlement[] = [];
  private discovery: Promise<void> | undefined;
  private described = false;
  private lastSaved = '';

  constructor(private readonly options: DynamoStreamEventSourceOptions) {
    this.restoreCheckpoints();
  }

  /** Every shard known was read up to its latest record at least once. */
  get isReady(): boolean {
    return this.described && [...this.loops.keys()].every((s) => this.caughtUp.has(s) || this.finished.has(s));
  }

  /** Records given up on (sent to the on-failure destination), oldest first. */
  failures(): StreamSettlement[] {
    return this.settlements.filter((s) => s.status === 'failed');
  }

  async start(): Promise<void> {
    this.running = true;
    await this.discover();
    this.described = true;
    this.discovery = this.discoverLoop();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.discovery;
    await Promise.all(this.loops.values());
    this.saveCheckpoints();
  }

  private async discoverLoop(): Promise<void> {
    const every = this.options.discoverMs ?? 1_000;
    while (this.running) {
      await sleep(every);
      if (!this.running) break;
      try {
        await this.discover();
      } catch (error) {
        this.options.logger.warn({ err: error }, 'describing the history stream failed; retrying');
      }
    }
  }

  /** Starts a poller for every shard not yet read whose parent (if it is still listed) is done. */
  private async discover(): Promise<void> {
    const shards: Shard[] = [];
    let exclusiveStart: string | undefined;
    do {
      const { StreamDescription } = await this.options.client.send(
        new DescribeStreamCommand({ StreamArn: this.options.streamArn, ...(exclusiveStart ? { ExclusiveStartShardId: exclusiveStart } : {}) }),
      );
      shards.push(...(StreamDescription?.Shards ?? []));
      exclusiveStart = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStart);
    const listed = new Set(shards.map((s) => s.ShardId!));
    for (const shard of shards) {
      const id = shard.ShardId!;
      if (this.loops.has(id)) continue;
      const parent = shard.ParentShardId;
      if (parent && listed.has(parent) && !this.finished.has(parent)) continue;
      this.loops.set(id, this.pollShard(id));
    }
  }

  private async iterator(shardId: string, type: 'TRIM_HORIZON' | 'LATEST' | 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER', sequenceNumber?: string): Promise<string | undefined> {
    const out = await this.options.client.send(
      new GetShardIteratorCommand({
        StreamArn: this.options.streamArn,
        ShardId: shardId,
        ShardIteratorType: type,
        ...(sequenceNumber ? { SequenceNumber: sequenceNumber } : {}),
      }),
    );
    return out.ShardIterator;
  }

  private async pollShard(shardId: string): Promise<void> {
    const { client, logger } = this.options;
    const idleMs = this.options.idleMs ?? 200;
    const retryAttempts = this.options.retryAttempts ?? 3;
    let iterator: string | undefined;
    let retry: StreamRetry | undefined;
    const resume = () => {
      const checkpoint = this.checkpoints.get(shardId);
      if (retry) return this.iterator(shardId, 'AT_SEQUENCE_NUMBER', retry.sequenceNumber);
      return checkpoint ? this.iterator(shardId, 'AFTER_SEQUENCE_NUMBER', checkpoint) : this.iterator(shardId, this.options.startingPosition ?? 'TRIM_HORIZON');
    };
    let fresh = true;
    /** Set by a new iterator, cleared by the first read through it. */
    let justResumed = false;
    while (this.running) {
      try {
        if (fresh) {
          iterator = await resume();
          fresh = false;
          justResumed = true;
        }
        if (!iterator) {
          // Read to its end and closed: its children may start.
          this.finished.add(shardId);
          this.saveCheckpoints();
          return;
        }
        const out = await client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: retry ? 1 : (this.options.batchSize ?? 100) }));
        justResumed = false;
        const records = out.Records ?? [];
        if (records.length === 0) {
          this.caughtUp.add(shardId);
          iterator = out.NextShardIterator;
          if (iterator) await sleep(idleMs);
          continue;
        }
        const seq = (r: StreamsRecord) => r.dynamodb!.SequenceNumber!;
        const failedAt = await this.invoke(shardId, records);
        const outcome = streamBatchOutcome(records.map(seq), failedAt, retry, retryAttempts);
        for (const p of outcome.processed) this.settle({ shardId, sequenceNumber: p.sequenceNumber, status: 'processed', attempts: p.attempts });
        if (outcome.processedThrough !== undefined) this.checkpoint(shardId, outcome.processedThrough);
        retry = outcome.retry;
        if (failedAt === undefined) {
          iterator = out.NextShardIterator;
          continue;
        }
        if (outcome.givenUp) {
          await this.sendToOnFailure(shardId, records[outcome.givenUp.index]!, outcome.givenUp.attempts);
          this.settle({ shardId, sequenceNumber: outcome.givenUp.sequenceNumber, status: 'failed', attempts: outcome.givenUp.attempts });
          this.checkpoint(shardId, outcome.givenUp.sequenceNumber);
        } else {
          await sleep(Math.min(100 * 2 ** (outcome.retry!.attempts - 1), 2_000));
        }
        fresh = true;
      } catch (error) {
        if (!this.running) break;
        if (error instanceof Error && error.name === 'TrimmedDataAccessException' && justResumed) {
          // Even a new iterator at the saved position is past what the stream keeps (24 h): read what is left, as a new mapping would.
          logger.warn({ shardId, checkpoint: this.checkpoints.get(shardId), err: error.message }, 'history stream position trimmed away; reading the shard from its oldest record');
          this.checkpoints.delete(shardId);
          retry = undefined;
        } else if (error instanceof Error && error.name === 'TrimmedDataAccessException') {
          // DynamoDB Local answers this for an iterator it handed out on an empty shard once the first record lands: a new iterator at the same position reads on.
          logger.debug({ shardId, err: error.message }, 'history stream iterator refused; taking a new one at the same position');
        } else {
          logger.warn({ err: error, shardId }, 'history stream poll failed; retrying');
        }
        fresh = true;
        await sleep(500);
      }
    }
  }

  /** Index of the first record to retry from, or undefined when the whole batch succeeded. */
  private async invoke(shardId: string, records: StreamsRecord[]): Promise<number | undefined> {
    const { functionName, handler, logger, streamArn } = this.options;
    const requestId = randomUUID();
    const event: DynamoDBStreamEvent = { Records: records.map((r) => lambdaDynamoRecord(r, streamArn)) };
    try {
      const response = await handler(event, lambdaContext(functionName, requestId));
      const failures = (response ?? { batchItemFailures: [] }).batchItemFailures ?? [];
      const failedAt = firstFailedIndex(failures, records.map((r) => r.dynamodb?.SequenceNumber ?? ''));
      if (failedAt === undefined) return undefined;
      logger.info({ function: functionName, requestId, shardId, failed: failures.length, batch: records.length }, 'batch item failure; resuming from the first failed record');
      return failedAt;
    } catch (error) {
      logger.error({ err: error, function: functionName, requestId, shardId }, 'invocation failed; retrying the batch');
      return 0;
    }
  }

  private settle(settlement: StreamSettlement): void {
    this.settlements.push(settlement);
    if (this.settlements.length > 5_000) this.settlements.shift();
  }

  private checkpoint(shardId: string, sequenceNumber: string): void {
    this.checkpoints.set(shardId, sequenceNumber);
    this.saveCheckpoints();
  }

  private restoreCheckpoints(): void {
    const file = this.options.checkpointFile;
    if (!file || !existsSync(file)) return;
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { streamArn?: string; shards?: Record<string, string>; finished?: string[] };
      // A new stream (the table was made again) starts from its beginning.
      if (saved.streamArn !== this.options.streamArn) return;
      for (const [shard, sequence] of Object.entries(saved.shards ?? {})) this.checkpoints.set(shard, sequence);
      for (const shard of saved.finished ?? []) this.finished.add(shard);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'history stream checkpoints unreadable; reading the stream from its beginning');
    }
  }

  private saveCheckpoints(): void {
    const file = this.options.checkpointFile;
    if (!file) return;
    const text = JSON.stringify({ streamArn: this.options.streamArn, shards: Object.fromEntries(this.checkpoints), finished: [...this.finished] });
    if (text === this.lastSaved) return;
    writeFileSync(`${file}.tmp`, text);
    renameSync(`${file}.tmp`, file);
    this.lastSaved = text;
  }

  /** What Lambda sends to an SQS on-failure destination for a DynamoDB stream: batch metadata, not the record. */
  private async sendToOnFailure(shardId: string, record: StreamsRecord, attempts: number): Promise<void> {
    const { onFailure, functionName, streamArn, logger } = this.options;
    const arrival = (record.dynamodb?.ApproximateCreationDateTime ?? new Date()).toISOString();
    const sequenceNumber = record.dynamodb?.SequenceNumber;
    const body = {
      requestContext: {
        requestId: randomUUID(),
        functionArn: lambdaContext(functionName).invokedFunctionArn,
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: attempts,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'BatchItemFailure' },
      version: '1.0',
      timestamp: new Date().toISOString(),
      DDBStreamBatchInfo: {
        shardId,
        startSequenceNumber: sequenceNumber,
        endSequenceNumber: sequenceNumber,
        approximateArrivalOfFirstRecord: arrival,
        approximateArrivalOfLastRecord: arrival,
        batchSize: 1,
        streamArn,
      },
    };
    if (onFailure) await onFailure.client.send(new SendMessageCommand({ QueueUrl: onFailure.queue.url, MessageBody: JSON.stringify(body) }));
    logger.warn({ shardId, sequenceNumber, attempts, destination: onFailure?.queue.name ?? '(none)' }, 'history stream record given up on; sent to the on-failure destination');
  }
}

/** A DynamoDB Streams record as Lambda's event source mapping delivers it (epoch seconds, base64 binaries, the stream ARN). */
export function lambdaDynamoRecord(record: StreamsRecord, streamArn: string): DynamoDBRecord {
  const stream = record.dynamodb ?? {};
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: record.eventVersion,
    eventSource: record.eventSource ?? 'aws:dynamodb',
    awsRegion: record.awsRegion,
    dynamodb: {
      ...(stream.ApproximateCreationDateTime ? { ApproximateCreationDateTime: Math.floor(stream.ApproximateCreationDateTime.getTime() / 1000) } : {}),
      ...(stream.Keys ? { Keys: jsonShaped(stream.Keys) as never } : {}),
      ...(stream.NewImage ? { NewImage: jsonShaped(stream.NewImage) as never } : {}),
      ...(stream.OldImage ? { OldImage: jsonShaped(stream.OldImage) as never } : {}),
      SequenceNumber: stream.SequenceNumber,
      SizeBytes: stream.SizeBytes,
      StreamViewType: stream.StreamViewType,
    },
    eventSourceARN: streamArn,
    ...(record.userIdentity ? { userIdentity: record.userIdentity } : {}),
  };
}

/** The SDK's parsed values back in the JSON Lambda sends: binaries as base64 text. */
function jsonShaped(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(jsonShaped);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonShaped(v)]));
  return value;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
