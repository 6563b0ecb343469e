/**
 * The HTTP route table: the CDK (lib/) builds the HTTP API from it and the local gateway
 * (src/local) routes with it. It lives under src because src never imports lib/ (the layer rules).
 */

/** The functions behind HTTP routes (a subset of lib/handlers.ts's HANDLER_NAMES). */
export type HttpTarget = 'api' | 'stripe-webhook' | 'ach-handler';

export type BillingScope = 'billing:read' | 'billing:write' | 'billing:operate';

export interface ApiRoute {
  readonly method: 'GET' | 'POST' | 'PUT';
  readonly path: string;
  readonly target: HttpTarget;
  /** JWT scope the gateway requires; absent only on signed webhooks, verified in the handler. */
  readonly scope?: BillingScope;
}

/** The HTTP API of docs/design.md, route by route. */
export const API_ROUTES: readonly ApiRoute[] = [
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
  { method: 'POST', path: '/webhooks/stripe', target: 'stripe-webhook' },
  { method: 'POST', path: '/webhooks/ach', target: 'ach-handler' },
  // The API Lambda verifies the signature and enqueues for the webhook-balance-worker.
  { method: 'POST', path: '/webhooks/balance', target: 'api' },
];
