import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../runtime/logger.js';
import { LOCAL_REGION } from './emulators.js';
import { LOCAL_ACCOUNT } from './lambda-shapes.js';

/**
 * The local EventBridge bus (docs/design.md, events out): a small server that speaks the one call
 * the events-publisher makes, PutEvents (AWS JSON 1.1), so the handler's real EventBridge client
 * runs unchanged. It keeps what it was given, as a rule target would receive it (the EventBridge
 * envelope), lists it for `GET /local/events`, and forwards each event to a webhook URL when one
 * is set (POST JSON; a failure is logged, never fatal).
 */

/** An event as EventBridge delivers it to a target. */
export interface BusEvent {
  readonly version: '0';
  readonly id: string;
  readonly 'detail-type': string;
  readonly source: string;
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: unknown;
}

export interface LocalEventBusOptions {
  readonly busName: string;
  readonly logger: Logger;
  readonly webhookUrl?: string | undefined;
  /** Events kept for listing; the oldest go first beyond it. */
  readonly capacity?: number;
  readonly webhookTimeoutMs?: number;
}

interface PutEntry {
  readonly Source?: unknown;
  readonly DetailType?: unknown;
  readonly Detail?: unknown;
  readonly EventBusName?: unknown;
  readonly Time?: unknown;
  readonly Resources?: unknown;
}

type EntryResult = { EventId: string } | { ErrorCode: string; ErrorMessage: string };

export class LocalEventBus {
  private server: Server | undefined;
  private readonly events: BusEvent[] = [];
  private readonly capacity: number;
  /** Entries to fail on purpose (tests): each takes the next entry put and answers this error code. */
  private readonly injected: string[] = [];
  private forwarding: Promise<void> = Promise.resolve();
  /** Entries per PutEvents call received, in order. */
  readonly calls: number[] = [];
  endpoint = '';

  constructor(private readonly options: LocalEventBusOptions) {
    this.capacity = options.capacity ?? 50_000;
  }

  get busName(): string {
    return this.options.busName;
  }

  get arn(): string {
    return `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:event-bus/${this.options.busName}`;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.endpoint;
  }

  async stop(): Promise<void> {
    await this.forwarding;
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Events as published, oldest first; `userId` keeps those whose detail names that user. */
  list(filter: { userId?: string | undefined; detailType?: string | undefined } = {}): BusEvent[] {
    return this.events.filter((e) => {
      const detail = e.detail as { user_id?: unknown } | null;
      if (filter.userId !== undefined && detail?.user_id !== filter.userId) return false;
      if (filter.detailType !== undefined && e['detail-type'] !== filter.detailType) return false;
      return true;
    });
  }

  /** The next `count` entries put fail with `code` (as EventBridge fails an entry with InternalFailure). */
  failNextEntries(count: number, code = 'InternalFailure'): void {
    for (let i = 0; i < count; i++) this.injected.push(code);
  }

  /** Resolves once every event put so far was forwarded to the webhook (or its forwarding failed). */
  forwarded(): Promise<void> {
    return this.forwarding;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify(body));
    };
    const target = String(req.headers['x-amz-target'] ?? '');
    if (req.method !== 'POST' || target !== 'AWSEvents.PutEvents') {
      reply(400, { __type: 'UnknownOperationException', message: `the local bus answers only AWSEvents.PutEvents, not ${target || req.method}` });
      return;
    }
    let body: { Entries?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { Entries?: unknown };
    } catch {
      reply(400, { __type: 'SerializationException', message: 'the body is not JSON' });
      return;
    }
    const entries = body.Entries;
    if (!Array.isArray(entries) || entries.length < 1 || entries.length > 10) {
      reply(400, { __type: 'ValidationException', message: 'Entries must hold 1 to 10 entries' });
      return;
    }
    this.calls.push(entries.length);
    const results = entries.map((entry: PutEntry) => this.put(entry));
    reply(200, { FailedEntryCount: results.filter((r) => 'ErrorCode' in r).length, Entries: results });
  }

  private put(entry: PutEntry): EntryResult {
    const injected = this.injected.shift();
    if (injected) return { ErrorCode: injected, ErrorMessage: 'failed on purpose by the local bus' };
    const busName = entry.EventBusName ?? 'default';
    if (busName !== this.options.busName && busName !== this.arn) {
      return { ErrorCode: 'ResourceNotFoundException', ErrorMessage: `Event bus ${String(busName)} does not exist.` };
    }
    if (typeof entry.Source !== 'string' || entry.Source === '') return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameter Source is not valid.' };
    if (typeof entry.DetailType !== 'string' || entry.DetailType === '') return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameter DetailType is not valid.' };
    let detail: unknown;
    try {
      detail = JSON.parse(String(entry.Detail));
    } catch {
      return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
    }
    if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
    const time = typeof entry.Time === 'number' ? new Date(entry.Time * 1000) : new Date();
    const event: BusEvent = {
      version: '0',
      id: randomUUID(),
      'detail-type': entry.DetailType,
      source: entry.Source,
      account: LOCAL_ACCOUNT,
      time: time.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      region: LOCAL_REGION,
      resources: Array.isArray(entry.Resources) ? entry.Resources.map(String) : [],
      detail,
    };
    this.events.push(event);
    if (this.events.length > this.capacity) this.events.shift();
    if (this.options.webhookUrl) this.forward(event, this.options.webhookUrl);
    return { EventId: event.id };
  }

  /** One at a time, in publication order, so a receiver sees them as the bus did. */
  private forward(event: BusEvent, url: string): void {
    const { logger } = this.options;
    const timeoutMs = this.options.webhookTimeoutMs ?? 5_000;
    this.forwarding = this.forwarding.then(async () => {
      const detail = event.detail as { event_id?: string };
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(event),
          signal: AbortSignal.timeout(timeoutMs),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (!res.ok) logger.warn({ status: res.status, event_id: detail.event_id, detail_type: event['detail-type'] }, 'events webhook answered an error; the event stays on the local bus');
      } catch (error) {
        logger.warn({ err: error instanceof Error ? error.message : String(error), event_id: detail.event_id, detail_type: event['detail-type'] }, 'events webhook unreachable; the event stays on the local bus');
      }
    });
  }
}
