import { ACH_RATE_PARTITION } from '../adapters/dynamodb/ach-rate-counters.js';
import { GAUGE_PARTITION } from '../adapters/dynamodb/gauge-counters.js';
import { COLLECTION_BATCHING_WINDOW_SECONDS } from '../domain/billing-day.js';
import { BILLING_ACTIVITY_INDEXES, PAYMENTS_INDEXES, type TableId } from '../adapters/dynamodb/table-definitions.js';
import { BUDGET_SETTINGS, COLLECTION_QUEUE_IDS, PROCESSORS, SERVICES, type BusId, type QueueId, type SecretId, type ServiceEntry, type ServiceId, type SettingEnv, type StreamId } from './resources.js';

/**
 * What each function may touch, written once. The CDK derives each function's IAM policy,
 * environment and event sources from it (lib/stateless-stack.ts); every function's deps, deployed,
 * local and in tests (src/runtime/function-deps.ts), hold only the ports it grants, behind a guard
 * that refuses any other DynamoDB request; test/runtime/grants-walk.test.ts walks every use case
 * through it and test/infra/iam.test.ts checks that each role is exactly it.
 *
 * Adding a function: add its entry here (and its routes to routes.ts), write its entry module
 * (`entry`, exporting `handler`), and run `npx vitest run test/manifest test/infra test/runtime`.
 */

/** DynamoDB actions on a table's own items (the base table ARN). */
export type ReadAction = 'get' | 'query';
export type WriteAction = 'put' | 'update';

/**
 * One function's access to one table. A transaction needs the per-item action for each of its
 * items (put, update, delete; get for reads): TransactWriteItems is not an IAM action of its own.
 */
export interface TableGrant {
  /** GetItem and/or Query on the base table. */
  readonly read?: readonly ReadAction[];
  /** PutItem (conditional puts: creates, versioned replacements, audit rows, lock takes) and/or UpdateItem. */
  readonly write?: readonly WriteAction[];
  /** DeleteItem (a lock release, a claim release, the old period of a due-date change). */
  readonly delete?: boolean;
  /** GSIs the function queries; each is granted by its own ARN, never `index/*`. */
  readonly indexes?: readonly string[];
  /** Base-table Queries only of these partitions (IAM `dynamodb:LeadingKeys`), where the query is of counter items. */
  readonly queryPartitions?: readonly string[];
}

export type Trigger =
  | { readonly kind: 'http' }
  | { readonly kind: 'schedule' }
  /**
   * SQS event sources with partial batch responses (ReportBatchItemFailures): one per queue named (queuesOf).
   * `maxBatchingWindowSeconds`: how long the poller gathers for a full batch (Lambda's MaximumBatchingWindowInSeconds).
   */
  | { readonly kind: 'sqs'; readonly queue: QueueId | readonly QueueId[]; readonly batchSize: number; readonly maxBatchingWindowSeconds?: number }
  /** A Kinesis event source with partial batch responses, bisecting, and an SQS on-failure destination. */
  | {
      readonly kind: 'kinesis';
      readonly stream: StreamId;
      readonly batchSize: number;
      readonly retryAttempts: number;
      readonly maxRecordAgeHours: number;
    }
  /**
   * A table's DynamoDB stream (NEW_IMAGE), read from its oldest record, with partial batch
   * responses, bisecting, and an SQS on-failure destination. Reading the stream is this trigger's
   * grant; the table's items are not.
   */
  | {
      readonly kind: 'dynamodb-stream';
      readonly table: TableId;
      readonly batchSize: number;
      readonly retryAttempts: number;
      readonly maxRecordAgeHours: number;
    };

export interface FunctionManifest {
  /** The Lambda entry module (exports `handler`), relative to the repository root. */
  readonly entry: string;
  readonly description: string;
  readonly timeoutSeconds: number;
  readonly memoryMb?: number;
  /** Lambda reserved concurrency: at once a guarantee and a ceiling (a webhook flood takes no more). */
  readonly reservedConcurrency?: number;
  readonly trigger: Trigger;
  readonly tables: Partial<Record<TableId, TableGrant>>;
  /** Queues it sends to (consuming is its trigger). */
  readonly sendsTo?: readonly QueueId[];
  /** A queue it consumes beside its trigger (the reconciliation-job's continuations). */
  readonly alsoConsumes?: Extract<Trigger, { kind: 'sqs' }>;
  /** Queues of `sendsTo` whose depth it reads (GetQueueAttributes): the paced planner subtracts what is still queued. */
  readonly readsDepthOf?: readonly QueueId[];
  readonly secrets?: readonly SecretId[];
  readonly services?: readonly ServiceId[];
  readonly settings?: readonly SettingEnv[];
  /** EventBridge buses it puts events on (PutEvents on that bus only). */
  readonly putsEventsOn?: readonly BusId[];
}

const { bySubscriptionId, failing, exceptions, dunning, due, held } = BILLING_ACTIVITY_INDEXES;
const { byLoanStatus, byStatus: paymentsByStatus, byLoanCreated } = PAYMENTS_INDEXES;

/**
 * The collection attempt (runCollectionAttempt under the user lock): the lock taken, renewed and
 * released (PutItem, DeleteItem; the release inside the commit), the period read and replaced,
 * its successor created, a counted failure recorded and an ACH debit counted (UpdateItem), audit
 * rows appended. It charges through the processor that runs the period's rail.
 */
const ATTEMPT = {
  billingActivity: { read: ['get'], write: ['put', 'update'] },
  billingActivityHistory: { write: ['put'] },
  // The user lock; the processor budget's per-second counters (UpdateItem ADD, DESIGN 13); the processors'
  // circuits (GetItem; an outage opens one with a PutItem, DESIGN 15).
  locks: { read: ['get'], write: ['put', 'update'], delete: true },
  // The user's instruments item, read with the period or loan payment (TransactGetItems) and updated in its transaction.
  instruments: { read: ['get'], write: ['update'] },
  // The debit a presentment moved, appended in the attempt's transaction (DESIGN 14).
  moneyMovements: { write: ['put'] },
} as const satisfies Partial<Record<TableId, TableGrant>>;
/** The secrets a set of services needs, each once. */
function secretsOf(services: readonly ServiceId[]): SecretId[] {
  return [...new Set(services.flatMap((id) => (SERVICES[id] as ServiceEntry).secrets ?? []))];
}

/** A collecting function calls every payment processor, with the secrets they need, and the accounts service. */
const COLLECTS = {
  services: [...PROCESSORS, 'accounts'],
  secrets: secretsOf([...PROCESSORS, 'accounts']),
  settings: [...BUDGET_SETTINGS],
} satisfies Pick<FunctionManifest, 'services' | 'secrets' | 'settings'>;

export const FUNCTIONS = {
  'collections-job': {
    entry: 'src/functions/collections-job.ts',
    description: 'Finds due billing work on the due index and enqueues it',
    timeoutSeconds: 300,
    memoryMb: 1024,
    trigger: { kind: 'schedule' },
    tables: {
      // Due PENDING, FAILED and PAUSED periods (due-index); the failing and dunning gauges' counters
      // and the ACH return-rate counters (base-table Queries of their partitions).
      // Once a day, the held sweep: the held-index, each held period read with the user's instruments
      // item (TransactGetItems) and, when its user's instrument changed, put back due with its audit row.
      billingActivity: { read: ['get', 'query'], write: ['put'], indexes: [due, held], queryPartitions: [GAUGE_PARTITION, ACH_RATE_PARTITION] },
      billingActivityHistory: { write: ['put'] },
      instruments: { read: ['get'] },
      // Due RETRY loan payments (GSI2) and the loan payments' ACH return-rate counters.
      payments: { read: ['query'], indexes: [paymentsByStatus], queryPartitions: [ACH_RATE_PARTITION] },
      // The planner's single-flight lease (put, delete), the budget's throttle reports and quota factor (get,
      // update), and the processors' circuits, read before it enqueues (DESIGN 13, 15).
      locks: { read: ['get'], write: ['put', 'update'], delete: true },
    },
    sendsTo: COLLECTION_QUEUE_IDS,
    readsDepthOf: COLLECTION_QUEUE_IDS,
    services: ['accounts'],
    secrets: secretsOf(['accounts']),
    settings: ['COLLECTIONS_INTERVAL_SECONDS', ...BUDGET_SETTINGS],
  },
  'batch-worker': {
    entry: 'src/functions/batch-worker.ts',
    description: 'Runs one collection attempt per message of the collections queues (one per processor)',
    timeoutSeconds: 120,
    // Paced messages come due one by one: the window gathers them into batches whose users run in parallel (DESIGN 13).
    trigger: { kind: 'sqs', queue: COLLECTION_QUEUE_IDS, batchSize: 10, maxBatchingWindowSeconds: COLLECTION_BATCHING_WINDOW_SECONDS },
    tables: {
      ...ATTEMPT,
      // Loan payment retries with their audit rows (and the ACH counter, an UpdateItem ADD), and the
      // loan's recent payments (GSI4) for the holds.
      payments: { read: ['get'], write: ['put', 'update'], indexes: [byLoanCreated] },
    },
    ...COLLECTS,
  },
  'webhook-balance-worker': {
    entry: 'src/functions/webhook-balance-worker.ts',
    description: 'Collects a due record when a balance update opens the balance gate',
    timeoutSeconds: 60,
    trigger: { kind: 'sqs', queue: 'balanceEvents', batchSize: 10 },
    tables: {
      ...ATTEMPT,
      // The user's periods (a Query on the user's partition).
      billingActivity: { read: ['get', 'query'], write: ['put', 'update'] },
    },
    ...COLLECTS,
    settings: [...COLLECTS.settings, 'BALANCE_THRESHOLD_CENTS'],
  },
  // Settles by the reference's keys; never takes the lock: the record's version is the fence.
  'ach-handler': {
    entry: 'src/functions/ach-handler.ts',
    description: 'Applies signed ACH settlement, return, refund and chargeback outcomes',
    timeoutSeconds: 20,
    trigger: { kind: 'http' },
    tables: {
      // A return also adds to its day's ACH return-rate counter (UpdateItem ADD) in the same transaction.
      billingActivity: { read: ['get'], write: ['put', 'update'] },
      // An outcome for a transaction the period does not show: its audit rows (by subscription id)
      // tell an older entry's replay from a payment never owed.
      billingActivityHistory: { write: ['put'], indexes: [bySubscriptionId] },
      // The same question for a loan payment: its audit rows (a Query on the payment's partition).
      payments: { read: ['get', 'query'], write: ['put', 'update'] },
      // A return's hold on the instrument the entry debited (UpdateItem), whatever the period's write does.
      instruments: { write: ['update'] },
      // Every outcome's movement row, in its transaction, or alone when no record changes (DESIGN 14).
      moneyMovements: { write: ['put'] },
      // Each event claimed by id (`ach#{event_id}`), marked processed, or released (DESIGN 15).
      stripeEvents: { write: ['put', 'update'], delete: true },
    },
    secrets: ['achWebhook'],
  },
  // Applies changes to the user's chain; a reactivation collects synchronously.
  'memberships-consumer': {
    entry: 'src/functions/memberships-consumer.ts',
    description: 'Applies membership changes from the memberships Kinesis stream',
    timeoutSeconds: 120,
    trigger: { kind: 'kinesis', stream: 'memberships', batchSize: 100, retryAttempts: 10, maxRecordAgeHours: 24 },
    tables: {
      ...ATTEMPT,
      billingActivity: { read: ['get', 'query'], write: ['put', 'update'] },
    },
    ...COLLECTS,
    settings: [...COLLECTS.settings, 'MAX_PAYMENT_CENTS'],
  },
  // Claims each event; a checkout takes the user lock; the read-only Stripe key finds the
  // PaymentIntent behind charge and dispute events. It charges nothing, so it holds no charging key.
  'stripe-webhook': {
    entry: 'src/functions/stripe-webhook.ts',
    description: 'Claims and applies signed Stripe events',
    timeoutSeconds: 20,
    trigger: { kind: 'http' },
    tables: {
      stripeEvents: { write: ['put', 'update'], delete: true },
      // A card outcome that moves a period in or out of the failing or dunning gauge adds to their
      // counters in its transaction (UpdateItem ADD).
      billingActivity: { read: ['get', 'query'], write: ['put', 'update'] },
      // A success for a transaction the period does not show: its audit rows, by subscription id.
      billingActivityHistory: { write: ['put'], indexes: [bySubscriptionId] },
      locks: { write: ['put', 'update'], delete: true },
      // The user's Stripe card, kept current from checkout and the customer and payment_method events.
      instruments: { write: ['update'] },
      // Every card outcome's movement row, in its transaction, or alone when no record changes (DESIGN 14).
      moneyMovements: { write: ['put'] },
    },
    services: ['stripe'],
    secrets: ['stripeWebhook', 'stripeReadKey'],
    settings: ['MAX_PAYMENT_CENTS', ...BUDGET_SETTINGS],
  },
  api: {
    entry: 'src/functions/api.ts',
    description: 'Billing HTTP API (/v1)',
    timeoutSeconds: 29,
    memoryMb: 1024,
    trigger: { kind: 'http' },
    tables: {
      // Reads and lists (by user, by subscription id, ?billing=failing|exceptions|dunning), manual
      // pay and operator retry (the attempt), waive, and the due-date change (deletes the old period).
      billingActivity: { read: ['get', 'query'], write: ['put', 'update'], delete: true, indexes: [bySubscriptionId, failing, exceptions, dunning] },
      // The history endpoint (by subscription id) and the audit rows of every write.
      billingActivityHistory: { write: ['put'], indexes: [bySubscriptionId] },
      locks: { read: ['get'], write: ['put', 'update'], delete: true },
      // Loan payments: get, create, update; a loan's payments (GSI4), by status (GSI1), a payment's history rows (base Query).
      // The ACH debit a payment originates adds to its day's counter (UpdateItem ADD).
      payments: { read: ['get', 'query'], write: ['put', 'update'], indexes: [byLoanStatus, byLoanCreated] },
      // Bulk retry runs: the idempotency key and the run claimed together (puts), the phase moved
      // (updates), the items written (puts) and listed (a Query on the run's partition).
      retryRuns: { read: ['get', 'query'], write: ['put', 'update'] },
      // The instruments route, the attempts of manual pay and retry-billing, loan payments, an operator's release.
      instruments: { read: ['get'], write: ['update'] },
      // The debits manual pay, retry-billing and loan payments present (DESIGN 14).
      moneyMovements: { write: ['put'] },
      // The reconciliation routes: a day's runs (GetItem per rail), a run and its exceptions (Query), a
      // resolution (the pointer read; the exception updated and its open entry deleted in one transaction).
      reconciliation: { read: ['get', 'query'], write: ['update'], delete: true },
    },
    sendsTo: ['retryRuns'],
    ...COLLECTS,
    settings: [...COLLECTS.settings, 'MAX_PAYMENT_CENTS', 'USER_ID_CLAIM', 'API_CLIENT_SCOPES', 'PERSON_DAILY_DEBIT_LIMIT_CENTS'],
  },
  // Internet-facing and unauthenticated but for its HMAC: it holds only its own secret, claims each
  // event by id (`balance#{event_id}`: put, marked processed, or released on a failed send) and
  // enqueues it; the webhook-balance-worker collects. Its reserve caps what a flood can take.
  'balance-webhook': {
    entry: 'src/functions/balance-webhook.ts',
    description: 'Verifies, claims and enqueues signed balance webhook events',
    timeoutSeconds: 10,
    reservedConcurrency: 10,
    trigger: { kind: 'http' },
    tables: {
      stripeEvents: { write: ['put', 'update'], delete: true },
    },
    sendsTo: ['balanceEvents'],
    secrets: ['balanceWebhook'],
  },
  // retry-billing for each item of a bulk retry run: finds the period by subscription id, runs the
  // attempt, reads the period's newest audit rows when a delivery continues an earlier one, claims
  // and finishes the run's item (UpdateItem, the run's count in the same transaction).
  'retry-run-worker': {
    entry: 'src/functions/retry-run-worker.ts',
    description: 'Runs retry-billing for each item of a bulk retry run',
    timeoutSeconds: 120,
    trigger: { kind: 'sqs', queue: 'retryRuns', batchSize: 10 },
    tables: {
      ...ATTEMPT,
      billingActivity: { read: ['get'], write: ['put', 'update'], indexes: [bySubscriptionId] },
      billingActivityHistory: { write: ['put'], indexes: [bySubscriptionId] },
      retryRuns: { write: ['update'] },
    },
    ...COLLECTS,
    // An operator's bulk run is a person's debit too: each item counts against the member's daily cap.
    settings: [...COLLECTS.settings, 'PERSON_DAILY_DEBIT_LIMIT_CENTS'],
  },
  // The outbox of docs/design.md section 11: every audit row, as its stream delivers it, becomes the
  // events it names on the bus. It reads no table item, holds no secret, calls no service.
  'events-publisher': {
    entry: 'src/functions/events-publisher.ts',
    description: 'Publishes the billing events of each audit row (history table stream) on the billing bus',
    timeoutSeconds: 60,
    trigger: { kind: 'dynamodb-stream', table: 'billingActivityHistory', batchSize: 100, retryAttempts: 10, maxRecordAgeHours: 24 },
    tables: {},
    putsEventsOn: ['billing'],
  },
  // DESIGN 14: reads the day's money-movements rows (never the billing records) and the processors'
  // reports, writes only its own table; daily on the schedule, or invoked with {"date"}.
  'reconciliation-job': {
    entry: 'src/functions/reconciliation-job.ts',
    description: 'Reconciles what the processors moved with the money-movements rows, per rail and day',
    timeoutSeconds: 300,
    memoryMb: 1024,
    trigger: { kind: 'schedule' },
    // A large day hands over to its continuation near the timeout (DESIGN 14): one run per message.
    alsoConsumes: { kind: 'sqs', queue: 'reconciliation', batchSize: 1 },
    sendsTo: ['reconciliation'],
    tables: {
      moneyMovements: { read: ['query'] },
      // The run put; a new exception put with its pointer and open entry in one transaction, one seen
      // before updated (a resolution kept) with its pointer put again; the
      // checkpoint (GetItem, UpdateItem), the staged chunks and the debit index (PutItem, Query); the
      // open entries of each rail read for the gauges (Query); an
      // exception a later day's amendment explains leaves the open list (DeleteItem).
      reconciliation: { read: ['get', 'query'], write: ['put', 'update'], delete: true },
      // The processor budget's per-second counters (UpdateItem ADD, DESIGN 13): its report calls take tokens.
      locks: { write: ['update'] },
    },
    services: [...PROCESSORS],
    // Stripe's balance transactions are read with the read-only key; the payments report with the services' token.
    secrets: ['stripeReadKey', ...secretsOf(['payments'])],
    settings: [...BUDGET_SETTINGS, 'RECONCILIATION_MARGIN_SECONDS', 'RECONCILIATION_EXCEPTION_MAX_AGE_HOURS'],
    putsEventsOn: ['billing'],
  },
} as const satisfies Record<string, FunctionManifest>;

export type FunctionName = keyof typeof FUNCTIONS;
export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

export function manifestOf(name: FunctionName): FunctionManifest {
  return FUNCTIONS[name];
}

export function isFunctionName(name: string): name is FunctionName {
  return Object.hasOwn(FUNCTIONS, name);
}
