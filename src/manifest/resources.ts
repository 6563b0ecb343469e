/**
 * The shared resources a function can be granted, by id: queues, streams, secrets and outside
 * services, with the environment variable that carries each to the function. The tables (keys,
 * indexes, their environment variables) are `src/adapters/dynamodb/table-definitions.ts`.
 *
 * Pure data: nothing here imports an SDK, the CDK or a handler, so the CDK app, the Lambda wiring,
 * the local runtime and the tests can all read it.
 */
import type { ProcessorId } from '../domain/processor-budget.js';

/** SQS queues: what the functions send to or consume. */
export const QUEUES = {
  collectionsStripe: { urlEnv: 'COLLECTIONS_STRIPE_QUEUE_URL', holds: 'one collection attempt per message on the stripe processor (a card period)' },
  collectionsPayments: { urlEnv: 'COLLECTIONS_PAYMENTS_QUEUE_URL', holds: 'one collection attempt per message on the payments processor (an ACH or pinless period, or a loan payment retry)' },
  balanceEvents: { urlEnv: 'BALANCE_EVENTS_QUEUE_URL', holds: 'verified balance webhook events' },
  retryRuns: { urlEnv: 'RETRY_RUNS_QUEUE_URL', holds: 'one item of a bulk retry run per message (retry-billing for one period)' },
  reconciliation: { urlEnv: 'RECONCILIATION_QUEUE_URL', holds: 'continuations of reconciliation runs: one rail and day resumed from its checkpoint per message' },
} as const;
export type QueueId = keyof typeof QUEUES;

/**
 * One collections queue per processor (DESIGN 13), so each has its own event source, cap and depth:
 * a due record's message goes to the queue of the processor that runs its rail.
 */
export const COLLECTION_QUEUES = { stripe: 'collectionsStripe', payments: 'collectionsPayments' } as const satisfies Record<ProcessorId, QueueId>;
export const COLLECTION_QUEUE_IDS: readonly QueueId[] = Object.values(COLLECTION_QUEUES);

/** EventBridge buses a function puts events on (`billing-<stage>`, docs/design.md section 11). */
export const BUSES = {
  billing: { nameEnv: 'EVENT_BUS_NAME', holds: 'the billing events of docs/design.md section 11, for the rest of the business' },
} as const;
export type BusId = keyof typeof BUSES;

/** Kinesis streams a function consumes. */
export const STREAMS = {
  memberships: { holds: 'membership changes (NEW, PAUSE, CANCEL, ...) from the memberships service' },
} as const;
export type StreamId = keyof typeof STREAMS;

/**
 * Secrets, read at cold start: the value itself in `env` (local runtime, tests) or its ARN in
 * `{env}_ARN`, resolved once from Secrets Manager (AWS; the CDK sets only the ARN).
 */
export const SECRETS = {
  // Restricted keys per need (docs/security.md): the collectors' key charges; the read key only reads.
  stripeApiKey: { env: 'STRIPE_API_KEY', name: 'stripe-api-key', holds: 'the Stripe restricted key that charges (PaymentIntents write; Customers, PaymentMethods, Refunds read)' },
  stripeReadKey: { env: 'STRIPE_READ_KEY', name: 'stripe-read-key', holds: 'the Stripe restricted key that only reads (PaymentIntents, Customers, PaymentMethods, balance transactions)' },
  servicesClient: {
    env: 'SERVICES_CLIENT_CREDENTIALS',
    name: 'services-client-credentials',
    holds: 'the OAuth client credentials ({"client_id","client_secret"}) the payments and accounts services issued to billing',
  },
  stripeWebhook: { env: 'STRIPE_WEBHOOK_SECRET', name: 'stripe-webhook-secret', holds: 'the Stripe webhook endpoint signing secret (whsec_...)' },
  achWebhook: { env: 'ACH_WEBHOOK_SECRET', name: 'ach-webhook-secret', holds: 'the ACH webhook HMAC secret' },
  balanceWebhook: { env: 'BALANCE_WEBHOOK_SECRET', name: 'balance-webhook-secret', holds: 'the balance webhook HMAC secret' },
} as const;
export type SecretId = keyof typeof SECRETS;

/** The payment rails a charge is submitted on (a period's or a loan payment's payment method). */
export const RAILS = ['card', 'ach', 'pinless'] as const;
export type Rail = (typeof RAILS)[number];

/**
 * Outside services a function calls. A payment processor is a service with `rails`: the rails it
 * charges on, each run by exactly one processor (test/runtime/processors.test.ts). `stripe` is the
 * Stripe SDK (card charges, PaymentIntent lookups, webhook signatures) and needs the API key; the
 * payments service runs the ACH and pinless rails; the accounts service names a user's accounts.
 * Adding a processor: its entry here, its adapter, its wiring in src/runtime/wiring/collecting.ts.
 */
export const SERVICES = {
  stripe: { secrets: ['stripeApiKey'] as readonly SecretId[], readOnlySecrets: ['stripeReadKey'] as readonly SecretId[], rails: ['card'] as readonly Rail[] },
  // Both called with a client-credentials token from SERVICES_TOKEN_URL (docs/security.md).
  payments: { urlEnv: 'PAYMENTS_API_URL', tokenUrlEnv: 'SERVICES_TOKEN_URL', secrets: ['servicesClient'] as readonly SecretId[], rails: ['ach', 'pinless'] as readonly Rail[] },
  accounts: { urlEnv: 'ACCOUNTS_API_URL', tokenUrlEnv: 'SERVICES_TOKEN_URL', secrets: ['servicesClient'] as readonly SecretId[] },
} as const;
export type ServiceId = keyof typeof SERVICES;

/** What one service entry may hold: the secrets it needs, its URL's variable, the rails it charges on. */
export interface ServiceEntry {
  readonly secrets?: readonly SecretId[];
  /** What a function that only reads from the service holds instead of `secrets` (a read-only key). */
  readonly readOnlySecrets?: readonly SecretId[];
  readonly urlEnv?: string;
  /** The OAuth token endpoint's variable (an `https:` URL), for a service called with a client-credentials token. */
  readonly tokenUrlEnv?: string;
  readonly rails?: readonly Rail[];
}

/** The payment processors, in a stable order: every service that charges on a rail. */
export const PROCESSORS = (Object.keys(SERVICES) as ServiceId[]).filter((id) => ((SERVICES[id] as ServiceEntry).rails ?? []).length > 0);

/** Settings only some functions read, by environment variable. */
export type SettingEnv =
  /** The balance gate (webhook-balance-worker). */
  | 'BALANCE_THRESHOLD_CENTS'
  /** The largest payment a path may create: loan payments (api), NEW plans (memberships-consumer), checkouts (stripe-webhook). */
  | 'MAX_PAYMENT_CENTS'
  /** The processors' budgets in requests per second, and the share reserved for paths people start (DESIGN 13): every function that calls a processor. */
  | 'STRIPE_BUDGET_PER_SECOND'
  | 'PAYMENTS_BUDGET_PER_SECOND'
  | 'PROCESSOR_PERSON_SHARE'
  /** The collections schedule's interval in seconds: the paced planner's window (collections-job). */
  | 'COLLECTIONS_INTERVAL_SECONDS'
  /** The JWT claim a member token's user id is read from (api; default `sub`). */
  | 'USER_ID_CLAIM'
  /** Which client (the token's `client_id` or `azp`) may use which scope, as JSON (api; `{}`: not checked). */
  | 'API_CLIENT_SCOPES'
  /** Seconds before its timeout at which the reconciliation-job hands a run over to its continuation (default 60). */
  | 'RECONCILIATION_MARGIN_SECONDS'
  /** Hours a new reconciliation exception may stay unresolved before its alarm (reconciliation-job; default 72). */
  | 'RECONCILIATION_EXCEPTION_MAX_AGE_HOURS'
  /** The daily cap per member on debits people start: manual pay, retry-billing, loan payments (api; DESIGN 15). */
  | 'PERSON_DAILY_DEBIT_LIMIT_CENTS';

/** The budget settings, named by every function that calls a processor and by the planner. */
export const BUDGET_SETTINGS = ['STRIPE_BUDGET_PER_SECOND', 'PAYMENTS_BUDGET_PER_SECOND', 'PROCESSOR_PERSON_SHARE'] as const satisfies readonly SettingEnv[];
