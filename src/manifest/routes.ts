import type { FunctionName } from './functions.js';

/**
 * The one HTTP route table. The CDK builds the HTTP API from it (route keys, JWT scopes,
 * integrations), the local gateway routes with it, and the api Lambda's router gives each of its
 * routes a handler (src/handlers/api/routes.ts, checked exhaustive by the type checker).
 */

export type BillingScope = 'billing:read' | 'billing:write' | 'billing:operate';
export type Method = 'GET' | 'POST' | 'PUT';

export interface ManifestRoute {
  readonly method: Method;
  /** Path template as API Gateway writes it, e.g. `/v1/subscriptions/{subscriptionId}`. */
  readonly path: string;
  /** The function behind the route. */
  readonly target: FunctionName;
  /** JWT scope the gateway requires; absent only on signed webhooks, verified in the handler. */
  readonly scope?: BillingScope;
}

export const ROUTES = [
  { method: 'GET', path: '/v1/users/{userId}/subscriptions', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/subscriptions', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/subscriptions/{subscriptionId}', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/subscriptions/{subscriptionId}/history', target: 'api', scope: 'billing:read' },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/pay', target: 'api', scope: 'billing:write' },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/retry-billing', target: 'api', scope: 'billing:operate' },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/waive', target: 'api', scope: 'billing:operate' },
  { method: 'PUT', path: '/v1/subscriptions/{subscriptionId}/billing-date', target: 'api', scope: 'billing:operate' },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments', target: 'api', scope: 'billing:read' },
  { method: 'POST', path: '/v1/users/{userId}/loans/{loanId}/payments', target: 'api', scope: 'billing:write' },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history', target: 'api', scope: 'billing:read' },
  { method: 'POST', path: '/v1/billing/retry-runs', target: 'api', scope: 'billing:operate' },
  { method: 'GET', path: '/v1/billing/retry-runs/{runId}', target: 'api', scope: 'billing:read' },
  { method: 'GET', path: '/v1/users/{userId}/instruments', target: 'api', scope: 'billing:read' },
  { method: 'POST', path: '/v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release', target: 'api', scope: 'billing:operate' },
  { method: 'POST', path: '/webhooks/stripe', target: 'stripe-webhook' },
  { method: 'POST', path: '/webhooks/ach', target: 'ach-handler' },
  // The api Lambda verifies the signature and enqueues for the webhook-balance-worker.
  { method: 'POST', path: '/webhooks/balance', target: 'api' },
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
