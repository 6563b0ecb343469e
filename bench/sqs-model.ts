import { randomUUID } from 'node:crypto';
import type { QueueMessage, QueuePort } from '../src/runtime/deps.js';

/**
 * An SQS standard queue in memory, on wall time, with the behaviour billing day depends on:
 * DelaySeconds, a visibility timeout, redrive to a DLQ after `maxReceiveCount` receives, and the
 * depth the planner reads (visible + delayed + in flight, as `ApproximateNumberOf*`). It counts the
 * requests SQS bills: SendMessageBatch, ReceiveMessage (empty polls apart), DeleteMessageBatch and
 * GetQueueAttributes; a reported failure is left to its visibility timeout, as Lambda leaves it.
 */
export interface SqsRequestCounts {
  sendBatch: number;
  receive: number;
  emptyReceive: number;
  deleteBatch: number;
  getAttributes: number;
}

interface Stored {
  readonly messageId: string;
  readonly body: string;
  visibleAt: number;
  receives: number;
}

export interface Received {
  readonly messageId: string;
  readonly body: string;
}

export class SqsModel implements QueuePort {
  private readonly messages = new Map<string, Stored>();
  readonly deadLetters: Stored[] = [];
  readonly requests: SqsRequestCounts = { sendBatch: 0, receive: 0, emptyReceive: 0, deleteBatch: 0, getAttributes: 0 };
  sent = 0;

  constructor(
    private readonly options: { readonly visibilityTimeoutS: number; readonly maxReceiveCount: number; readonly nowMs?: () => number },
  ) {}

  private now(): number {
    return (this.options.nowMs ?? Date.now)();
  }

  async sendBatch(messages: readonly QueueMessage[]): Promise<void> {
    const now = this.now();
    for (let i = 0; i < messages.length; i += 10) {
      this.requests.sendBatch += 1;
      for (const m of messages.slice(i, i + 10)) {
        const messageId = randomUUID();
        this.messages.set(messageId, { messageId, body: m.body, visibleAt: now + (m.delaySeconds ?? 0) * 1000, receives: 0 });
        this.sent += 1;
      }
    }
  }

  async depth(): Promise<number> {
    this.requests.getAttributes += 1;
    return this.messages.size;
  }

  /** Up to `max` visible messages, hidden for the visibility timeout; one past its last receive goes to the DLQ instead. */
  receive(max: number): Received[] {
    const now = this.now();
    const out: Received[] = [];
    for (const m of this.messages.values()) {
      if (out.length >= max) break;
      if (m.visibleAt > now) continue;
      if (m.receives >= this.options.maxReceiveCount) {
        this.messages.delete(m.messageId);
        this.deadLetters.push(m);
        continue;
      }
      m.receives += 1;
      m.visibleAt = now + this.options.visibilityTimeoutS * 1000;
      out.push({ messageId: m.messageId, body: m.body });
    }
    if (out.length > 0) this.requests.receive += 1;
    else this.requests.emptyReceive += 1;
    return out;
  }

  /** The handler's successes; the reported failures stay hidden until their visibility timeout ends. */
  delete(messageIds: readonly string[]): void {
    if (messageIds.length > 0) this.requests.deleteBatch += Math.ceil(messageIds.length / 10);
    for (const id of messageIds) this.messages.delete(id);
  }

  /** Messages still in the queue (visible, delayed or in flight). */
  get size(): number {
    return this.messages.size;
  }
}
