import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpAccountDirectory, HttpPaymentsService, RailRouter } from '../../../src/adapters/payments-service/http-clients.js';
import { ProcessorError, ProcessorOutageError, ProcessorThrottledError, TransientError } from '../../../src/domain/errors.js';
import { classifyFailure } from '../../../src/domain/ladder.js';
import type { ServiceCredentials } from '../../../src/adapters/payments-service/client-credentials.js';
import { ACH_PAYMENT_REQUEST } from '../../support/payment-requests.js';

/** A token the fake server does not check: these tests are about the answers. */
const bearer: ServiceCredentials = { authorization: async () => 'Bearer test-token', refused: () => undefined };

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('payments and accounts service clients against a local HTTP server', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  let answer: { status: number; body: string } = { status: 200, body: '{}' };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const request = ACH_PAYMENT_REQUEST;

  it('posts the payment with its Idempotency-Key and reads a submitted answer', async () => {
    answer = { status: 200, body: JSON.stringify({ outcome: 'submitted', confirmation_id: 'conf-1' }) };
    const result = await new HttpPaymentsService(base, bearer).submit(request);
    expect(result).toEqual({ outcome: 'submitted', confirmation_id: 'conf-1' });
    const last = seen.at(-1)!;
    expect(last.method).toBe('POST');
    expect(last.url).toBe('/payments');
    expect(last.headers['idempotency-key']).toBe('sub-1:1');
    expect(JSON.parse(last.body)).toMatchObject({ amount_cents: 1999, rail: 'ach' });
  });

  it('passes a re-presented entry\'s NACHA flags (reinitiated, RETRY PYMT) to the payments service', async () => {
    answer = { status: 200, body: JSON.stringify({ outcome: 'submitted', confirmation_id: 'conf-2' }) };
    await new HttpPaymentsService(base, bearer).submit({ ...request, idempotency_key: 'sub-1:2', reinitiated: true, entry_description: 'RETRY PYMT' });
    expect(JSON.parse(seen.at(-1)!.body)).toMatchObject({ idempotency_key: 'sub-1:2', reinitiated: true, entry_description: 'RETRY PYMT' });
    await new HttpPaymentsService(base, bearer).submit(request);
    const original = JSON.parse(seen.at(-1)!.body);
    expect(original.reinitiated).toBeUndefined();
    expect(original.entry_description).toBeUndefined();
  });

  it('reads a decline as a value, not an error', async () => {
    answer = { status: 200, body: JSON.stringify({ outcome: 'declined', decline_code: 'nsf', message: 'The payment was declined by the bank.' }) };
    expect(await new HttpPaymentsService(base, bearer).submit(request)).toMatchObject({ outcome: 'declined', decline_code: 'nsf' });
  });

  it("passes a pinless decline's codes and the card's network to dunning", async () => {
    answer = {
      status: 200,
      body: JSON.stringify({ outcome: 'declined', decline_code: 'stolen_card', network_decline_code: '43', card_brand: 'Visa', message: 'The payment was declined by the bank.' }),
    };
    expect(await new HttpPaymentsService(base, bearer).submit(request)).toEqual({
      outcome: 'declined',
      decline_code: 'stolen_card',
      network_decline_code: '43',
      card_network: 'visa',
      message: 'The payment was declined by the bank.',
    });
  });

  it('maps its 429 to ProcessorThrottledError of the payments processor (not a counted failure)', async () => {
    answer = { status: 429, body: '{"error":"rate_limited"}' };
    const error = await new HttpPaymentsService(base, bearer).submit(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessorThrottledError);
    expect(error).toMatchObject({ processor: 'payments' });
    expect(classifyFailure(error)).toBe('throttled');
  });

  it('treats 5xx as transient, other 4xx and malformed answers as counted processor errors', async () => {
    const service = new HttpPaymentsService(base, bearer);
    answer = { status: 503, body: '{}' };
    await expect(service.submit(request)).rejects.toBeInstanceOf(TransientError);
    answer = { status: 503, body: '{}' };
    await expect(service.submit(request)).rejects.not.toBeInstanceOf(ProcessorThrottledError);
    answer = { status: 400, body: '{}' };
    await expect(service.submit(request)).rejects.toBeInstanceOf(ProcessorError);
    answer = { status: 200, body: '{"outcome":"maybe"}' };
    await expect(service.submit(request)).rejects.toBeInstanceOf(ProcessorError);
  });

  it('classifies a refusal of our credentials by its error code as our outage, on the service that refused', async () => {
    const service = new HttpPaymentsService(base, bearer);
    const outage = async (status: number, body: unknown, call: () => Promise<unknown> = () => service.submit(request)) => {
      answer = { status, body: JSON.stringify(body) };
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error, `${status} ${JSON.stringify(body)}`).toBeInstanceOf(ProcessorOutageError);
      return error as ProcessorOutageError;
    };
    expect(await outage(401, { error: { code: 'invalid_token' } })).toMatchObject({ service: 'payments', reason: 'processor_auth' });
    expect(await outage(401, { message: 'Unauthorized' })).toMatchObject({ service: 'payments' });
    expect(await outage(403, { error: { code: 'client_not_allowed' } })).toMatchObject({ service: 'payments' });
    expect(await outage(400, { error: { code: 'invalid_client' } })).toMatchObject({ service: 'payments' });
    const directory = new HttpAccountDirectory(base, bearer);
    expect(await outage(401, { error: { code: 'token_expired' } }, () => directory.getAccount('u1'))).toMatchObject({ service: 'accounts' });
  });

  it('a 403 without a credential code is the request refused (counted), not our outage', async () => {
    const service = new HttpPaymentsService(base, bearer);
    for (const body of [{ error: { code: 'account_frozen' } }, {}, 'not json']) {
      answer = { status: 403, body: typeof body === 'string' ? body : JSON.stringify(body) };
      const error = await service.submit(request).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(ProcessorError);
      expect(error).toMatchObject({ code: 'processor_rejected' });
    }
  });

  it('treats an unreachable service as transient', async () => {
    await expect(new HttpPaymentsService('http://127.0.0.1:1', bearer).submit(request)).rejects.toBeInstanceOf(TransientError);
  });

  it('reads an account snapshot and refuses an unknown status', async () => {
    const directory = new HttpAccountDirectory(base, bearer);
    answer = { status: 200, body: JSON.stringify({ status: 'active', available_balance_cents: 5000 }) };
    expect(await directory.getAccount('u/1')).toEqual({ status: 'active', available_balance_cents: 5000 });
    expect(seen.at(-1)!.url).toBe('/accounts/u%2F1');
    answer = { status: 200, body: JSON.stringify({ status: 'frozen' }) };
    await expect(directory.getAccount('u1')).rejects.toBeInstanceOf(ProcessorError);
  });

  it('routes each rail to its processor', async () => {
    const calls: string[] = [];
    const named = (name: string) => ({ submit: async () => (calls.push(name), { outcome: 'approved' as const, confirmation_id: name }) });
    const router = new RailRouter({ ach: named('ach'), pinless: named('pinless'), card: named('card') });
    await router.submit({ ...request, rail: 'card' });
    await router.submit({ ...request, rail: 'pinless' });
    expect(calls).toEqual(['card', 'pinless']);
  });

  it('looks a refund up by id: its answer read through the schema, 404 as unknown, a bad answer refused', async () => {
    const service = new HttpPaymentsService(base, bearer);
    answer = { status: 200, body: JSON.stringify({ refund_id: 'rf/1', transaction_id: 'conf-1', amount_cents: 1200, status: 'succeeded' }) };
    expect(await service.findRefund({ refund_id: 'rf/1', rail: 'ach' })).toEqual({ refund_id: 'rf/1', transaction_id: 'conf-1', amount_cents: 1200, status: 'succeeded' });
    expect(seen.at(-1)).toMatchObject({ method: 'GET', url: '/refunds/rf%2F1' });
    answer = { status: 404, body: JSON.stringify({ error: 'not found' }) };
    expect(await service.findRefund({ refund_id: 'rf-2', rail: 'ach' })).toBeUndefined();
    answer = { status: 200, body: JSON.stringify({ refund_id: 'rf-3', amount_cents: 1200 }) };
    await expect(service.findRefund({ refund_id: 'rf-3', rail: 'ach' })).rejects.toBeInstanceOf(ProcessorError);
    answer = { status: 503, body: '{}' };
    await expect(service.findRefund({ refund_id: 'rf-4', rail: 'ach' })).rejects.toBeInstanceOf(TransientError);
  });

  it("routes a refund lookup to its rail's processor", async () => {
    const looked: string[] = [];
    const named = (name: string) => ({
      submit: async () => ({ outcome: 'approved' as const, confirmation_id: name }),
      findRefund: async () => (looked.push(name), undefined),
    });
    await new RailRouter({ ach: named('ach'), pinless: named('pinless'), card: named('card') }).findRefund({ refund_id: 're_1', rail: 'card' });
    expect(looked).toEqual(['card']);
  });
});
