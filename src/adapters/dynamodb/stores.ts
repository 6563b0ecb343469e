import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoBillingStore } from './billing-store.js';
import { DynamoLockStore } from './lock-store.js';
import { DynamoPaymentsStore } from './payments-store.js';
import { DynamoStripeEventStore } from './stripe-event-store.js';
import type { TableNames } from './table-definitions.js';

export interface DynamoStores {
  readonly locks: DynamoLockStore;
  readonly billing: DynamoBillingStore;
  readonly payments: DynamoPaymentsStore;
  readonly stripeEvents: DynamoStripeEventStore;
}

/** Every DynamoDB store over one client, for handlers and the local runtime. */
export function createDynamoStores(
  client: DynamoDBClient,
  tables: TableNames,
  options: { statusShardCount?: number; paymentShardCount?: number } = {},
): DynamoStores {
  return {
    locks: new DynamoLockStore(client, tables.locks),
    billing: new DynamoBillingStore({
      client,
      tableName: tables.billingActivity,
      historyTableName: tables.billingActivityHistory,
      ...(options.statusShardCount !== undefined ? { statusShardCount: options.statusShardCount } : {}),
    }),
    payments: new DynamoPaymentsStore({
      client,
      tableName: tables.payments,
      ...(options.paymentShardCount !== undefined ? { paymentShardCount: options.paymentShardCount } : {}),
    }),
    stripeEvents: new DynamoStripeEventStore({ client, tableName: tables.stripeEvents }),
  };
}
