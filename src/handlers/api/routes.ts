import { receiveBalanceEvent } from './balance.js';
import { createPayment, getPayment, getPaymentHistory, listPayments } from './loans.js';
import { SCOPES, type Route } from './router.js';
import { changeBillingDateRoute, pay, retryBillingRoute, waiveRoute } from './subscription-actions.js';
import { getSubscription, getSubscriptionHistory, listSubscriptions, listUserSubscriptions } from './subscriptions.js';

/** The api Lambda's routes (DESIGN 8); the paths are the HTTP API's route keys. */
export const API_ROUTES: readonly Route[] = [
  { method: 'GET', path: '/v1/users/{userId}/subscriptions', scope: SCOPES.read, handle: listUserSubscriptions },
  { method: 'GET', path: '/v1/subscriptions', scope: SCOPES.read, handle: listSubscriptions },
  { method: 'GET', path: '/v1/subscriptions/{subscriptionId}', scope: SCOPES.read, handle: getSubscription },
  { method: 'GET', path: '/v1/subscriptions/{subscriptionId}/history', scope: SCOPES.read, handle: getSubscriptionHistory },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/pay', scope: SCOPES.write, handle: pay },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/retry-billing', scope: SCOPES.operate, handle: retryBillingRoute },
  { method: 'POST', path: '/v1/subscriptions/{subscriptionId}/waive', scope: SCOPES.operate, handle: waiveRoute },
  { method: 'PUT', path: '/v1/subscriptions/{subscriptionId}/billing-date', scope: SCOPES.operate, handle: changeBillingDateRoute },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments', scope: SCOPES.read, handle: listPayments },
  { method: 'POST', path: '/v1/users/{userId}/loans/{loanId}/payments', scope: SCOPES.write, handle: createPayment },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}', scope: SCOPES.read, handle: getPayment },
  { method: 'GET', path: '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history', scope: SCOPES.read, handle: getPaymentHistory },
  { method: 'POST', path: '/webhooks/balance', scope: undefined, handle: receiveBalanceEvent },
];
