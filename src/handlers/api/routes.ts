import { ROUTES, type RouteKeyOf } from '../../manifest/index.js';
import { createPayment, getPayment, getPaymentHistory, listPayments } from './loans.js';
import { createRetryRun, getRetryRun, listRetryRuns } from './retry-runs.js';
import { getInstruments, releaseHold } from './instruments.js';
import { getReconciliationRun, listReconciliationRuns, resolveReconciliationExceptionRoute } from './reconciliation.js';
import type { Route, RouteContext } from './router.js';
import { changeBillingDateRoute, pay, retryBillingRoute, waiveRoute } from './subscription-actions.js';
import { resolveExceptionRoute } from './exception-resolution.js';
import { getSubscription, getSubscriptionHistory, listSubscriptions, listUserSubscriptions } from './subscriptions.js';
import type { HttpResult } from '../shared/http.js';

/**
 * The api Lambda's handler for each of its routes in the manifest's route table
 * (src/manifest/routes.ts). The record is exhaustive: a route added to the table for `api`
 * without a handler here, or a handler for a route the table does not give to `api`, fails the
 * type check.
 */
const HANDLERS: Record<RouteKeyOf<'api'>, (ctx: RouteContext) => Promise<HttpResult>> = {
  'GET /v1/users/{userId}/subscriptions': listUserSubscriptions,
  'GET /v1/subscriptions': listSubscriptions,
  'GET /v1/subscriptions/{subscriptionId}': getSubscription,
  'GET /v1/subscriptions/{subscriptionId}/history': getSubscriptionHistory,
  'POST /v1/subscriptions/{subscriptionId}/pay': pay,
  'POST /v1/subscriptions/{subscriptionId}/retry-billing': retryBillingRoute,
  'POST /v1/subscriptions/{subscriptionId}/waive': waiveRoute,
  'PUT /v1/subscriptions/{subscriptionId}/billing-date': changeBillingDateRoute,
  'POST /v1/subscriptions/{subscriptionId}/exception/resolve': resolveExceptionRoute,
  'GET /v1/users/{userId}/loans/{loanId}/payments': listPayments,
  'POST /v1/users/{userId}/loans/{loanId}/payments': createPayment,
  'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}': getPayment,
  'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history': getPaymentHistory,
  'POST /v1/billing/retry-runs': createRetryRun,
  'GET /v1/billing/retry-runs/{runId}': getRetryRun,
  'GET /v1/billing/retry-runs': listRetryRuns,
  'GET /v1/users/{userId}/instruments': getInstruments,
  'POST /v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release': releaseHold,
  'GET /v1/reconciliation/runs': listReconciliationRuns,
  'GET /v1/reconciliation/runs/{date}/{rail}': getReconciliationRun,
  'POST /v1/reconciliation/exceptions/{id}/resolve': resolveReconciliationExceptionRoute,
};

/** The api Lambda's routes (DESIGN 8), in the table's order; the paths are the HTTP API's route keys. */
export const API_ROUTES: readonly Route[] = ROUTES.filter((route) => route.target === 'api').map((route) => ({
  method: route.method,
  path: route.path,
  scope: 'scope' in route ? route.scope : undefined,
  member: 'member' in route && route.member === true,
  handle: HANDLERS[`${route.method} ${route.path}` as RouteKeyOf<'api'>],
}));
