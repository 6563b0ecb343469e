import { createDynamoClient } from '../adapters/dynamodb/client.js';
import type { TableId, TableNames } from '../adapters/dynamodb/table-definitions.js';
import { EmfMetrics } from '../adapters/metrics/emf.js';
import type { ProcessorReport } from '../domain/ports/processor-report.js';
import type { ReconciliationEvents } from '../domain/ports/reconciliation.js';
import { lazily } from './wiring/types.js';
import {
  BUSES,
  COLLECTION_QUEUES,
  FUNCTIONS,
  isFunctionName,
  QUEUES,
  SECRETS,
  SERVICES,
  tablesOf,
  type FunctionManifest,
  type FunctionName,
  type QueueId,
  type Rail,
  type SecretId,
  type ServiceEntry,
  type ServiceId,
} from '../manifest/index.js';
import { systemClock, uuidIds } from './compose.js';
import { apiAuthSettings, personDebitLimitSetting, reconciliationSettings, ConfigError, isPlaceholderSecret, loadBaseConfig, loadRequired, loadTableNames, serviceUrl, type BaseConfig } from './config.js';
import type { AppDeps, QueuePort } from './deps.js';
import { functionDeps, notGranted, type SharedDeps } from './function-deps.js';
import type { NeededAccess } from './grants.js';
import { createLogger } from './logger.js';
import { processorByRail } from './processors.js';
import { budgetSettingsFrom, intervalSetting, reconciliationMargin } from './processor-budget.js';
import { resolveSecrets } from './secrets.js';
import { assertWiring } from './wiring/check.js';
import type { ServiceClients, Wiring } from './wiring/types.js';

export { wiringFor } from './wiring/check.js';

export interface ProductionOptions {
  /** Sees every DynamoDB permission the function uses (tests). */
  readonly observeDynamo?: (tableId: TableId, needed: NeededAccess) => void;
}

type Urls = Partial<Record<string, string>>;

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
  const queueUrls = loadRequired(env, (manifest.sendsTo ?? []).map((id) => QUEUES[id].urlEnv)) as Urls;
  const serviceUrls = loadRequired(env, [...new Set((manifest.services ?? []).flatMap((id) => urlEnvsOf(id)))]) as Urls;
  for (const [name, url] of Object.entries(serviceUrls)) serviceUrl(name, url!);
  const secretOf = await loadSecrets(manifest, env, base.DYNAMO_REGION, wiring);
  // Only dev goes live with the stack's placeholders; any other stage refuses to start on one.
  if (base.STAGE !== 'dev') {
    const unset = (manifest.secrets ?? []).filter((id) => isPlaceholderSecret(secretOf(id)));
    if (unset.length > 0) throw new ConfigError(`invalid configuration: ${unset.map((id) => SECRETS[id].env).join(', ')} still hold a placeholder; put the real value (docs/security.md)`);
  }
  const clients = serviceClients(manifest, wiring, serviceUrls, secretOf);
  const webhookSecret = (id: SecretId) => ((manifest.secrets ?? []).includes(id) ? secretOf(id) : '');
  const cardPayments = provided(clients, 'cardPayments');

  const shared: SharedDeps = {
    clock: systemClock,
    wallClock: systemClock,
    ids: uuidIds,
    logger: createLogger({ level: base.LOG_LEVEL, base: { fn: name, stage: base.STAGE } }),
    processor: processorByRail(clients) ?? notGranted('the payment processor', name),
    accounts: provided(clients, 'accounts') ?? notGranted('the accounts service', name),
    ...queues(name, base, queueUrls, wiring),
    metrics: new EmfMetrics(),
    secrets: { stripeWebhook: webhookSecret('stripeWebhook'), achWebhook: webhookSecret('achWebhook'), balanceWebhook: webhookSecret('balanceWebhook') },
    settings: {
      stage: base.STAGE,
      balanceThresholdCents: base.BALANCE_THRESHOLD_CENTS,
      maxPaymentCents: base.MAX_PAYMENT_CENTS,
      // Deployed, every processor call is budgeted (the defaults apply when a setting is absent).
      processorBudget: budgetSettingsFrom(env, true)!,
      ...intervalSetting(env),
      ...reconciliationMargin(env),
      ...apiAuthSettings(env),
      ...reconciliationSettings(env),
      ...(manifest.settings?.includes('PERSON_DAILY_DEBIT_LIMIT_CENTS') ? { personDailyDebitLimitCents: personDebitLimitSetting(env) } : {}),
    },
    ...(cardPayments ? { cardPayments } : {}),
    ...reconciliationPorts(name, manifest, env, base, clients),
  };
  return functionDeps(name, shared, {
    client: createDynamoClient({ region: base.DYNAMO_REGION, ...(base.DYNAMO_ENDPOINT ? { endpoint: base.DYNAMO_ENDPOINT } : {}) }),
    tables: tableNames,
    statusShardCount: base.STATUS_SHARD_COUNT,
    paymentShardCount: base.PAYMENT_SHARD_COUNT,
    ...(options.observeDynamo ? { observe: options.observeDynamo } : {}),
  });
}

/** The reconciliation-job's processor reports (by the rails each service runs) and its events on the billing bus, loaded on first use. */
function reconciliationPorts(name: FunctionName, manifest: FunctionManifest, env: NodeJS.ProcessEnv, base: BaseConfig, clients: Partial<Record<ServiceId, ServiceClients>>): Partial<SharedDeps> {
  if (name !== 'reconciliation-job') return {};
  const reports: Partial<Record<Rail, ProcessorReport>> = {};
  for (const [id, built] of Object.entries(clients) as [ServiceId, ServiceClients | undefined][]) {
    for (const rail of (SERVICES[id] as ServiceEntry).rails ?? []) if (built?.report) reports[rail] = built.report;
  }
  if (!(manifest.putsEventsOn ?? []).includes('billing')) return { processorReports: reports };
  const busName = loadRequired(env, [BUSES.billing.nameEnv] as const)[BUSES.billing.nameEnv];
  const load = lazily(async () => {
    const [{ createEventBridgeClient }, { EventBridgeReconciliationEvents }] = await Promise.all([
      import('../adapters/eventbridge/event-bus.js'),
      import('../adapters/eventbridge/reconciliation-events.js'),
    ]);
    return new EventBridgeReconciliationEvents(createEventBridgeClient({ region: base.DYNAMO_REGION, endpoint: env.EVENTBRIDGE_ENDPOINT || undefined }), busName);
  });
  const events: ReconciliationEvents = { completed: async (run) => (await load()).completed(run), exception: async (e) => (await load()).exception(e) };
  return { processorReports: reports, reconciliationEvents: events };
}

/** A service's base URL and its token endpoint's, each an `https:` URL at cold start. */
function urlEnvsOf(id: ServiceId): string[] {
  const { urlEnv, tokenUrlEnv } = SERVICES[id] as ServiceEntry;
  return [urlEnv, tokenUrlEnv].filter((name): name is string => name !== undefined);
}

/** The function's secrets, each read once: by value from the environment, or by ARN through Secrets Manager. */
async function loadSecrets(manifest: FunctionManifest, env: NodeJS.ProcessEnv, region: string, wiring: Wiring): Promise<(id: SecretId) => string> {
  const ids = manifest.secrets ?? [];
  const values = await resolveSecrets(env, ids.map((id) => SECRETS[id].env), region, wiring.secretsManager);
  return (id) => {
    const at = ids.indexOf(id);
    if (at < 0) throw new ConfigError(`${id} is not a secret of this function's manifest`);
    return values[at]!;
  };
}

/** Each manifest service's clients, built by the wiring the entry handed over for it. */
function serviceClients(manifest: FunctionManifest, wiring: Wiring, urls: Urls, secret: (id: SecretId) => string): Partial<Record<ServiceId, ServiceClients>> {
  return Object.fromEntries(
    (manifest.services ?? []).map((id) => {
      const { urlEnv, tokenUrlEnv } = SERVICES[id] as ServiceEntry;
      const granted = (secretId: SecretId) => (manifest.secrets ?? []).includes(secretId);
      return [id, wiring.services![id]!({ url: urlEnv ? urls[urlEnv]! : '', ...(tokenUrlEnv ? { tokenUrl: urls[tokenUrlEnv]! } : {}), secret, granted })];
    }),
  );
}

/** The one client of a kind the services provide (the accounts directory, card payment lookups), if any does. */
function provided<K extends keyof ServiceClients>(clients: Partial<Record<ServiceId, ServiceClients>>, kind: K): ServiceClients[K] | undefined {
  return Object.values(clients).find((built) => built?.[kind] !== undefined)?.[kind];
}

/** The queues it sends to, through the SQS wiring; the others throw on use. */
function queues(name: FunctionName, base: BaseConfig, urls: Urls, wiring: Wiring): Pick<SharedDeps, 'collectionQueues' | 'balanceEventsQueue' | 'retryRunsQueue' | 'reconciliationQueue'> {
  const sender = wiring.sqs?.({ region: base.DYNAMO_REGION, endpoint: base.SQS_ENDPOINT });
  const queue = (id: QueueId): QueuePort => {
    const url = urls[QUEUES[id].urlEnv];
    return url && sender ? sender(url) : notGranted<QueuePort>(`the ${id} queue`, name);
  };
  const collectionQueues = { stripe: queue(COLLECTION_QUEUES.stripe), payments: queue(COLLECTION_QUEUES.payments) };
  return { collectionQueues, balanceEventsQueue: queue('balanceEvents'), retryRunsQueue: queue('retryRuns'), reconciliationQueue: queue('reconciliation') };
}
