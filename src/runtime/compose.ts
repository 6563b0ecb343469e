import { randomInt, randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startStampSequence, type IdGenerator } from '../domain/billing-record.js';
import type { BillingStore } from '../domain/ports/billing-store.js';
import type { Clock } from '../domain/ports/clock.js';
import type { PaymentsStore } from '../domain/ports/loan-payments.js';
import type { LockStore } from '../domain/ports/locks.js';
import type { MoneyMovementStore } from '../domain/ports/money-movements.js';
import { DynamoMoneyMovementStore } from '../adapters/dynamodb/money-movements.js';
import { DynamoReconciliationStore } from '../adapters/dynamodb/reconciliation-store.js';
import type { ReconciliationStore } from '../domain/ports/reconciliation.js';
import type { RetryRunStore } from '../domain/ports/retry-runs.js';
import type { StripeEventStore } from '../domain/ports/stripe-events.js';
import type { InstrumentStore } from '../domain/ports/instruments.js';
import { DynamoInstrumentStore } from '../adapters/dynamodb/instruments/store.js';
import { DynamoBillingStore } from '../adapters/dynamodb/billing/store.js';
import { DynamoLockStore } from '../adapters/dynamodb/lock-store.js';
import { DynamoPaymentsStore } from '../adapters/dynamodb/payments-store.js';
import { DynamoRetryRunStore } from '../adapters/dynamodb/retry-run-store.js';
import { DynamoStripeEventStore } from '../adapters/dynamodb/stripe-event-store.js';
import type { TableNames } from '../adapters/dynamodb/table-definitions.js';

export interface DynamoStores {
  readonly billing: BillingStore;
  readonly locks: LockStore;
  readonly payments: PaymentsStore;
  readonly stripeEvents: StripeEventStore;
  /** The ACH and balance webhooks' event claims, in the stripe-events table under their own key prefixes (DESIGN 15). */
  readonly achEventClaims: StripeEventStore;
  readonly balanceEventClaims: StripeEventStore;
  readonly retryRuns: RetryRunStore;
  readonly instruments: InstrumentStore;
  readonly movements: MoneyMovementStore;
  readonly reconciliation: ReconciliationStore;
}

/** The DynamoDB-backed stores on one client: production, the local runtime and tests share this. */
export function dynamoStores(options: {
  client: DynamoDBClient;
  tables: Pick<TableNames, 'billingActivity' | 'billingActivityHistory' | 'locks' | 'payments' | 'stripeEvents' | 'retryRuns' | 'instruments'> & Partial<Pick<TableNames, 'moneyMovements' | 'reconciliation'>>;
  statusShardCount?: number;
  paymentShardCount?: number;
}): DynamoStores {
  const { client, tables } = options;
  return {
    billing: new DynamoBillingStore({
      client,
      tableName: tables.billingActivity,
      historyTableName: tables.billingActivityHistory,
      locksTableName: tables.locks,
      instrumentsTableName: tables.instruments,
      ...(tables.moneyMovements ? { movementsTableName: tables.moneyMovements } : {}),
      ...(options.statusShardCount !== undefined ? { statusShardCount: options.statusShardCount } : {}),
    }),
    locks: new DynamoLockStore(client, tables.locks),
    payments: new DynamoPaymentsStore({
      client,
      tableName: tables.payments,
      instrumentsTableName: tables.instruments,
      ...(tables.moneyMovements ? { movementsTableName: tables.moneyMovements } : {}),
      ...(options.paymentShardCount !== undefined ? { paymentShardCount: options.paymentShardCount } : {}),
    }),
    stripeEvents: new DynamoStripeEventStore({ client, tableName: tables.stripeEvents }),
    achEventClaims: new DynamoStripeEventStore({ client, tableName: tables.stripeEvents, source: 'ach' }),
    balanceEventClaims: new DynamoStripeEventStore({ client, tableName: tables.stripeEvents, source: 'balance' }),
    retryRuns: new DynamoRetryRunStore(client, tables.retryRuns),
    instruments: new DynamoInstrumentStore(client, tables.instruments),
    movements: new DynamoMoneyMovementStore(client, tables.moneyMovements ?? 'money-movements-not-configured'),
    reconciliation: new DynamoReconciliationStore(client, tables.reconciliation ?? 'reconciliation-not-configured'),
  };
}

export const systemClock: Clock = { now: () => new Date() };
export const uuidIds: IdGenerator = { newId: () => randomUUID() };

// Randomness stays out of the domain: every process that composes stores starts its stamp sequence here.
startStampSequence(randomInt(1_000_000));
