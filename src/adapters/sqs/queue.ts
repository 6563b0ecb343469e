import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient, type SendMessageBatchRequestEntry } from '@aws-sdk/client-sqs';
import type { QueueMessage, QueuePort } from '../../domain/ports/queue.js';

/** SendMessageBatch takes at most ten entries per call. */
export const SQS_MAX_BATCH = 10;
/** SendMessageBatch calls in flight at once. */
export const SEND_CONCURRENCY = 8;

export class QueueSendError extends Error {
  override readonly name = 'QueueSendError';
  readonly code = 'queue_send_failed';
  constructor(
    message: string,
    /** The caller's message ids that were not sent, with SQS's error code for each. */
    readonly unsent: readonly { readonly id: string; readonly code: string | undefined }[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface SqsQueueOptions {
  /** Attempts per batch, counting the first; unprocessed entries are resent with backoff. */
  readonly maxAttempts?: number;
  readonly baseDelayMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** SendMessageBatch calls in flight at once (default SEND_CONCURRENCY). */
  readonly concurrency?: number;
}

/** An SQS client; `endpoint` for an emulator (its queue URLs name a host that may not resolve). */
export function createSqsClient(options: { region: string; endpoint?: string | undefined }): SQSClient {
  return new SQSClient({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * QueuePort over SendMessageBatch: ten entries per call, a few calls in flight; entries SQS reports as failed are resent
 * (sender faults never are: they fail the same way again) with exponential backoff and jitter;
 * anything still unsent raises QueueSendError naming it.
 */
export class SqsQueue implements QueuePort {
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly concurrency: number;

  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    options: SqsQueueOptions = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? 4;
    this.baseDelayMs = options.baseDelayMs ?? 50;
    this.sleep = options.sleep ?? defaultSleep;
    this.concurrency = options.concurrency ?? SEND_CONCURRENCY;
  }

  async sendBatch(messages: readonly QueueMessage[]): Promise<void> {
    const ids = new Set<string>();
    for (const m of messages) {
      if (ids.has(m.id)) throw new QueueSendError(`duplicate message id ${m.id} in one send`, [{ id: m.id, code: 'duplicate_id' }]);
      ids.add(m.id);
    }
    const chunks: QueueMessage[][] = [];
    for (let i = 0; i < messages.length; i += SQS_MAX_BATCH) chunks.push(messages.slice(i, i + SQS_MAX_BATCH));
    // A few calls in flight (a run of thousands of messages is hundreds of calls); order does not matter on a standard queue.
    const unsent: { id: string; code: string | undefined }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(this.concurrency, chunks.length) }, async () => {
        for (let c = next++; c < chunks.length; c = next++) unsent.push(...(await this.sendChunk(chunks[c]!)));
      }),
    );
    if (unsent.length > 0) {
      throw new QueueSendError(`${unsent.length} of ${messages.length} messages could not be sent`, unsent);
    }
  }

  async depth(): Promise<number> {
    const out = await this.client.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesDelayed', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const a = out.Attributes ?? {};
    return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesDelayed ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0);
  }

  /** One chunk of at most ten; answers the entries that could not be sent. */
  private async sendChunk(chunk: readonly QueueMessage[]): Promise<{ id: string; code: string | undefined }[]> {
    // Entry ids are positional: SQS restricts their characters, the caller's ids are free-form.
    let pending = chunk.map((message, index) => ({ entryId: `m${index}`, message }));
    const permanent: { id: string; code: string | undefined }[] = [];
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      const entries: SendMessageBatchRequestEntry[] = pending.map((p) => ({
        Id: p.entryId,
        MessageBody: p.message.body,
        ...(p.message.delaySeconds ? { DelaySeconds: p.message.delaySeconds } : {}),
      }));
      const result = await this.client.send(new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: entries }));
      const failed = new Map((result.Failed ?? []).map((f) => [f.Id, f]));
      const retryable = pending.filter((p) => {
        const failure = failed.get(p.entryId);
        if (!failure) return false;
        if (failure.SenderFault) {
          permanent.push({ id: p.message.id, code: failure.Code });
          return false;
        }
        return true;
      });
      if (retryable.length === 0) break;
      if (attempt >= this.maxAttempts) {
        permanent.push(...retryable.map((p) => ({ id: p.message.id, code: failed.get(p.entryId)?.Code })));
        break;
      }
      const backoff = this.baseDelayMs * 2 ** (attempt - 1);
      await this.sleep(backoff / 2 + Math.random() * (backoff / 2));
      pending = retryable;
    }
    return permanent;
  }
}
