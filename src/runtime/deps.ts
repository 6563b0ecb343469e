import type { InstrumentStore } from '../domain/ports/instruments.js';
import type { IdGenerator } from '../domain/billing-record.js';
import type { CardPaymentDirectory } from '../domain/card-outcomes.js';
import type { AccountDirectory } from '../domain/ports/account-directory.js';
import type { BillingStore } from '../domain/ports/billing-store.js';
import type { ProcessorCircuits } from '../domain/ports/circuits.js';
import type { Clock } from '../domain/ports/clock.js';
import type { MetricsPort } from '../domain/ports/gauges.js';
import type { PaymentsStore } from '../domain/ports/loan-payments.js';
import type { LockStore } from '../domain/ports/locks.js';
import type { MoneyMovementStore } from '../domain/ports/money-movements.js';
import type { ProcessorReport } from '../domain/ports/processor-report.js';
import type { ReconciliationEvents, ReconciliationStore } from '../domain/ports/reconciliation.js';
import type { PaymentMethod } from '../domain/records.js';
import type { PaymentProcessor } from '../domain/ports/processor.js';
import type { QueuePort } from '../domain/ports/queue.js';
import type { RetryRunStore } from '../domain/ports/retry-runs.js';
import type { StripeEventStore } from '../domain/ports/stripe-events.js';
import type { ProcessorBudgetSettings, ProcessorId } from '../domain/processor-budget.js';
import type { ProcessorBudgetStore } from '../domain/ports/processor-budget.js';
import type { Logger } from './logger.js';
import type { ProcessorLimiter } from './processor-limiter.js';
import type { PersonDebitCap } from '../domain/person-debits.js';

// The queue and metrics ports live with the others in src/domain/ports/; re-exported for the wiring.
export type { MetricsPort } from '../domain/ports/gauges.js';
export type { QueueMessage, QueuePort } from '../domain/ports/queue.js';

export interface WebhookSecrets {
  readonly stripeWebhook: string;
  readonly achWebhook: string;
  readonly balanceWebhook: string;
}

export interface Settings {
  readonly stage: string;
  /** Balance-webhook gate: minimum observed balance before a collection is tried. */
  readonly balanceThresholdCents: number;
  /** The largest payment any path may create (MAX_PAYMENT_CENTS); the rule is src/domain/payment-maximum.ts. */
  readonly maxPaymentCents: number;
  /** The JWT claim a member token's user id is read from (USER_ID_CLAIM; default `sub`, DESIGN 8). */
  readonly userIdClaim?: string;
  /** Which client may use which scope (API_CLIENT_SCOPES), by `client_id` or `azp`; absent: not checked. */
  readonly clientScopes?: Readonly<Record<string, readonly string[]>>;
  readonly lockLeaseMs?: number;
  readonly lockHeartbeatMs?: number;
  /** How far the account directory's clock may run behind ours (default ACCOUNT_CLOCK_SKEW_MS); tests on one clock set 0. */
  readonly accountClockSkewMs?: number;
  /** The processors' budgets (DESIGN 13); absent: no limiter (the local runtime without budgets set). */
  readonly processorBudget?: ProcessorBudgetSettings;
  /** The collections schedule's interval in seconds (COLLECTIONS_INTERVAL_SECONDS): the paced planner's window. */
  readonly collectionsIntervalSeconds?: number;
  /** How long a processor outage keeps its circuit open (default CIRCUIT_OPEN_MS, src/runtime/circuits.ts). */
  readonly circuitOpenMs?: number;
  /** How long before its timeout the reconciliation-job hands a run over (RECONCILIATION_MARGIN_SECONDS). */
  readonly reconciliationMarginMs?: number;
  /** Hours a new reconciliation exception may stay open before its alarm (RECONCILIATION_EXCEPTION_MAX_AGE_HOURS; default 72). */
  readonly reconciliationExceptionMaxAgeHours?: number;
  /** The daily cap on debits people start, per member (PERSON_DAILY_DEBIT_LIMIT_CENTS; default DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS). */
  readonly personDailyDebitLimitCents?: number;
}

/**
 * Everything a handler may use, as one function's manifest grants it (functionDeps, built once per
 * cold start, local runtime or test app). Handlers are created from it by `create*Handler(deps)`.
 */
export interface AppDeps {
  /** Business time: due dates, leases, history stamps. Simulated in the local runtime. */
  readonly clock: Clock;
  /**
   * Wall-clock time, for webhook signature tolerances only (DESIGN 9): real senders sign with the
   * real clock whatever the simulated business time is. The system clock in production and locally.
   */
  readonly wallClock: Clock;
  readonly ids: IdGenerator;
  readonly logger: Logger;
  readonly billing: BillingStore;
  readonly locks: LockStore;
  readonly payments: PaymentsStore;
  readonly stripeEvents: StripeEventStore;
  /** ACH and balance webhook events claimed by id (DESIGN 15), like Stripe's. */
  readonly achEventClaims: StripeEventStore;
  readonly balanceEventClaims: StripeEventStore;
  readonly processor: PaymentProcessor;
  readonly accounts: AccountDirectory;
  /** The collections queues, one per processor (DESIGN 13): a message goes to its processor's (processorOfMessage). */
  readonly collectionQueues: Readonly<Record<ProcessorId, QueuePort>>;
  readonly balanceEventsQueue: QueuePort;
  /** Bulk retry runs (DESIGN 8): their store, and the queue that fans their items out to the retry-run-worker. */
  readonly retryRuns: RetryRunStore;
  readonly retryRunsQueue: QueuePort;
  /** The reconciliation-job's own queue: a run near the timeout sends its continuation there (DESIGN 14). */
  readonly reconciliationQueue?: QueuePort;
  /** The users' instruments and their holds (DESIGN 3.2), apart from an attempt's own read and write. */
  readonly instruments: InstrumentStore;
  /** money-movements (DESIGN 14): written inside the effects' transactions; read by the reconciliation job. */
  readonly movements: MoneyMovementStore;
  /** Reconciliation (DESIGN 14): its runs and exceptions, the processors' reports by rail, and its events. */
  readonly reconciliation: ReconciliationStore;
  readonly processorReports?: Partial<Record<PaymentMethod, ProcessorReport>>;
  readonly reconciliationEvents?: ReconciliationEvents;
  readonly metrics: MetricsPort;
  readonly secrets: WebhookSecrets;
  readonly settings: Settings;
  /** The shared per-processor limiter every processor call takes a token from; present iff budgets are set and the function calls a processor. */
  readonly processorLimiter?: ProcessorLimiter;
  /** The budget's counters, for the planner's quota (its throttle reports); present iff budgets are set and the manifest grants the locks table's updates. */
  readonly processorBudgetStore?: ProcessorBudgetStore;
  /** Finds a PaymentIntent's billing record for Stripe events that do not carry its metadata (disputes). Optional: without it such events are logged and skipped. */
  readonly cardPayments?: CardPaymentDirectory;
  /** The processors' circuits (DESIGN 15), for a function granted to read them (GetItem on the locks table). */
  readonly circuits?: ProcessorCircuits;
  /** The daily cap on debits people start (DESIGN 15), for a function whose manifest names its setting. */
  readonly personDebits?: PersonDebitCap;
}
