import { randomUUID } from 'node:crypto';
import type { Context, KinesisStreamBatchResponse, KinesisStreamEvent } from 'aws-lambda';
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListShardsCommand,
  type KinesisClient,
  type _Record as KinesisRecord,
} from '@aws-sdk/client-kinesis';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '../runtime/logger.js';
import type { LocalQueue } from './emulators.js';
import { firstFailedIndex, streamBatchOutcome, type StreamRetry } from './stream-batch.js';
import { kinesisRecord, lambdaContext, type FunctionName } from './lambda-shapes.js';

export type KinesisHandler = (event: KinesisStreamEvent, context?: Context) => Promise<KinesisStreamBatchResponse | void>;

export interface KinesisSettlement {
  readonly shardId: string;
  readonly sequenceNumber: string;
  /** applied: the handler took it; failed: retries exhausted, sent to the on-failure queue. */
  readonly status: 'applied' | 'failed';
  readonly attempts: number;
}

export interface KinesisEventSourceOptions {
  readonly client: KinesisClient;
  readonly streamName: string;
  readonly streamArn: string;
  readonly functionName: FunctionName;
  readonly handler: KinesisHandler;
  readonly logger: Logger;
  readonly onFailure: { readonly client: SQSClient; readonly queue: LocalQueue };
  readonly batchSize?: number;
  /** Retries of a failing record before it goes to the on-failure queue. */
  readonly retryAttempts?: number;
  readonly idleMs?: number;
}

/**
 * Lambda's Kinesis event source mapping, locally: one poller per shard, in order, with the batch
 * rule of stream-batch.ts (a poison record goes to the on-failure queue and never blocks its shard).
 */
export class KinesisEventSource {
  private running = false;
  private loops: Promise<void>[] = [];
  private shardCount = 0;
  private readyShards = new Set<string>();
  private readonly settled = new Map<string, KinesisSettlement>();
  private readonly waiters = new Map<string, (s: KinesisSettlement) => void>();

  constructor(private readonly options: KinesisEventSourceOptions) {}

  get isReady(): boolean {
    return this.shardCount > 0 && this.readyShards.size === this.shardCount;
  }

  async start(): Promise<void> {
    const { client, streamName } = this.options;
    const { Shards = [] } = await client.send(new ListShardsCommand({ StreamName: streamName }));
    this.running = true;
    this.shardCount = Shards.length;
    this.loops = Shards.map((s) => this.pollShard(s.ShardId!));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Resolves once the record with this sequence number was applied or given up on. */
  waitFor(sequenceNumber: string, timeoutMs = 30_000): Promise<KinesisSettlement | undefined> {
    const done = this.settled.get(sequenceNumber);
    if (done) return Promise.resolve(done);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(sequenceNumber);
        resolve(undefined);
      }, timeoutMs);
      this.waiters.set(sequenceNumber, (s) => {
        clearTimeout(timer);
        resolve(s);
      });
    });
  }

  private settle(settlement: KinesisSettlement): void {
    this.settled.set(settlement.sequenceNumber, settlement);
    if (this.settled.size > 5_000) this.settled.delete(this.settled.keys().next().value!);
    const waiter = this.waiters.get(settlement.sequenceNumber);
    if (waiter) {
      this.waiters.delete(settlement.sequenceNumber);
      waiter(settlement);
    }
  }

  private async iterator(shardId: string, type: 'TRIM_HORIZON' | 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER', sequenceNumber?: string): Promise<string> {
    const out = await this.options.client.send(
      new GetShardIteratorCommand({
        StreamName: this.options.streamName,
        ShardId: shardId,
        ShardIteratorType: type,
        ...(sequenceNumber ? { StartingSequenceNumber: sequenceNumber } : {}),
      }),
    );
    return out.ShardIterator!;
  }

  private async pollShard(shardId: string): Promise<void> {
    const { client, logger } = this.options;
    const idleMs = this.options.idleMs ?? 100;
    const retryAttempts = this.options.retryAttempts ?? 3;
    let iterator: string | undefined;
    let retry: StreamRetry | undefined;
    /** Last sequence number done with (applied or given up on): where a lost iterator resumes. */
    let checkpoint: string | undefined;
    const resume = () =>
      retry
        ? this.iterator(shardId, 'AT_SEQUENCE_NUMBER', retry.sequenceNumber)
        : checkpoint
          ? this.iterator(shardId, 'AFTER_SEQUENCE_NUMBER', checkpoint)
          : this.iterator(shardId, 'TRIM_HORIZON');
    while (this.running) {
      try {
        iterator ??= await resume();
        const out = await client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: retry ? 1 : (this.options.batchSize ?? 100) }));
        this.readyShards.add(shardId);
        const records = out.Records ?? [];
        if (records.length === 0) {
          iterator = out.NextShardIterator;
          await sleep(idleMs);
          continue;
        }
        const failedAt = await this.invoke(shardId, records);
        const outcome = streamBatchOutcome(records.map((r) => r.SequenceNumber!), failedAt, retry, retryAttempts);
        for (const p of outcome.processed) this.settle({ shardId, sequenceNumber: p.sequenceNumber, status: 'applied', attempts: p.attempts });
        if (outcome.processedThrough !== undefined) checkpoint = outcome.processedThrough;
        retry = outcome.retry;
        if (failedAt === undefined) {
          iterator = out.NextShardIterator;
          continue;
        }
        if (outcome.givenUp) {
          await this.sendToOnFailure(shardId, records[outcome.givenUp.index]!, outcome.givenUp.attempts);
          this.settle({ shardId, sequenceNumber: outcome.givenUp.sequenceNumber, status: 'failed', attempts: outcome.givenUp.attempts });
          checkpoint = outcome.givenUp.sequenceNumber;
        } else {
          await sleep(Math.min(100 * 2 ** (outcome.retry!.attempts - 1), 2_000));
        }
        iterator = await resume();
      } catch (error) {
        if (!this.running) break;
        logger.warn({ err: error, shardId }, 'kinesis poll failed; retrying');
        iterator = undefined;
        await sleep(500);
      }
    }
  }

  /** Index of the first record to retry from, or undefined when the whole batch succeeded. */
  private async invoke(shardId: string, records: KinesisRecord[]): Promise<number | undefined> {
    const { functionName, handler, logger, streamArn } = this.options;
    const requestId = randomUUID();
    const event: KinesisStreamEvent = { Records: records.map((r) => kinesisRecord(r, shardId, streamArn, functionName)) };
    try {
      const response = await handler(event, lambdaContext(functionName, requestId));
      const failures = (response ?? { batchItemFailures: [] }).batchItemFailures ?? [];
      const failedAt = firstFailedIndex(failures, records.map((r) => r.SequenceNumber ?? ''));
      if (failedAt === undefined) return undefined;
      logger.info({ function: functionName, requestId, shardId, failed: failures.length, batch: records.length }, 'batch item failure; resuming from the first failed record');
      return failedAt;
    } catch (error) {
      logger.error({ err: error, function: functionName, requestId, shardId }, 'invocation failed; retrying the batch');
      return 0;
    }
  }

  /** What Lambda sends to an SQS on-failure destination: batch metadata, not the record itself. */
  private async sendToOnFailure(shardId: string, record: KinesisRecord, attempts: number): Promise<void> {
    const { onFailure, functionName, streamArn, logger } = this.options;
    const arrival = (record.ApproximateArrivalTimestamp ?? new Date()).toISOString();
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
      KinesisBatchInfo: {
        shardId,
        startSequenceNumber: record.SequenceNumber,
        endSequenceNumber: record.SequenceNumber,
        approximateArrivalOfFirstRecord: arrival,
        approximateArrivalOfLastRecord: arrival,
        batchSize: 1,
        streamArn,
      },
    };
    await onFailure.client.send(new SendMessageCommand({ QueueUrl: onFailure.queue.url, MessageBody: JSON.stringify(body) }));
    logger.warn({ shardId, sequenceNumber: record.SequenceNumber, attempts, destination: onFailure.queue.name }, 'record given up on; sent to the on-failure queue');
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
