import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import type { EventPublisher, PublishOutcome, PublishedEvent } from '../../domain/published-events.js';

/** PutEvents takes at most ten entries, and 256 KiB, per call. */
export const PUT_EVENTS_MAX_ENTRIES = 10;
export const PUT_EVENTS_MAX_BYTES = 256 * 1024;

export interface EventBridgePublisherOptions {
  /** Rounds per entry, counting the first; entries EventBridge reports as failed are put again with backoff. */
  readonly maxAttempts?: number;
  readonly baseDelayMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** An EventBridge client; `endpoint` for the local bus. */
export function createEventBridgeClient(options: { region: string; endpoint?: string | undefined }): EventBridgeClient {
  return new EventBridgeClient({
    region: options.region,
    maxAttempts: 3,
    ...(options.endpoint ? { endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The PutEvents entry of a published event: `Time` is when the change was written. */
export function putEventsEntry(event: PublishedEvent, busName: string): PutEventsRequestEntry {
  return {
    EventBusName: busName,
    Source: event.source,
    DetailType: event['detail-type'],
    Detail: JSON.stringify(event.detail),
    Time: new Date(Date.parse(event.detail.occurred_at)),
  };
}

/** An entry's size as EventBridge counts it toward the request limit. */
export function entrySize(entry: PutEventsRequestEntry): number {
  const bytes = (s: string | undefined) => (s ? Buffer.byteLength(s, 'utf8') : 0);
  return 14 + bytes(entry.Source) + bytes(entry.DetailType) + bytes(entry.Detail) + (entry.Resources ?? []).reduce((n, r) => n + bytes(r), 0);
}

/**
 * EventPublisher over PutEvents to one bus: chunks of at most ten entries (and 256 KiB); the
 * entries EventBridge reports as failed, and every entry of a call that failed as a whole, are put
 * again with exponential backoff and jitter. Answers one outcome per event, in order; never throws
 * for a failed entry.
 */
export class EventBridgePublisher implements EventPublisher {
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
    options: EventBridgePublisherOptions = {},
  ) {
    this.maxAttempts = options.maxAttempts ?? 4;
    this.baseDelayMs = options.baseDelayMs ?? 50;
    this.sleep = options.sleep ?? defaultSleep;
  }

  async publish(events: readonly PublishedEvent[]): Promise<PublishOutcome[]> {
    const entries = events.map((e) => putEventsEntry(e, this.busName));
    const outcomes: PublishOutcome[] = events.map(() => ({ ok: false, code: 'not_sent', message: 'not sent', attempts: 0 }));
    let pending = entries.map((_, i) => i);
    for (let attempt = 1; attempt <= this.maxAttempts && pending.length > 0; attempt++) {
      if (attempt > 1) await this.sleep(this.baseDelayMs * 2 ** (attempt - 2) * (0.5 + Math.random()));
      const failed: number[] = [];
      for (const chunk of chunks(pending, entries)) {
        try {
          const out = await this.client.send(new PutEventsCommand({ Entries: chunk.map((i) => entries[i]!) }));
          const results = out.Entries ?? [];
          chunk.forEach((index, position) => {
            const result = results[position];
            if (result?.EventId && !result.ErrorCode) {
              outcomes[index] = { ok: true, eventBridgeId: result.EventId, attempts: attempt };
            } else {
              outcomes[index] = { ok: false, code: result?.ErrorCode ?? 'no_result', message: result?.ErrorMessage ?? 'PutEvents answered no entry for it', attempts: attempt };
              failed.push(index);
            }
          });
        } catch (error) {
          const name = error instanceof Error ? error.name : 'Error';
          const message = error instanceof Error ? error.message : String(error);
          for (const index of chunk) outcomes[index] = { ok: false, code: name, message, attempts: attempt };
          failed.push(...chunk);
        }
      }
      pending = failed;
    }
    return outcomes;
  }
}

/** Indexes grouped into calls of at most ten entries and 256 KiB. */
function chunks(indexes: readonly number[], entries: readonly PutEventsRequestEntry[]): number[][] {
  const out: number[][] = [];
  let current: number[] = [];
  let size = 0;
  for (const index of indexes) {
    const entrySizeBytes = entrySize(entries[index]!);
    if (current.length > 0 && (current.length === PUT_EVENTS_MAX_ENTRIES || size + entrySizeBytes > PUT_EVENTS_MAX_BYTES)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(index);
    size += entrySizeBytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}
