import Stripe from 'stripe';
import { createDynamoClient } from '../adapters/dynamodb/client.js';
import type { TableNames } from '../adapters/dynamodb/table-definitions.js';
import { FUNCTIONS, type FunctionManifest, isFunctionName, QUEUES, type QueueId, SECRETS, type SecretId, tablesOf } from '../manifest/index.js';
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

/** The webhook secrets by manifest id (the Stripe API key goes to the Stripe SDK, not to handlers). */
const WEBHOOK_SECRETS: Partial<Record<SecretId, keyof WebhookSecrets>> = {
  stripeWebhook: 'stripeWebhook',
  achWebhook: 'achWebhook',
  balanceWebhook: 'balanceWebhook',
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
  if (!isFunctionName(functionName)) throw new ConfigError(`unknown function ${functionName}`);
  const manifest: FunctionManifest = FUNCTIONS[functionName];
  const services = new Set(manifest.services ?? []);
  const base = loadBaseConfig(env);
  const tableNames = loadTableNames(env, tablesOf(manifest)) as Partial<TableNames>;
  const queueUrls = loadRequired(env, (manifest.sendsTo ?? []).map((id) => QUEUES[id].urlEnv)) as Partial<Record<string, string>>;
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
      retryRuns: tableNames.retryRuns ?? placeholder,
    },
    statusShardCount: base.STATUS_SHARD_COUNT,
    paymentShardCount: base.PAYMENT_SHARD_COUNT,
  });

  const secrets: Record<keyof WebhookSecrets, string> = { stripeWebhook: '', achWebhook: '', balanceWebhook: '' };
  await Promise.all(
    (manifest.secrets ?? []).flatMap((id) => {
      const name = WEBHOOK_SECRETS[id];
      return name ? [resolveSecret(env, SECRETS[id].env, base.DYNAMO_REGION).then((value) => (secrets[name] = value))] : [];
    }),
  );

  const sqs = (manifest.sendsTo ?? []).length > 0 ? createSqsClient({ region: base.DYNAMO_REGION, endpoint: base.SQS_ENDPOINT }) : undefined;
  const queue = (id: QueueId): QueuePort => {
    const url = queueUrls[QUEUES[id].urlEnv];
    return url && sqs ? new SqsQueue(sqs, url) : notConfigured<QueuePort>(`the ${id} queue`, functionName);
  };

  let processor: PaymentProcessor = notConfigured<PaymentProcessor>('the payment processor', functionName);
  let accounts: AccountDirectory = notConfigured<AccountDirectory>('the accounts service', functionName);
  let stripe: Stripe | undefined;
  if (services.has('stripe')) {
    stripe = new Stripe(await resolveSecret(env, SECRETS.stripeApiKey.env, base.DYNAMO_REGION), { maxNetworkRetries: 1, timeout: 10_000 });
  }
  if (services.has('payments') && services.has('accounts')) {
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
    collectionsQueue: queue('collections'),
    balanceEventsQueue: queue('balanceEvents'),
    retryRunsQueue: queue('retryRuns'),
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
