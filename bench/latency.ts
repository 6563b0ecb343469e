import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import autocannon from 'autocannon';
import { primaryKey } from '../src/adapters/dynamodb/billing-item.js';
import { createApiHandler } from '../src/handlers/api.js';
import { createBenchApp, dueRecord, seed } from './app.js';
import { apiEvent } from './lambda-events.js';

/**
 * Section 4: API latency under load, loopback only. A tiny node:http adapter turns each request
 * into an HTTP API v2 event for the api handler (with every scope, as the JWT authorizer would);
 * `/raw/{n}` on the same server answers one raw GetItem of a seeded record, so both sides pay
 * the same HTTP cost and the difference is our code.
 */

export interface LatencyFigure {
  readonly name: string;
  readonly connections: number;
  readonly durationS: number;
  readonly requests: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly non2xx: number;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function measureLatency(endpoint: string, options: { connections: number; durationS: number }): Promise<LatencyFigure[]> {
  const app = await createBenchApp(endpoint, 'latency');
  const records = Array.from({ length: 4000 }, () => dueRecord(app.clock.now()));
  await seed(app, records);
  app.meter.pause(true);
  const api = createApiHandler(app.depsFor('api'));
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname.startsWith('/raw/')) {
      const record = records[Number(url.pathname.slice(5)) % records.length]!;
      const out = await app.client.send(new GetItemCommand({ TableName: app.tables.billingActivity, Key: primaryKey(record), ConsistentRead: true }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ found: out.Item !== undefined }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    const body = await readBody(req);
    const result = await api(apiEvent(req.method ?? 'GET', url.pathname, headers, body === '' ? undefined : body));
    res.writeHead(result.statusCode ?? 500, (result.headers ?? {}) as Record<string, string>).end(result.body ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let read = 0;
  let pay = 0;
  let raw = 0;
  const scenarios: { name: string; request: () => { method: 'GET' | 'POST'; path: string; headers?: Record<string, string> } }[] = [
    { name: 'raw GetItem (same HTTP adapter)', request: () => ({ method: 'GET', path: `/raw/${raw++}` }) },
    { name: 'GET /v1/subscriptions/{id}', request: () => ({ method: 'GET', path: `/v1/subscriptions/${records[read++ % records.length]!.subscription_id}` }) },
    {
      name: 'POST /v1/subscriptions/{id}/pay',
      request: () => ({ method: 'POST', path: `/v1/subscriptions/${records[pay++ % records.length]!.subscription_id}/pay`, headers: { 'idempotency-key': randomUUID() } }),
    },
  ];
  const figures: LatencyFigure[] = [];
  for (const scenario of scenarios) {
    const result = await autocannon({
      url: base,
      connections: options.connections,
      duration: options.durationS,
      requests: [{ setupRequest: (req) => ({ ...req, ...scenario.request() }) }],
    });
    figures.push({
      name: scenario.name,
      connections: options.connections,
      durationS: options.durationS,
      requests: result.requests.total,
      rps: Math.round(result.requests.average),
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
    });
  }
  await new Promise<void>((r) => server.close(() => r()));
  app.client.destroy();
  return figures;
}
