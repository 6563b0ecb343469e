import { Writable } from 'node:stream';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../src/handlers/api.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { httpEvent, responseOf } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord } from './api-fixtures.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'api-logging' });
});

function capturingHandler(): { handler: ReturnType<typeof createApiHandler>; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = pino({ level: 'info' }, stream);
  const handler = createApiHandler({ ...app.depsFor('api'), logger });
  return { handler, lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('api logging', () => {
  it('logs one line per request with request id, user and subscription, and never the body or token', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { account_last_four: '9876' }));
    const { handler, lines } = capturingHandler();
    const event = httpEvent('POST', {
      route: '/v1/subscriptions/{subscriptionId}/pay',
      pathParameters: { subscriptionId: record.subscription_id },
      headers: { 'idempotency-key': 'idem-key-zq7', authorization: 'Bearer secret-token-value' },
      body: { reason: 'very private reason text' },
      requestId: 'req-log-1',
    });
    const res = responseOf(await handler(event));
    expect(res.status).toBe(200);
    const logged = lines();
    const summary = logged.find((l) => l.msg === 'api request');
    expect(summary).toMatchObject({
      request_id: 'req-log-1',
      user_id: record.user_id,
      subscription_id: record.subscription_id,
      route: 'POST /v1/subscriptions/{subscriptionId}/pay',
      status: 200,
    });
    const text = JSON.stringify(logged);
    expect(text).not.toContain('very private reason text');
    expect(text).not.toContain('secret-token-value');
    expect(text).not.toContain('idem-key-zq7');
  });
});
