/**
 * Every table's key schema, GSIs and TTL: the CDK stack, the local runtime and the tests build their
 * tables from here, so a key cannot differ between them. No SDK or CDK import, so all three can.
 */

export type AttributeType = 'S' | 'N';

export interface KeyAttribute {
  readonly name: string;
  readonly type: AttributeType;
}

export interface GlobalSecondaryIndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
}

export interface TableDefinition {
  /** Stable name used in resource names: `{stage}-{baseName}`. */
  readonly baseName: string;
  /** Environment variable that carries the deployed table name to the functions. */
  readonly envVar: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  readonly globalSecondaryIndexes: readonly GlobalSecondaryIndexDefinition[];
  /** Epoch-seconds attribute the table's TTL deletes on. */
  readonly timeToLiveAttribute?: string;
  /** A DynamoDB stream of the table's writes, and what each record carries. */
  readonly stream?: 'NEW_IMAGE';
}

export const BILLING_ACTIVITY_INDEXES = {
  bySubscriptionId: 'subscription_id-index',
  /** Sparse: only records whose saved billing failure is live carry `failing_shard`. */
  failing: 'failing-index',
  /** Sparse: only records carrying an ACH or card exception (DESIGN 4.1, 6.1) carry `exception_shard`. */
  exceptions: 'exceptions-index',
  /** Sparse: FAILED records in dunning, by state (`RETRYING#n`, `EXHAUSTED#n`) and next automatic attempt. */
  dunning: 'dunning-index',
  /** Sparse, the planner's only source: records a run may act on without a write, by next eligible instant (`DUE#n`). */
  due: 'due-index',
  /** Sparse: periods a hold keeps off the schedule (DESIGN 3.2), by when (`HELD#n`); the daily sweep reads it. */
  held: 'held-index',
} as const;

export const PAYMENTS_INDEXES = {
  byLoanStatus: 'GSI1',
  byStatus: 'GSI2',
  byConfirmationId: 'GSI3',
  /** A loan's payments newest first: `GSI4PK = USER#<user>#LOAN#<loan>`, `GSI4SK = CREATED#<loc_created_date>#PAYMENT#<id>`. */
  byLoanCreated: 'GSI4',
} as const;

export const billingActivityTable: TableDefinition = {
  baseName: 'billing-activity',
  envVar: 'BILLING_ACTIVITY_TABLE',
  partitionKey: { name: 'user_id', type: 'S' },
  sortKey: { name: 'billing_date', type: 'S' },
  globalSecondaryIndexes: [
    { indexName: BILLING_ACTIVITY_INDEXES.bySubscriptionId, partitionKey: { name: 'subscription_id', type: 'S' } },
    {
      indexName: BILLING_ACTIVITY_INDEXES.failing,
      partitionKey: { name: 'failing_shard', type: 'S' },
      sortKey: { name: 'billing_failed_at', type: 'S' },
    },
    {
      indexName: BILLING_ACTIVITY_INDEXES.exceptions,
      partitionKey: { name: 'exception_shard', type: 'S' },
      sortKey: { name: 'exception_at', type: 'S' },
    },
    {
      indexName: BILLING_ACTIVITY_INDEXES.dunning,
      partitionKey: { name: 'dunning_shard', type: 'S' },
      sortKey: { name: 'dunning_due_at', type: 'S' },
    },
    {
      indexName: BILLING_ACTIVITY_INDEXES.due,
      partitionKey: { name: 'due_shard', type: 'S' },
      sortKey: { name: 'due_at', type: 'S' },
    },
    {
      indexName: BILLING_ACTIVITY_INDEXES.held,
      partitionKey: { name: 'held_shard', type: 'S' },
      sortKey: { name: 'held_at', type: 'S' },
    },
  ],
};

export const billingActivityHistoryTable: TableDefinition = {
  baseName: 'billing-activity-history',
  envVar: 'BILLING_ACTIVITY_HISTORY_TABLE',
  partitionKey: { name: 'user_id', type: 'S' },
  sortKey: { name: 'last_run_date', type: 'S' },
  globalSecondaryIndexes: [
    {
      indexName: BILLING_ACTIVITY_INDEXES.bySubscriptionId,
      partitionKey: { name: 'subscription_id', type: 'S' },
      sortKey: { name: 'last_run_date', type: 'S' },
    },
  ],
  // The outbox of docs/design.md section 11: every audit row, as written, feeds the events-publisher.
  stream: 'NEW_IMAGE',
};

export const locksTable: TableDefinition = {
  baseName: 'locks',
  envVar: 'LOCKS_TABLE',
  partitionKey: { name: 'PartitionKey', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'expires_at',
};

export const paymentsTable: TableDefinition = {
  baseName: 'payments',
  envVar: 'PAYMENTS_TABLE',
  partitionKey: { name: 'PK', type: 'S' },
  sortKey: { name: 'SK', type: 'S' },
  globalSecondaryIndexes: [
    {
      indexName: PAYMENTS_INDEXES.byLoanStatus,
      partitionKey: { name: 'GSI1PK', type: 'S' },
      sortKey: { name: 'GSI1SK', type: 'S' },
    },
    {
      indexName: PAYMENTS_INDEXES.byStatus,
      partitionKey: { name: 'GSI2PK', type: 'S' },
      sortKey: { name: 'GSI2SK', type: 'S' },
    },
    {
      indexName: PAYMENTS_INDEXES.byConfirmationId,
      partitionKey: { name: 'GSI3PK', type: 'S' },
      sortKey: { name: 'GSI3SK', type: 'S' },
    },
    {
      indexName: PAYMENTS_INDEXES.byLoanCreated,
      partitionKey: { name: 'GSI4PK', type: 'S' },
      sortKey: { name: 'GSI4SK', type: 'S' },
    },
  ],
};

export const stripeEventsTable: TableDefinition = {
  baseName: 'stripe-events',
  envVar: 'STRIPE_EVENTS_TABLE',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'expires_at',
};

/**
 * Bulk retry runs (POST /v1/billing/retry-runs): `pk = RUN#<run_id>` holds the run (`sk = RUN`) and
 * one item per selected period (`sk = ITEM#<subscription_id>`); `pk = KEY#<sha256>` names the run
 * of one caller's Idempotency-Key. Runs expire after 90 days; the audit rows stay in the history table.
 */
export const retryRunsTable: TableDefinition = {
  baseName: 'retry-runs',
  envVar: 'RETRY_RUNS_TABLE',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'expires_at',
};

/**
 * One item per user (DESIGN 3.2): the instruments the user pays with, their holds, presentments and
 * per-entry re-presentment counts, each part in its own top-level attribute (instruments/item.ts).
 */
export const instrumentsTable: TableDefinition = {
  baseName: 'instruments',
  envVar: 'INSTRUMENTS_TABLE',
  partitionKey: { name: 'user_id', type: 'S' },
  globalSecondaryIndexes: [],
};

/**
 * Our side of reconciliation (DESIGN 14): one append-only row per money movement, written in the
 * transaction of its effect. `recon_key = {rail}#{YYYY-MM-DD}#{shard}`, `sk = {occurred_at}#{movement_id}`:
 * a day's read is a Query per shard and grows with the day's movements, not with the table.
 */
export const moneyMovementsTable: TableDefinition = {
  baseName: 'money-movements',
  envVar: 'MONEY_MOVEMENTS_TABLE',
  partitionKey: { name: 'recon_key', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [],
};

/**
 * Reconciliation runs and their exceptions (DESIGN 14): `pk = RUN#{date}#{rail}` holds the run
 * (`sk = RUN`) and its exceptions (`sk = EXC#{exception_id}`); `pk = EXC#{exception_id}` points at
 * the run that holds an exception, so a resolution finds it by id. A run's checkpoint is on its run
 * item; `sk = AMEND#{day}` holds a later day's amendment; `pk = STAGE#{date}#{rail}#{run_id}` the chunks
 * a checkpointed run read; `pk = DEBITS#{date}#{rail}` the debits a day's run saw (DESIGN 14).
 */
export const reconciliationTable: TableDefinition = {
  baseName: 'reconciliation',
  envVar: 'RECONCILIATION_TABLE',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [],
  // A checkpointed run's staged chunks (`pk = STAGE#…`) expire; runs and exceptions carry no expires_at.
  timeToLiveAttribute: 'expires_at',
};

export const allTables = {
  billingActivity: billingActivityTable,
  billingActivityHistory: billingActivityHistoryTable,
  locks: locksTable,
  payments: paymentsTable,
  stripeEvents: stripeEventsTable,
  retryRuns: retryRunsTable,
  instruments: instrumentsTable,
  moneyMovements: moneyMovementsTable,
  reconciliation: reconciliationTable,
} as const;

export type TableId = keyof typeof allTables;
export type TableNames = Record<TableId, string>;

/** Table names for a stage or a test run: `{prefix}-{baseName}`. */
export function tableNamesFor(prefix: string): TableNames {
  const names = {} as Record<TableId, string>;
  for (const [id, def] of Object.entries(allTables) as [TableId, TableDefinition][]) {
    names[id] = `${prefix}-${def.baseName}`;
  }
  return names;
}
