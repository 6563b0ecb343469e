import { createDynamoClient } from '../adapters/dynamodb/client.js';
import type { TableId, TableNames } from '../adapters/dynamodb/table-definitions.js';
import { EmfMetrics } from '../adapters/metrics/emf.js';
import { FUNCTIONS, type FunctionManifest, type FunctionName, isFunctionName, QUEUES, type QueueId, SECRETS, type SecretId, SERVICES, tablesOf } from '../manifest/index.js';
import type { AccountDirectory, PaymentProcessor, PaymentRequest } from '../domain/ports.js';
import { systemClock, uuidIds } from './compose.js';
import { functionDeps, notGranted } from './function-deps.js';
import { ConfigError, loadBaseConfig, loadRequired, loadTableNames } from './config.js';
import type { AppDeps, QueuePort, WebhookSecrets } from './deps.js';
import type { NeededAccess } from './grants.js';
import { createLogger } from './logger.js';
import { resolveSecrets } from './secrets.js';
import { assertWiring } from './wiring/check.js';
import type { Wiring } from './wiring/types.js';

/** The webhook secrets by manifest id (the Stripe API key goes to the Stripe SDK, not to handlers). */
const WEBHOOK_SECRETS: Partial<Record<SecretId, keyof WebhookSecrets>> = {
  stripeWebhook: 'stripeWebhook',
  achWebhook: 'achWebhook',
  balanceWebhook: 'balanceWebhook',
};

export { wiringFor } from './wiring/check.js';

export interface ProductionOptions {
  /** Sees every DynamoDB permission the function uses (tests). */
  readonly observeDynamo?: (tableId: TableId, needed: NeededAccess) => void;
}

/**
 * Production wiring for one function, from its manifest: config parsed once (a missing table
 * name, queue URL, service URL or secret fails the cold start); only the ports the manifest grants
 * are built, the others throw on use; DynamoDB requests outside the grants are refused before
 * they are sent. The heavy adapters come in through `wiring`, which must match the manifest.
 */
export async function productionDeps(
  functionName: string,
  wiring: Wiring,
  env: NodeJS.ProcessEnv = process.env,
  options: ProductionOptions = {},
): Promise<AppDeps> {
  if (!isFunctionName(functionName)) throw new ConfigError(`unknown function ${functionName}`);
  const name: FunctionName = functionName;
  const manifest: FunctionManifest = FUNCTIONS[name];
  assertWiring(name, manifest, wiring);

  const base = loadBaseConfig(env);
  const tableNames = loadTableNames(env, tablesOf(manifest)) as Partial<TableNames>;
  const queueUrls = loadRequired(env, (manifest.sendsTo ?? []).map((id) => QUEUES[id].urlEnv)) as Partial<Record<string, string>>;
  const services = new Set(manifest.services ?? []);
  const serviceUrls = loadRequired(
    env,
    [...(services.has('payments') ? [SERVICES.payments.urlEnv] : []), ...(services.has('accounts') ? [SERVICES.accounts.urlEnv] : [])],
  ) as Partial<Record<string, string>>;
  const secretIds = manifest.secrets ?? [];
  const secretValues = await resolveSecrets(
    env,
    secretIds.map((id) => SECRETS[id].env),
    base.DYNAMO_REGION,
    wiring.secretsManager,
  );
  const secretOf = (id: SecretId): string => secretValues[secretIds.indexOf(id)]!;

  const logger = createLogger({ level: base.LOG_LEVEL, base: { fn: name, stage: base.STAGE } });
  const client = createDynamoClient({ region: base.DYNAMO_REGION, ...(base.DYNAMO_ENDPOINT ? { endpoint: base.DYNAMO_ENDPOINT } : {}) });

  const secrets: Record<keyof WebhookSecrets, string> = { stripeWebhook: '', achWebhook: '', balanceWebhook: '' };
  for (const id of secretIds) {
    const webhook = WEBHOOK_SECRETS[id];
    if (webhook) secrets[webhook] = secretOf(id);
  }

  const sender = wiring.sqs?.({ region: base.DYNAMO_REGION, endpoint: base.SQS_ENDPOINT });
  const queue = (id: QueueId): QueuePort => {
    const url = queueUrls[QUEUES[id].urlEnv];
    return url && sender ? sender(url) : notGranted<QueuePort>(`the ${id} queue`, name);
  };

  const stripe = wiring.stripe?.(secretOf('stripeApiKey'));
  const http = wiring.paymentsService?.({ paymentsApiUrl: serviceUrls[SERVICES.payments.urlEnv] ?? '', accountsApiUrl: serviceUrls[SERVICES.accounts.urlEnv] ?? '' });
  let processor: PaymentProcessor = notGranted<PaymentProcessor>('the payment processor', name);
  if (stripe && http) {
    const rails: Record<PaymentRequest['rail'], PaymentProcessor> = { card: stripe.card, ach: http.rails, pinless: http.rails };
    processor = { submit: (request, signal) => rails[request.rail].submit(request, signal) };
  }
  const accounts: AccountDirectory = http?.accounts ?? notGranted<AccountDirectory>('the accounts service', name);

  return functionDeps(
    name,
    {
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
      ...(stripe ? { cardPayments: stripe.cardPayments } : {}),
    },
    {
      client,
      tables: tableNames,
      statusShardCount: base.STATUS_SHARD_COUNT,
      paymentShardCount: base.PAYMENT_SHARD_COUNT,
      ...(options.observeDynamo ? { observe: options.observeDynamo } : {}),
    },
  );
}
