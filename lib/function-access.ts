import { BILLING_ACTIVITY_INDEXES, PAYMENTS_INDEXES, type TableId } from '../src/adapters/dynamodb/table-definitions.js';
import type { TableAccess } from './access.js';
import type { HandlerName } from './handlers.js';
import type { SecretId } from './stateful-stack.js';

export type QueueId = 'collections' | 'balanceEvents';

/** What one function may touch; anything absent here it cannot reach. */
export interface FunctionAccess {
  readonly tables: Partial<Record<TableId, TableAccess>>;
  readonly sendsTo?: readonly QueueId[];
  readonly secrets?: readonly SecretId[];
}

/**
 * Least privilege, per function (docs/design.md: functions, locks table). Queue consumption and the Kinesis read are
 * granted by their event sources; only the webhook handlers and the API are reachable over HTTP.
 */
export const FUNCTION_ACCESS: Record<HandlerName, FunctionAccess> = {
  'collections-job': {
    tables: {
      billingActivity: { level: 'read', indexes: [BILLING_ACTIVITY_INDEXES.byStatus] },
      // Due RETRY loan payments (docs/design.md, payments): GSI2 only.
      payments: { level: 'read', indexes: [PAYMENTS_INDEXES.byStatus] },
    },
    sendsTo: ['collections'],
  },
  'batch-worker': {
    tables: {
      billingActivity: { level: 'readWrite' },
      billingActivityHistory: { level: 'append' },
      locks: { level: 'readWrite' },
      // Loan payment retries and their audit rows, plus the loan's recent payments for the holds.
      payments: { level: 'readWrite', indexes: [PAYMENTS_INDEXES.byLoanCreated] },
    },
    secrets: ['stripeApiKey'],
  },
  'webhook-balance-worker': {
    tables: {
      billingActivity: { level: 'readWrite' },
      billingActivityHistory: { level: 'append' },
      locks: { level: 'readWrite' },
    },
    secrets: ['stripeApiKey'],
  },
  // Settles by the reference's keys; never takes the lock (docs/design.md, locks table).
  'ach-handler': {
    tables: {
      billingActivity: { level: 'readWrite' },
      billingActivityHistory: { level: 'append' },
      payments: { level: 'readWrite' },
    },
    secrets: ['achWebhook'],
  },
  // Reactivation collects synchronously, hence the processor key.
  'memberships-consumer': {
    tables: {
      billingActivity: { level: 'readWrite' },
      billingActivityHistory: { level: 'append' },
      locks: { level: 'readWrite' },
    },
    secrets: ['stripeApiKey'],
  },
  // The API key looks up the PaymentIntent behind charge and dispute events.
  'stripe-webhook': {
    tables: {
      stripeEvents: { level: 'readWrite' },
      billingActivity: { level: 'readWrite' },
      billingActivityHistory: { level: 'append' },
      locks: { level: 'readWrite' },
    },
    secrets: ['stripeWebhook', 'stripeApiKey'],
  },
  'api': {
    tables: {
      billingActivity: {
        level: 'readWrite',
        indexes: [
          BILLING_ACTIVITY_INDEXES.bySubscriptionId,
          BILLING_ACTIVITY_INDEXES.byStatus,
          BILLING_ACTIVITY_INDEXES.failing,
          BILLING_ACTIVITY_INDEXES.exceptions,
        ],
      },
      billingActivityHistory: { level: 'readAppend', indexes: [BILLING_ACTIVITY_INDEXES.bySubscriptionId] },
      locks: { level: 'readWrite' },
      payments: {
        level: 'readWrite',
        indexes: [PAYMENTS_INDEXES.byLoanStatus, PAYMENTS_INDEXES.byStatus, PAYMENTS_INDEXES.byConfirmationId, PAYMENTS_INDEXES.byLoanCreated],
      },
    },
    sendsTo: ['balanceEvents'],
    secrets: ['stripeApiKey', 'balanceWebhook'],
  },
};
