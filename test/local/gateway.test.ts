import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { LocalGateway, matchRoute } from '../../src/local/gateway.js';
import { createLogger } from '../../src/runtime/logger.js';

function gateway() {
  const events: APIGatewayProxyEventV2[] = [];
  const gw = new LocalGateway({
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
  it('matches DESIGN 8 route templates and fills pathParameters', () => {
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
});
