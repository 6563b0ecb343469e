import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { resourcesOfType, synthBilling } from './support.js';

const prod = synthBilling({ stage: 'prod', jwtIssuer: 'https://issuer.test/', jwtAudience: 'billing, ops' });
const routes = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::ApiGatewayV2::Route')).map(
  (r) => r.Properties as { RouteKey: string; AuthorizationType?: string; AuthorizerId?: unknown; AuthorizationScopes?: string[]; Target: unknown },
);
const routeFor = (key: string) => {
  const route = routes.find((r) => r.RouteKey === key);
  if (!route) throw new Error(`no route ${key}`);
  return route;
};
const authorizerId = Object.keys(resourcesOfType(prod.statelessTemplate, 'AWS::ApiGatewayV2::Authorizer'))[0];

/** DESIGN 8, with the scope each route requires. */
const V1_ROUTES: [string, string][] = [
  ['GET /v1/users/{userId}/subscriptions', 'billing:read'],
  ['GET /v1/subscriptions/{subscriptionId}', 'billing:read'],
  ['GET /v1/subscriptions/{subscriptionId}/history', 'billing:read'],
  ['GET /v1/subscriptions', 'billing:read'],
  ['POST /v1/subscriptions/{subscriptionId}/pay', 'billing:write'],
  ['POST /v1/subscriptions/{subscriptionId}/retry-billing', 'billing:operate'],
  ['POST /v1/subscriptions/{subscriptionId}/waive', 'billing:operate'],
  ['PUT /v1/subscriptions/{subscriptionId}/billing-date', 'billing:operate'],
  ['GET /v1/users/{userId}/loans/{loanId}/payments', 'billing:read'],
  ['POST /v1/users/{userId}/loans/{loanId}/payments', 'billing:write'],
  ['GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}', 'billing:read'],
  ['GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history', 'billing:read'],
  ['POST /v1/billing/retry-runs', 'billing:operate'],
  ['GET /v1/billing/retry-runs/{runId}', 'billing:read'],
  ['POST /v1/subscriptions/{subscriptionId}/exception/resolve', 'billing:operate'],
  ['GET /v1/billing/retry-runs', 'billing:read'],
  ['GET /v1/users/{userId}/instruments', 'billing:read'],
  ['POST /v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release', 'billing:operate'],
  ['GET /v1/reconciliation/runs', 'billing:read'],
  ['GET /v1/reconciliation/runs/{date}/{rail}', 'billing:read'],
  ['POST /v1/reconciliation/exceptions/{id}/resolve', 'billing:operate'],
];
/** DESIGN 8's member routes: `billing:self` passes the authorizer too (the api keeps it to the token's own user). */
const MEMBER_ROUTES = new Set([
  'GET /v1/users/{userId}/subscriptions',
  'GET /v1/subscriptions/{subscriptionId}',
  'GET /v1/subscriptions/{subscriptionId}/history',
  'POST /v1/subscriptions/{subscriptionId}/pay',
  'GET /v1/users/{userId}/loans/{loanId}/payments',
  'POST /v1/users/{userId}/loans/{loanId}/payments',
  'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}',
  'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history',
]);
const WEBHOOKS: [string, string][] = [
  ['POST /webhooks/stripe', 'prod-billing-stripe-webhook'],
  ['POST /webhooks/ach', 'prod-billing-ach-handler'],
  ['POST /webhooks/balance', 'prod-billing-balance-webhook'],
];

/** The function name behind a route: route → integration → function logical id → FunctionName. */
function functionBehind(routeKey: string): string {
  const resources = prod.statelessTemplate.toJSON().Resources;
  const target = JSON.stringify(routeFor(routeKey).Target);
  const integrationId = /"Ref":"(\w+)"/.exec(target)![1]!;
  const uri = JSON.stringify(resources[integrationId].Properties.IntegrationUri);
  const functionId = /"Fn::GetAtt":\["(\w+)","Arn"\]/.exec(uri)![1]!;
  return resources[functionId].Properties.FunctionName;
}

describe('HTTP API', () => {
  it('has exactly the routes of DESIGN 8', () => {
    expect(routes.map((r) => r.RouteKey).sort()).toEqual([...V1_ROUTES.map(([k]) => k), ...WEBHOOKS.map(([k]) => k)].sort());
  });

  it('verifies JWTs from the issuer and audiences given in context', () => {
    prod.statelessTemplate.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: { Issuer: 'https://issuer.test/', Audience: ['billing', 'ops'] },
    });
  });

  it.each(V1_ROUTES)('%s requires a JWT with %s', (key, scope) => {
    const route = routeFor(key);
    expect(route.AuthorizationType).toBe('JWT');
    expect(route.AuthorizerId).toEqual({ Ref: authorizerId });
    expect(route.AuthorizationScopes).toEqual(MEMBER_ROUTES.has(key) ? [scope, 'billing:self'] : [scope]);
    expect(functionBehind(key)).toBe('prod-billing-api');
  });

  it('gives the api the member-token settings: the user id claim and which client may use which scope', () => {
    const withClients = synthBilling({ stage: 'prod', jwtIssuer: 'https://issuer.test/', jwtAudience: 'billing', userIdClaim: 'https://billing.example.com/user_id', apiClientScopes: '{"member-app":["billing:self"]}' });
    withClients.statelessTemplate.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'prod-billing-api',
      Environment: { Variables: Match.objectLike({ USER_ID_CLAIM: 'https://billing.example.com/user_id', API_CLIENT_SCOPES: '{"member-app":["billing:self"]}' }) },
    });
    prod.statelessTemplate.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'prod-billing-api',
      Environment: { Variables: Match.objectLike({ USER_ID_CLAIM: 'sub', API_CLIENT_SCOPES: '{}' }) },
    });
  });

  it.each(WEBHOOKS)('%s is open at the gateway and goes to %s', (key, functionName) => {
    const route = routeFor(key);
    expect(route.AuthorizationType ?? 'NONE').toBe('NONE');
    expect(route.AuthorizerId).toBeUndefined();
    expect(functionBehind(key)).toBe(functionName);
  });

  it('writes JSON access logs from its stage to a log group with retention', () => {
    const stage = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::ApiGatewayV2::Stage'))[0]!.Properties as any;
    expect(stage.StageName).toBe('$default');
    expect(JSON.parse(stage.AccessLogSettings.Format)).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    const logGroupId = stage.AccessLogSettings.DestinationArn['Fn::GetAtt'][0];
    expect(prod.statelessTemplate.toJSON().Resources[logGroupId].Properties).toMatchObject({
      LogGroupName: '/aws/apigateway/prod-billing-api',
      RetentionInDays: 90,
    });
  });

  it('throttles each webhook route on its own, lower limit; /v1 keeps the stage default', () => {
    const stage = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::ApiGatewayV2::Stage'))[0]!.Properties as any;
    expect(stage.DefaultRouteSettings).toMatchObject({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 });
    expect(Object.keys(stage.RouteSettings).sort()).toEqual(WEBHOOKS.map(([key]) => key).sort());
    for (const [key] of WEBHOOKS) {
      expect(stage.RouteSettings[key]).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
      expect(routeFor(key).RouteKey).toBe(key);
    }
  });

  it('falls back to placeholder issuer and audience', () => {
    const dev = synthBilling();
    dev.statelessTemplate.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      JwtConfiguration: { Issuer: Match.stringLikeRegexp('^https://'), Audience: ['billing-api'] },
    });
  });
});
