import { Agent, request } from 'node:http';
import type { Socket } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { LocalGateway, matchRoute } from '../../src/local/gateway.js';
import { createLogger } from '../../src/runtime/logger.js';

function gateway(options: { maxBodyBytes?: number } = {}) {
  const events: APIGatewayProxyEventV2[] = [];
  const gw = new LocalGateway({
    ...options,
    apiToken: 'tok',
    operatorSub: 'local-operator',
    logger: createLogger({ level: 'silent' }),
    control: async () => undefined,
    handlers: {
      api: async (event) => {
        events.push(event);
        return { statusCode: 200, headers: { 'X-Thing': '1' }, body: '{"ok":true}' };
      },
      'ach-handler': async (event) => {
        events.push(event);
        return { statusCode: 200, body: '{}' };
      },
    },
  });
  return { gw, events };
}

describe('local API gateway', () => {
  it('matches the HTTP API route templates and fills pathParameters', () => {
    const m = matchRoute('GET', '/v1/users/u%201/loans/l-2/payments/p-3');
    expect(m).toMatchObject({ route: { routeKey: 'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}' }, pathParameters: { userId: 'u 1', loanId: 'l-2', paymentId: 'p-3' } });
    expect(matchRoute('GET', '/v1/nothing')).toBeUndefined();
    expect(matchRoute('DELETE', '/v1/subscriptions/s-1')).toBe('method_not_allowed');
  });

  it('builds an API Gateway v2 event with the JWT authorizer context of the local token', async () => {
    const { gw, events } = gateway();
    const answer = await gw.dispatch({
      method: 'POST',
      url: '/v1/subscriptions/sub-1/retry-billing?dry=1&x=a&x=b',
      headers: { Authorization: 'Bearer tok', 'Content-Type': 'application/json', 'X-Request': ['a', 'b'] },
      body: '{"reason":"r"}',
    });
    expect(answer).toMatchObject({ status: 200, headers: { 'x-thing': '1' }, body: '{"ok":true}' });
    const [event] = events;
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /v1/subscriptions/{subscriptionId}/retry-billing',
      rawPath: '/v1/subscriptions/sub-1/retry-billing',
      rawQueryString: 'dry=1&x=a&x=b',
      queryStringParameters: { dry: '1', x: 'a,b' },
      pathParameters: { subscriptionId: 'sub-1' },
      headers: { 'content-type': 'application/json', 'x-request': 'a,b', authorization: 'Bearer tok' },
      body: '{"reason":"r"}',
      isBase64Encoded: false,
      requestContext: { http: { method: 'POST', path: '/v1/subscriptions/sub-1/retry-billing' }, routeKey: 'POST /v1/subscriptions/{subscriptionId}/retry-billing', stage: '$default' },
    });
    const jwt = (event!.requestContext as any).authorizer.jwt;
    expect(jwt.claims).toMatchObject({ sub: 'local-operator', scope: 'billing:read billing:write billing:operate' });
    expect(jwt.scopes).toEqual(['billing:read', 'billing:write', 'billing:operate']);
    expect(event!.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 401 for a missing or wrong token and 404 for an unknown route, before any function runs', async () => {
    const { gw, events } = gateway();
    expect((await gw.dispatch({ method: 'GET', url: '/v1/subscriptions/s', headers: {}, body: '' })).status).toBe(401);
    expect((await gw.dispatch({ method: 'GET', url: '/v1/subscriptions/s', headers: { authorization: 'Bearer nope' }, body: '' })).status).toBe(401);
    expect((await gw.dispatch({ method: 'GET', url: '/nowhere', headers: {}, body: '' })).status).toBe(404);
    expect(events).toHaveLength(0);
  });

  it('passes signed webhooks through without a token and without an authorizer', async () => {
    const { gw, events } = gateway();
    expect((await gw.dispatch({ method: 'POST', url: '/webhooks/ach', headers: { 'x-ach-signature': 't=1,v1=ab' }, body: '{}' })).status).toBe(200);
    expect((events[0]!.requestContext as any).authorizer).toBeUndefined();
    expect(events[0]!.headers['x-ach-signature']).toBe('t=1,v1=ab');
  });

  it('keeps query and header names verbatim, __proto__ and constructor included, as API Gateway does', async () => {
    const { gw, events } = gateway();
    const answer = await gw.dispatch({
      method: 'GET',
      url: '/v1/subscriptions?billing=failing&__proto__=p&constructor=c1&constructor=c2&toString=t&hasOwnProperty=h',
      headers: { authorization: 'Bearer tok', ['__proto__']: 'hp', constructor: 'hc' },
      body: '',
    });
    expect(answer.status).toBe(200);
    const query = events[0]!.queryStringParameters!;
    expect(Object.keys(query).sort()).toEqual(['__proto__', 'billing', 'constructor', 'hasOwnProperty', 'toString']);
    expect(Object.getOwnPropertyDescriptor(query, '__proto__')?.value).toBe('p');
    expect(query.constructor).toBe('c1,c2');
    expect(query.toString).toBe('t');
    expect(query.billing).toBe('failing');
    const headers = events[0]!.headers;
    expect(Object.getOwnPropertyDescriptor(headers, '__proto__')?.value).toBe('hp');
    expect(headers.constructor).toBe('hc');
    // The event is sent as JSON to Lambda in AWS: the keys survive that too.
    expect(JSON.parse(JSON.stringify(events[0]!.queryStringParameters))).toMatchObject({ constructor: 'c1,c2', toString: 't' });
  });

  it('answers 413 with connection: close over a keep-alive connection, and the next request works on a new one', async () => {
    const { gw, events } = gateway({ maxBodyBytes: 1024 });
    const url = new URL(await gw.listen(0, '127.0.0.1'));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<Socket>();
    const send = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const req = request({ host: url.hostname, port: url.port, method, path, agent, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
          res.on('error', reject);
        });
        req.on('socket', (socket) => sockets.add(socket));
        req.on('error', reject);
        req.end(body);
      });
    try {
      const first = await send('POST', '/webhooks/ach', '{}');
      expect(first.status).toBe(200);
      const tooLarge = await send('POST', '/webhooks/ach', JSON.stringify({ pad: 'x'.repeat(512 * 1024) }));
      expect(tooLarge.status).toBe(413);
      expect(tooLarge.headers.connection).toBe('close');
      expect(JSON.parse(tooLarge.body)).toEqual({ message: 'Request Entity Too Large' });
      const after = await send('POST', '/webhooks/ach', '{}');
      expect(after.status).toBe(200);
      expect(sockets.size).toBe(2);
      expect(events).toHaveLength(2);
    } finally {
      agent.destroy();
      await gw.close();
    }
  });
});
