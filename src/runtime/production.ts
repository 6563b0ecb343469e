import Stripe from 'stripe';
import { createDynamoClient } from '../adapters/dynamodb/client.js';
import type { TableId, TableNames } from '../adapters/dynamodb/table-definitions.js';
import { EmfMetrics } from '../adapters/metrics/emf.js';
import { HttpAccountDirectory, HttpPaymentsService, RailRouter } from '../adapters/payments-service/http-clients.js';
import { createSqsClient, SqsQueue } from '../adapters/sqs/queue.js';
import { StripePaymentIntentDirectory } from '../adapters/stripe/payment-directory.js';
import { StripeCardProcessor, StripeCustomerSearchResolver } from '../adapters/stripe/processor.js';
import type { AccountDirectory, PaymentProcessor } from '../domain/ports.js';
import { dynamoStores, systemClock, uuidIds } from './compose.js';
import { ConfigError, loadBaseConfig, loadRequired, loadTableNames } from './config.js';
import type { AppDeps, QueuePort, WebhookSecrets } from './deps.js';
import { createLogger } from './logger.js';
import { resolveSecret } from './secrets.js';

/** What each function needs at cold start; anything else it touches is a configuration error. */
interface FunctionNeeds {
  readonly tables: readonly TableId[];
  readonly queues: readonly ('COLLECTIONS_QUEUE_URL' | 'BALANCE_EVENTS_QUEUE_URL')[];
  readonly secrets: readonly (keyof WebhookSecrets)[];
  /** Runs the collection attempt: needs the processors and the accounts service. */
  readonly collects: boolean;
}

const ATTEMPT_TABLES = ['billingActivity', 'billingActivityHistory', 'locks'] as const;

export const FUNCTION_NEEDS: Record<string, FunctionNeeds> = {
  'collections-job': { tables: ['billingActivity'], queues: ['COLLECTIONS_QUEUE_URL'], secrets: [], collects: false },
  'batch-worker': { tables: ATTEMPT_TABLES, queues: [], secrets: [], collects: true },
  'webhook-balance-worker': { tables: ATTEMPT_TABLES, queues: [], secrets: [], collects: true },
  'ach-handler': { tables: ['billingActivity', 'billingActivityHistory', 'payments'], queues: [], secrets: ['achWebhook'], collects: false },
  'memberships-consumer': { tables: ATTEMPT_TABLES, queues: [], secrets: [], collects: true },
  'stripe-webhook': {
    tables: ['billingActivity', 'billingActivityHistory', 'locks', 'stripeEvents'],
    queues: [],
    secrets: ['stripeWebhook'],
    collects: false,
  },
  api: {
    tables: ['billingActivity', 'billingActivityHistory', 'locks', 'payments'],
    queues: ['BALANCE_EVENTS_QUEUE_URL'],
    secrets: ['balanceWebhook'],
    collects: true,
  },
};

const SECRET_ENV: Record<keyof WebhookSecrets, string> = {
  stripeWebhook: 'STRIPE_WEBHOOK_SECRET',
  achWebhook: 'ACH_WEBHOOK_SECRET',
  balanceWebhook: 'BALANCE_WEBHOOK_SECRET',
};

/** A dependency this function was not configured for: using it is a bug, reported loudly. */
function notConfigured<T extends object>(what: string, functionName: string): T {
  return new Proxy({} as T, {
    get: (_target, property) => {
      if (property === 'then') return undefined;
      return () => {
        throw new ConfigError(`${what} is not configured for ${functionName}`);
      };
    },
  });
}

/** Production wiring for one function: config parsed once; a missing table name or secret fails the cold start. */
export async function productionDeps(functionName: string, env: NodeJS.ProcessEnv = process.env): Promise<AppDeps> {
  const needs = FUNCTION_NEEDS[functionName];
  if (!needs) throw new ConfigError(`unknown function ${functionName}`);
  const base = loadBaseConfig(env);
  const tableNames = loadTableNames(env, needs.tables) as Partial<TableNames>;
  const queueUrls = loadRequired(env, needs.queues) as Partial<Record<string, string>>;
  const logger = createLogger({ level: base.LOG_LEVEL, base: { fn: functionName, stage: base.STAGE } });

  const client = createDynamoClient({ region: base.DYNAMO_REGION, ...(base.DYNAMO_ENDPOINT ? { endpoint: base.DYNAMO_ENDPOINT } : {}) });
  const placeholder = `unconfigured-${functionName}`;
  const stores = dynamoStores({
    client,
    tables: {
      billingActivity: tableNames.billingActivity ?? placeholder,
      billingActivityHistory: tableNames.billingActivityHistory ?? placeholder,
      locks: tableNames.locks ?? placeholder,
      payments: tableNames.payments ?? placeholder,
      stripeEvents: tableNames.stripeEvents ?? placeholder,
    },
    statusShardCount: base.STATUS_SHARD_COUNT,
    paymentShardCount: base.PAYMENT_SHARD_COUNT,
  });

  const secrets: Record<keyof WebhookSecrets, string> = { stripeWebhook: '', achWebhook: '', balanceWebhook: '' };
  for (const name of needs.secrets) secrets[name] = await resolveSecret(env, SECRET_ENV[name], base.DYNAMO_REGION);

  const sqs = needs.queues.length > 0 ? createSqsClient({ region: base.DYNAMO_REGION, endpoint: base.SQS_ENDPOINT }) : undefined;
  const queue = (name: 'COLLECTIONS_QUEUE_URL' | 'BALANCE_EVENTS_QUEUE_URL'): QueuePort => {
    const url = queueUrls[name];
    return url && sqs ? new SqsQueue(sqs, url) : notConfigured<QueuePort>(name, functionName);
  };

  let processor: PaymentProcessor = notConfigured<PaymentProcessor>('the payment processor', functionName);
  let accounts: AccountDirectory = notConfigured<AccountDirectory>('the accounts service', functionName);
  let stripe: Stripe | undefined;
  if (needs.collects || functionName === 'stripe-webhook') {
    stripe = new Stripe(await resolveSecret(env, 'STRIPE_API_KEY', base.DYNAMO_REGION), { maxNetworkRetries: 1, timeout: 10_000 });
  }
  if (needs.collects) {
    const services = loadRequired(env, ['PAYMENTS_API_URL', 'ACCOUNTS_API_URL'] as const);
    const rails = new HttpPaymentsService(services.PAYMENTS_API_URL);
    processor = new RailRouter({
      ach: rails,
      pinless: rails,
      card: new StripeCardProcessor({ stripe: stripe!, customers: new StripeCustomerSearchResolver(stripe!) }),
    });
    accounts = new HttpAccountDirectory(services.ACCOUNTS_API_URL);
  }

  return {
    ...stores,
    clock: systemClock,
    wallClock: systemClock,
    ids: uuidIds,
    logger,
    processor,
    accounts,
    collectionsQueue: queue('COLLECTIONS_QUEUE_URL'),
    balanceEventsQueue: queue('BALANCE_EVENTS_QUEUE_URL'),
    metrics: new EmfMetrics(),
    secrets,
    settings: {
      stage: base.STAGE,
      balanceThresholdCents: base.BALANCE_THRESHOLD_CENTS,
      maxPaymentCents: base.MAX_PAYMENT_CENTS,
    },
    ...(stripe ? { cardPayments: new StripePaymentIntentDirectory(stripe) } : {}),
  };
}
