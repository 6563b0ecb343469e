import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClientCredentialsTokens, parseClientCredentials } from '../../../src/adapters/payments-service/client-credentials.js';
import { HttpAccountDirectory, HttpPaymentsService } from '../../../src/adapters/payments-service/http-clients.js';
import { HttpPaymentsReport } from '../../../src/adapters/payments-service/report.js';
import { ProcessorOutageError, TransientError } from '../../../src/domain/errors.js';
import type { CircuitStore } from '../../../src/domain/ports/circuits.js';
import { CircuitBreaker } from '../../../src/runtime/circuits.js';
import { ACH_PAYMENT_REQUEST } from '../../support/payment-requests.js';

const CLIENT = { client_id: 'billing-test', client_secret: 'not-a-real-secret-7f3a' };

/**
 * A fake of our services' authorization server and API: the token endpoint issues numbered tokens
 * to the one client it knows; the API answers only a token it issued and has not revoked.
 */
class FakeServices {
  issued = 0;
  readonly valid = new Set<string>();
  readonly tokenRequests: { headers: IncomingHttpHeaders; body: string }[] = [];
  readonly apiRequests: { url: string; authorization: string | undefined }[] = [];
  clientRevoked = false;
  expiresIn = 3600;
  tokenStatus: number | undefined;

  handle(url: string, headers: IncomingHttpHeaders, body: string): { status: number; body: unknown } {
    if (url === '/oauth/token') {
      this.tokenRequests.push({ headers, body });
      if (this.tokenStatus) return { status: this.tokenStatus, body: {} };
      const expected = `Basic ${Buffer.from(`${CLIENT.client_id}:${CLIENT.client_secret}`).toString('base64')}`;
      if (this.clientRevoked || headers.authorization !== expected) return { status: 401, body: { error: 'invalid_client' } };
      if (new URLSearchParams(body).get('grant_type') !== 'client_credentials') return { status: 400, body: { error: 'unsupported_grant_type' } };
      const token = `tok-${++this.issued}`;
      this.valid.add(token);
      return { status: 200, body: { access_token: token, token_type: 'Bearer', expires_in: this.expiresIn } };
    }
    this.apiRequests.push({ url, authorization: headers.authorization });
    const token = headers.authorization?.replace(/^Bearer /, '');
    if (!token || !this.valid.has(token)) return { status: 401, body: { error: { code: 'invalid_token' } } };
    if (url.startsWith('/accounts/')) return { status: 200, body: { status: 'active' } };
    if (url.startsWith('/reports/')) return { status: 200, body: { items: [], next: null } };
    if (url.startsWith('/refunds/')) return { status: 404, body: { error: { code: 'not_found' } } };
    return { status: 200, body: { outcome: 'submitted', confirmation_id: 'conf-1' } };
  }

  /** The service forgets every token it issued (a key rotation on its side); the client is still known. */
  revokeTokens(): void {
    this.valid.clear();
  }
}

const request = ACH_PAYMENT_REQUEST;

describe('client-credentials tokens on every call to the payments and accounts services', () => {
  let server: Server;
  let base: string;
  let services: FakeServices;
  let nowMs = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const answer = services.handle(req.url ?? '', req.headers, body);
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    services = new FakeServices();
    nowMs = 1_000_000;
  });

  const tokens = (service = 'payments', credentials = CLIENT) => new ClientCredentialsTokens({ tokenUrl: `${base}/oauth/token`, credentials, service, nowMs: () => nowMs });

  it('fetches a token with HTTP Basic client authentication and sends it as a bearer token', async () => {
    await new HttpPaymentsService(base, tokens()).submit(request);
    expect(services.tokenRequests).toHaveLength(1);
    expect(Object.fromEntries(new URLSearchParams(services.tokenRequests[0]!.body))).toEqual({ grant_type: 'client_credentials' });
    expect(services.tokenRequests[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(services.apiRequests).toEqual([{ url: '/payments', authorization: 'Bearer tok-1' }]);
  });

  it('caches the token across calls and services of one client until shortly before it expires', async () => {
    const shared = tokens();
    const payments = new HttpPaymentsService(base, shared);
    const accounts = new HttpAccountDirectory(base, shared);
    const report = new HttpPaymentsReport(base, shared);
    await payments.submit(request);
    await accounts.getAccount('u1');
    await payments.findRefund({ refund_id: 'rf-1', rail: 'ach' });
    await report.page('ach', '2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z', null);
    expect(services.issued).toBe(1);
    expect(services.apiRequests.map((r) => r.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-1', 'Bearer tok-1']);
    // 3600 s token, renewed 60 s before expiry.
    nowMs += 3_539_000;
    await payments.submit(request);
    expect(services.issued).toBe(1);
    nowMs += 2_000;
    await payments.submit(request);
    expect(services.issued).toBe(2);
    expect(services.apiRequests.at(-1)!.authorization).toBe('Bearer tok-2');
  });

  it('callers waiting at the same time share one token fetch', async () => {
    const payments = new HttpPaymentsService(base, tokens());
    await Promise.all(Array.from({ length: 5 }, (_, i) => payments.submit({ ...request, idempotency_key: `k-${i}` })));
    expect(services.tokenRequests).toHaveLength(1);
  });

  it('a 401 for a token the service no longer honours fetches a new token once and sends the same request again', async () => {
    const payments = new HttpPaymentsService(base, tokens());
    await payments.submit(request);
    services.revokeTokens();
    expect(await payments.submit(request)).toEqual({ outcome: 'submitted', confirmation_id: 'conf-1' });
    expect(services.issued).toBe(2);
    expect(services.apiRequests.map((r) => r.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2']);
  });

  it('a revoked client is our outage on the service it calls: one token try, no retry loop', async () => {
    const payments = new HttpPaymentsService(base, tokens());
    await payments.submit(request);
    services.revokeTokens();
    services.clientRevoked = true;
    const error = await payments.submit(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessorOutageError);
    expect(error).toMatchObject({ service: 'payments', reason: 'processor_auth' });
    expect(services.tokenRequests).toHaveLength(2);
    const accounts = await new HttpAccountDirectory(base, tokens('accounts')).getAccount('u1').catch((e: unknown) => e);
    expect(accounts).toMatchObject({ service: 'accounts', reason: 'processor_auth' });
  });

  it('a wrong client secret is refused at the token endpoint before any payment is sent', async () => {
    const error = await new HttpPaymentsService(base, tokens('payments', { ...CLIENT, client_secret: 'wrong' })).submit(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ service: 'payments', reason: 'processor_auth' });
    expect(services.apiRequests).toEqual([]);
  });

  it('a token endpoint that is down is transient, not an outage of our credentials', async () => {
    services.tokenStatus = 503;
    await expect(new HttpPaymentsService(base, tokens()).submit(request)).rejects.toBeInstanceOf(TransientError);
    await expect(new HttpPaymentsService(base, tokens()).submit(request)).rejects.not.toBeInstanceOf(ProcessorOutageError);
  });

  it('a revoked client opens the payments circuit; a worker then drops its work without calling', async () => {
    const items = new Map<string, number>();
    const store: CircuitStore = {
      openUntil: async (service) => items.get(service),
      open: async (service, untilMs) => void items.set(service, untilMs),
    };
    const circuits = new CircuitBreaker({ store, wallClock: { now: () => new Date(nowMs) }, refreshMs: 0 });
    services.clientRevoked = true;
    const payments = circuits.processor(new HttpPaymentsService(base, tokens()));
    await expect(payments.submit(request)).rejects.toBeInstanceOf(ProcessorOutageError);
    expect(items.get('payments')).toBeGreaterThan(nowMs);
    expect(await circuits.blocks('ach')).toBe(true);
    const before = services.tokenRequests.length + services.apiRequests.length;
    await expect(payments.submit({ ...request, idempotency_key: 'sub-2:1' })).rejects.toMatchObject({ reason: 'circuit_open' });
    expect(services.tokenRequests.length + services.apiRequests.length).toBe(before);
  });

  it('never puts the client secret or a token in an error it raises or a log line of it', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (line: string) => lines.push(line) });
    services.clientRevoked = true;
    const refused = await new HttpPaymentsService(base, tokens()).submit(request).catch((e: unknown) => e);
    services.clientRevoked = false;
    const payments = new HttpPaymentsService(base, tokens());
    await payments.submit(request);
    services.revokeTokens();
    services.clientRevoked = true;
    const after = await payments.submit(request).catch((e: unknown) => e);
    for (const error of [refused, after]) logger.error({ err: error }, 'payment refused');
    const text = lines.join('\n') + JSON.stringify([refused, after], Object.getOwnPropertyNames(refused));
    expect(lines).toHaveLength(2);
    expect(text).not.toContain(CLIENT.client_secret);
    expect(text).not.toContain(Buffer.from(`${CLIENT.client_id}:${CLIENT.client_secret}`).toString('base64'));
    expect(text).not.toContain('tok-1');
  });

  it('reads the secret as JSON client id and secret, and nothing else', () => {
    expect(parseClientCredentials(JSON.stringify(CLIENT))).toEqual(CLIENT);
    for (const bad of ['', 'client:secret', '{"client_id":"a"}', '{"placeholder":"set the real value","random":"x"}']) expect(parseClientCredentials(bad)).toBeUndefined();
  });
});
