import type { FunctionName } from './functions.js';

/**
 * The one HTTP route table. The CDK builds the HTTP API from it (route keys, JWT scopes,
 * integrations), the local gateway routes with it, and the api Lambda's router gives each of its
 * routes a handler (src/handlers/api/routes.ts, checked exhaustive by the type checker).
 */

export type BillingScope = 'billing:read' | 'billing:write' | 'billing:operate';
/** A member's app (DESIGN 8): reaches only the token's own user, on the routes marked `member`. */
export const MEMBER_SCOPE = 'billing:self';
export type RouteScope = BillingScope | typeof MEMBER_SCOPE;
export type Method = 'GET' | 'POST' | 'PUT';

export interface ManifestRoute {
  readonly method: Method;
  /** Path template as API Gateway writes it, e.g. `/v1/subscriptions/{subscriptionId}`. */
  readonly path: string;
  /** The function behind the route. */
  readonly target: FunctionName;
  /** JWT scope the gateway requires; absent only on signed webhooks, verified in the handler. */
  readonly scope?: BillingScope;
  /** A member route: `billing:self` reaches it too, for the token's own user only. */
  readonly member?: true;
}

/** The scopes that reach a route, staff scope first: the authorizer lets any of them in, the api decides which applies. */
export function routeScopes(route: { readonly scope?: BillingScope | undefined; readonly member?: boolean | undefined }): readonly RouteScope[] {
  if (!route.scope) return [];
  return route.member ? [route.scope, MEMBER_SCOPE] : [route.scope];
}

export const ROUTES = [
  { method: 'GET', path: '/v1/users/{userId}/subscriptions', target: 'api', scope: 'billing:read', member: true },
  { method: 'GET', path: '/v1/subscriptions', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/subscriptions/{subscriptionId}', target: 'api', scope: 'billing:read', member: true },
  { method: 'GET', path: '/v1/subscriptions/{subscriptionId}/history', target: 'api', scope: 'billing:read', member: true },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/pay', target: 'api', scope: 'billing:write', member: true },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/retry-billing', target: 'api', scope: 'billing:operate' },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/waive', target: 'api', scope: 'billing:operate' },
  { method: 'PUT', path: '/v1/subscriptions/{subscriptionId}/billing-date', target: 'api', scope: 'billing:operate' },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/exception/resolve', target: 'api', scope: 'billing:operate' },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments', target: 'api', scope: 'billing:read', member: true },
  { method: 'POST', path: '/v1/users/{userId}/loans/{loanId}/payments', target: 'api', scope: 'billing:write', member: true },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}', target: 'api', scope: 'billing:read', member: true },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history', target: 'api', scope: 'billing:read', member: true },
  { method: 'POST', path: '/v1/billing/retry-runs', target: 'api', scope: 'billing:operate' },
  { method: 'GET', path: '/v1/billing/retry-runs/{runId}', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/billing/retry-runs', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/users/{userId}/instruments', target: 'api', scope: 'billing:read' },
  { method: 'POST', path: '/v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release', target: 'api', scope: 'billing:operate' },
  { method: 'GET', path: '/v1/reconciliation/runs', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/reconciliation/runs/{date}/{rail}', target: 'api', scope: 'billing:read' },
  { method: 'POST', path: '/v1/reconciliation/exceptions/{id}/resolve', target: 'api', scope: 'billing:operate' },
  { method: 'POST', path: '/webhooks/stripe', target: 'stripe-webhook' },
  { method: 'POST', path: '/webhooks/ach', target: 'ach-handler' },
  // Its own function (DESIGN 15): verifies the signature, claims the event and enqueues for the webhook-balance-worker.
  { method: 'POST', path: '/webhooks/balance', target: 'balance-webhook' },
] as const satisfies readonly ManifestRoute[];

type AnyRoute = (typeof ROUTES)[number];
/** `METHOD /path`, as API Gateway names a route. */
export type RouteKey = `${AnyRoute['method']} ${AnyRoute['path']}`;
/** The route keys of one function. */
export type RouteKeyOf<F extends FunctionName> = Extract<AnyRoute, { target: F }> extends infer R
  ? R extends { method: infer M extends string; path: infer P extends string }
    ? `${M} ${P}`
    : never
  : never;

export function routeKey(route: Pick<ManifestRoute, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

/** The routes a function serves. */
export function routesOf(target: FunctionName): readonly ManifestRoute[] {
  return (ROUTES as readonly ManifestRoute[]).filter((route) => route.target === target);
}
