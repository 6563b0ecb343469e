import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import type { Logger } from '../runtime/logger.js';
import type { LocalQueue } from './emulators.js';
import { lambdaContext, sqsRecord, type FunctionName } from './lambda-shapes.js';

/** How often the batching window polls for more messages. */
const GATHER_POLL_MS = 50;

export type SqsHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse | void>;

export interface SqsDelivery {
  readonly record: SQSRecord;
  /** False when the handler reported the record (or threw): it stays for redelivery, then the DLQ. */
  readonly succeeded: boolean;
}

export interface SqsEventSourceOptions {
  readonly client: SQSClient;
  readonly queue: LocalQueue;
  readonly functionName: FunctionName;
  readonly handler: SqsHandler;
  readonly logger: Logger;
  readonly batchSize?: number;
  readonly waitTimeSeconds?: number;
  /** Lambda's batching window: after the first message, gather this long for a full batch (0: invoke with what one poll returns). */
  readonly maxBatchingWindowMs?: number;
  /** Invocations at once (the event source's `maximumConcurrency`): that many pollers. Default 1. */
  readonly concurrency?: number;
  /** Runs around each invocation (the runtime uses it to attribute writes to a collections run). */
  readonly around?: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly onDelivered?: (deliveries: readonly SqsDelivery[]) => void;
}

/**
 * Lambda's SQS event source mapping, locally: long-polls the queue, invokes the handler with up to
 * `batchSize` real-shaped records and deletes only the ones it did not report in
 * `batchItemFailures` (ReportBatchItemFailures). Failed records become visible again after the
 * queue's visibility timeout and move to its DLQ through the queue's own redrive policy. A
 * handler that throws, or reports an id that is not in the batch, fails the whole batch, as in Lambda.
 */
export class SqsEventSource {
  private running = false;
  private loops: Promise<void>[] = [];
  private abort = new AbortController();
  private ready = false;

  constructor(private readonly options: SqsEventSourceOptions) {}

  get isReady(): boolean {
    return this.ready;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.abort = new AbortController();
    this.loops = Array.from({ length: Math.max(1, this.options.concurrency ?? 1) }, () => this.run());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async run(): Promise<void> {
    const { client, queue, logger } = this.options;
    let backoffMs = 100;
    while (this.running) {
      try {
        const out = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queue.url,
            MaxNumberOfMessages: this.options.batchSize ?? 10,
            // The first poll is short so that readiness does not wait out a long poll.
            WaitTimeSeconds: this.ready ? (this.options.waitTimeSeconds ?? 2) : 0,
            MessageSystemAttributeNames: ['All'],
          }),
          { abortSignal: this.abort.signal },
        );
        this.ready = true;
        backoffMs = 100;
        const messages = out.Messages ?? [];
        if (messages.length > 0) await this.deliver((await this.gather(messages)).map((m) => sqsRecord(m, queue.arn)));
      } catch (error) {
        if (!this.running) break;
        logger.warn({ err: error, queue: queue.name }, 'sqs poll failed; retrying');
        await new Promise((r) => setTimeout(r, backoffMs));
        backoffMs = Math.min(backoffMs * 2, 5_000);
      }
    }
  }

  /**
   * The batching window: short polls until the batch is full or the window since the first message
   * has passed. Locally it is skipped when nothing is delayed on the queue (no paced message can
   * come due), so an on-demand run is not slowed. Not aborted on stop: what was received is
   * delivered rather than left invisible.
   */
  private async gather(first: Message[]): Promise<Message[]> {
    const { client, queue } = this.options;
    const size = this.options.batchSize ?? 10;
    const windowMs = this.options.maxBatchingWindowMs ?? 0;
    const batch = [...first];
    if (batch.length >= size || windowMs <= 0 || !(await this.holdsDelayed())) return batch;
    const until = Date.now() + windowMs;
    while (batch.length < size && Date.now() < until && this.running) {
      const out = await client.send(new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: size - batch.length, WaitTimeSeconds: 0, MessageSystemAttributeNames: ['All'] }));
      if (out.Messages && out.Messages.length > 0) batch.push(...out.Messages);
      else await new Promise((r) => setTimeout(r, Math.min(GATHER_POLL_MS, Math.max(0, until - Date.now()))));
    }
    // A visibility timeout shorter than the window hands a message out twice: once in the batch, with its latest receipt.
    return [...new Map(batch.map((m) => [m.MessageId, m])).values()];
  }

  private async holdsDelayed(): Promise<boolean> {
    const { client, queue } = this.options;
    const out = await client.send(new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['ApproximateNumberOfMessagesDelayed'] }));
    return Number(out.Attributes?.ApproximateNumberOfMessagesDelayed ?? 0) > 0;
  }

  /** One invocation; exported for the runtime's own use and tests. */
  async deliver(records: SQSRecord[]): Promise<readonly SqsDelivery[]> {
    const { client, queue, logger, functionName, handler } = this.options;
    const requestId = randomUUID();
    const event: SQSEvent = { Records: records };
    let failedIds: Set<string>;
    try {
      const invoke = () => handler(event, lambdaContext(functionName, requestId));
      const response = this.options.around ? await this.options.around(invoke) : await invoke();
      const reported = (response ?? { batchItemFailures: [] }).batchItemFailures ?? [];
      const known = new Set(records.map((r) => r.messageId));
      failedIds = new Set(reported.map((f) => f.itemIdentifier));
      if ([...failedIds].some((id) => !id || !known.has(id))) {
        logger.error({ function: functionName, requestId }, 'batchItemFailures names a message that is not in the batch; the whole batch fails');
        failedIds = known;
      }
    } catch (error) {
      logger.error({ err: error, function: functionName, requestId }, 'invocation failed; the whole batch returns to the queue');
      failedIds = new Set(records.map((r) => r.messageId));
    }
    const succeeded = records.filter((r) => !failedIds.has(r.messageId));
    for (let i = 0; i < succeeded.length; i += 10) {
      const chunk = succeeded.slice(i, i + 10);
      const out = await client.send(
        new DeleteMessageBatchCommand({ QueueUrl: queue.url, Entries: chunk.map((r, n) => ({ Id: String(n), ReceiptHandle: r.receiptHandle })) }),
      );
      if (out.Failed && out.Failed.length > 0) logger.warn({ queue: queue.name, failed: out.Failed.length }, 'some deletes failed; those messages will be redelivered');
    }
    if (failedIds.size > 0) {
      logger.info({ function: functionName, requestId, failed: failedIds.size, batch: records.length }, 'batch item failures left for redelivery');
    }
    const deliveries = records.map((record) => ({ record, succeeded: !failedIds.has(record.messageId) }));
    this.options.onDelivered?.(deliveries);
    return deliveries;
  }
}
