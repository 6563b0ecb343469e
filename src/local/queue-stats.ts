import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { QueueSendError } from '../adapters/sqs/queue.js';
import type { QueueId } from '../manifest/index.js';
import type { QueueMessage, QueuePort } from '../runtime/deps.js';
import type { LocalSqs } from './emulators.js';

/** One work queue as `GET /local/queues` answers it: what the functions sent to it since start, and what SQS holds now. */
export interface LocalQueueStats {
  readonly name: string;
  /** Messages the functions sent (accepted by SQS), cumulative since start. */
  readonly sent: number;
  readonly visible: number;
  readonly delayed: number;
  readonly in_flight: number;
  /** Messages in its DLQ now. */
  readonly dead_letters: number;
}

/** Counts what the functions send to each queue: a billing day's messages per period are measured from it (DESIGN 13). */
export class QueueSends {
  private readonly sent = new Map<QueueId, number>();

  wrap(id: QueueId, queue: QueuePort): QueuePort {
    const counted: QueuePort = {
      sendBatch: async (messages: readonly QueueMessage[]) => {
        try {
          await queue.sendBatch(messages);
          this.add(id, messages.length);
        } catch (error) {
          // A partial failure names what was not sent: the rest is on the queue.
          if (error instanceof QueueSendError) this.add(id, messages.length - error.unsent.length);
          throw error;
        }
      },
    };
    return queue.depth ? { ...counted, depth: () => queue.depth!() } : counted;
  }

  private add(id: QueueId, count: number): void {
    this.sent.set(id, (this.sent.get(id) ?? 0) + count);
  }

  sentTo(id: QueueId): number {
    return this.sent.get(id) ?? 0;
  }

  /** Every work queue's counts, with SQS's own approximate numbers for it and its DLQ. */
  async stats(sqs: LocalSqs): Promise<Record<string, LocalQueueStats>> {
    const entries = await Promise.all(
      (Object.keys(sqs.queues) as QueueId[]).map(async (id) => {
        const queue = sqs.queues[id];
        const [own, dlq] = await Promise.all([attributes(sqs, queue.url), attributes(sqs, queue.deadLetter.url)]);
        const stats: LocalQueueStats = {
          name: queue.name,
          sent: this.sentTo(id),
          visible: own.ApproximateNumberOfMessages,
          delayed: own.ApproximateNumberOfMessagesDelayed,
          in_flight: own.ApproximateNumberOfMessagesNotVisible,
          dead_letters: dlq.ApproximateNumberOfMessages + dlq.ApproximateNumberOfMessagesNotVisible + dlq.ApproximateNumberOfMessagesDelayed,
        };
        return [id, stats] as const;
      }),
    );
    return Object.fromEntries(entries);
  }
}

const COUNTS = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesDelayed', 'ApproximateNumberOfMessagesNotVisible'] as const;

async function attributes(sqs: LocalSqs, url: string): Promise<Record<(typeof COUNTS)[number], number>> {
  const { Attributes = {} } = await sqs.client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: [...COUNTS] }));
  return Object.fromEntries(COUNTS.map((name) => [name, Number(Attributes[name] ?? 0)])) as Record<(typeof COUNTS)[number], number>;
}
