import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableId, TableNames } from '../adapters/dynamodb/table-definitions.js';
import { COLLECTION_QUEUES, FUNCTIONS, type FunctionManifest, type FunctionName, type QueueId, type SecretId } from '../manifest/index.js';
import { DynamoCircuitStore } from '../adapters/dynamodb/circuit-store.js';
import { CircuitBreaker } from './circuits.js';
import { dynamoStores, type DynamoStores } from './compose.js';
import { ConfigError, DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS } from './config.js';
import { DynamoPersonDebitStore } from '../adapters/dynamodb/person-debit-store.js';
import type { AppDeps } from './deps.js';
import { guardedClient, type NeededAccess } from './grants.js';
import { callsProcessorOf, chargesEveryRail } from './processors.js';
import { limiterFor } from './processor-budget.js';
import { DynamoProcessorBudgetStore } from '../adapters/dynamodb/processor-budget-store.js';
import { limitedCardPayments, limitedProcessor, type ProcessorLimiter } from './processor-limiter.js';

/** What every function of one environment shares before its manifest narrows it: everything but the stores. */
export type SharedDeps = Omit<AppDeps, 'billing' | 'locks' | 'payments' | 'stripeEvents' | 'achEventClaims' | 'balanceEventClaims' | 'retryRuns' | 'instruments' | 'movements' | 'reconciliation' | 'processorLimiter' | 'processorBudgetStore' | 'circuits' | 'personDebits'>;

/** `deps` without its stores: what each function's deps are built from. */
export function sharedDeps(deps: AppDeps): SharedDeps {
  const { billing: _billing, locks: _locks, payments: _payments, stripeEvents: _stripeEvents, achEventClaims: _achEventClaims, balanceEventClaims: _balanceEventClaims, retryRuns: _retryRuns, instruments: _instruments, movements: _movements, reconciliation: _reconciliation, circuits: _circuits, personDebits: _personDebits, ...shared } = deps;
  return shared;
}

export interface FunctionDynamo {
  /** The environment's client; each function gets a guarded view of it. */
  readonly client: DynamoDBClient;
  readonly tables: Partial<TableNames>;
  readonly statusShardCount?: number;
  readonly paymentShardCount?: number;
  /** Sees every DynamoDB permission the function uses. */
  readonly observe?: (tableId: TableId, needed: NeededAccess) => void;
}

/** A port the function's manifest does not grant: using it is a bug, reported loudly. */
export function notGranted<T extends object>(what: string, functionName: string): T {
  return new Proxy({} as T, {
    get: (_target, property) => {
      if (property === 'then') return undefined;
      return () => {
        throw new ConfigError(`${what} is not granted to ${functionName} by its manifest`);
      };
    },
  });
}

const STORE_TABLES = {
  billing: 'billingActivity',
  locks: 'locks',
  payments: 'payments',
  stripeEvents: 'stripeEvents',
  achEventClaims: 'stripeEvents',
  balanceEventClaims: 'stripeEvents',
  retryRuns: 'retryRuns',
  instruments: 'instruments',
  movements: 'moneyMovements',
  reconciliation: 'reconciliation',
} as const satisfies Record<string, TableId>;

const QUEUE_PORTS = { balanceEventsQueue: 'balanceEvents', retryRunsQueue: 'retryRuns' } as const satisfies Record<string, QueueId>;

/**
 * One function's deps, as its manifest grants them, in every environment (production, `npm
 * start`, the tests): the stores on a client guarded with the manifest, every port it does not
 * grant replaced by one that throws, the secrets it does not hold blank.
 */
export function functionDeps(name: FunctionName, shared: SharedDeps, dynamo: FunctionDynamo): AppDeps {
  const manifest: FunctionManifest = FUNCTIONS[name];
  const placeholder = `not-granted-to-${name}`;
  const client = guardedClient(dynamo.client, name, manifest, dynamo.tables, dynamo.observe);
  const stores = dynamoStores({
    client,
    tables: {
      billingActivity: dynamo.tables.billingActivity ?? placeholder,
      billingActivityHistory: dynamo.tables.billingActivityHistory ?? placeholder,
      locks: dynamo.tables.locks ?? placeholder,
      payments: dynamo.tables.payments ?? placeholder,
      stripeEvents: dynamo.tables.stripeEvents ?? placeholder,
      retryRuns: dynamo.tables.retryRuns ?? placeholder,
      instruments: dynamo.tables.instruments ?? placeholder,
      moneyMovements: dynamo.tables.moneyMovements ?? placeholder,
      reconciliation: dynamo.tables.reconciliation ?? placeholder,
    },
    ...(dynamo.statusShardCount !== undefined ? { statusShardCount: dynamo.statusShardCount } : {}),
    ...(dynamo.paymentShardCount !== undefined ? { paymentShardCount: dynamo.paymentShardCount } : {}),
  });
  const services = new Set<string>(manifest.services ?? []);
  const secrets = new Set<SecretId>(manifest.secrets ?? []);
  const sends = new Set<QueueId>(manifest.sendsTo ?? []);
  const grantedStore = <K extends keyof typeof STORE_TABLES>(port: K): DynamoStores[K] =>
    manifest.tables[STORE_TABLES[port]] ? stores[port] : notGranted(`the ${STORE_TABLES[port]} table`, name);
  const grantedQueue = <K extends keyof typeof QUEUE_PORTS>(port: K): AppDeps[K] =>
    sends.has(QUEUE_PORTS[port]) ? shared[port] : notGranted(`the ${QUEUE_PORTS[port]} queue`, name);
  const { cardPayments, ...rest } = shared;
  const limiter = limiterFor(name, manifest, shared.settings.processorBudget, client, dynamo.tables.locks);
  const circuits = readsCircuits(manifest) ? circuitBreaker(name, shared, new DynamoCircuitStore(client, dynamo.tables.locks ?? placeholder)) : undefined;
  const processor = chargesEveryRail(manifest) && services.has('accounts') ? shared.processor : notGranted<AppDeps['processor']>('the payment processor', name);
  const accounts = services.has('accounts') ? shared.accounts : notGranted<AppDeps['accounts']>('the accounts service', name);
  const cards = callsProcessorOf(manifest, 'card') ? cardPayments : undefined;
  return {
    ...rest,
    billing: grantedStore('billing'),
    locks: grantedStore('locks'),
    payments: grantedStore('payments'),
    stripeEvents: grantedStore('stripeEvents'),
    achEventClaims: grantedStore('achEventClaims'),
    balanceEventClaims: grantedStore('balanceEventClaims'),
    retryRuns: grantedStore('retryRuns'),
    instruments: grantedStore('instruments'),
    movements: grantedStore('movements'),
    reconciliation: grantedStore('reconciliation'),
    collectionQueues: {
      stripe: sends.has(COLLECTION_QUEUES.stripe) ? shared.collectionQueues.stripe : notGranted(`the ${COLLECTION_QUEUES.stripe} queue`, name),
      payments: sends.has(COLLECTION_QUEUES.payments) ? shared.collectionQueues.payments : notGranted(`the ${COLLECTION_QUEUES.payments} queue`, name),
    },
    balanceEventsQueue: grantedQueue('balanceEventsQueue'),
    retryRunsQueue: grantedQueue('retryRunsQueue'),
    ...(sends.has('reconciliation') && shared.reconciliationQueue ? { reconciliationQueue: shared.reconciliationQueue } : {}),
    // Every charging path reads the account first; a function of the processors alone (reconciliation) reads reports, never charges.
    processor: chargesEveryRail(manifest) ? withCircuitAndBudget(processor, circuits, limiter) : processor,
    accounts: circuits && services.has('accounts') ? circuits.accounts(accounts) : accounts,
    ...(circuits ? { circuits } : {}),
    // Card payments are looked up at the card processor.
    ...(cards ? { cardPayments: limiter ? limitedCardPayments(cards, limiter) : cards } : {}),
    ...(limiter ? { processorLimiter: limiter } : {}),
    ...(manifest.settings?.includes('PERSON_DAILY_DEBIT_LIMIT_CENTS')
      ? { personDebits: { counter: new DynamoPersonDebitStore(client, dynamo.tables.locks ?? placeholder), limitCents: shared.settings.personDailyDebitLimitCents ?? DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS } }
      : {}),
    ...(shared.settings.processorBudget && dynamo.tables.locks && manifest.tables.locks?.write?.includes('update')
      ? { processorBudgetStore: new DynamoProcessorBudgetStore(client, dynamo.tables.locks) }
      : {}),
    secrets: {
      stripeWebhook: secrets.has('stripeWebhook') ? shared.secrets.stripeWebhook : '',
      achWebhook: secrets.has('achWebhook') ? shared.secrets.achWebhook : '',
      balanceWebhook: secrets.has('balanceWebhook') ? shared.secrets.balanceWebhook : '',
    },
  };
}

/** A function granted GetItem on the locks table reads the processors' circuits (DESIGN 15). */
function readsCircuits(manifest: FunctionManifest): boolean {
  return (manifest.tables.locks?.read ?? []).includes('get');
}

function circuitBreaker(name: FunctionName, shared: SharedDeps, store: DynamoCircuitStore): CircuitBreaker {
  const logger = shared.logger.child({ fn: name });
  return new CircuitBreaker({
    store,
    wallClock: shared.wallClock,
    ...(shared.settings.circuitOpenMs !== undefined ? { openMs: shared.settings.circuitOpenMs } : {}),
    onOpen: (service, error) => {
      logger.error({ service, reason: error.reason, err: error.cause }, 'processor outage: our credentials were refused; circuit opened (docs/runbook.md)');
      shared.metrics.processorCircuitsOpen?.([service]);
    },
    onStoreError: (error) => logger.error({ err: error }, 'processor outage: the circuit could not be stored; it holds in this container'),
  });
}

/** A charging function's processor: a token from the budget first (DESIGN 13), then the circuit that turns our outage into an open circuit (DESIGN 15). */
function withCircuitAndBudget(processor: AppDeps['processor'], circuits: CircuitBreaker | undefined, limiter: ProcessorLimiter | undefined): AppDeps['processor'] {
  const limited = limiter ? limitedProcessor(processor, limiter) : processor;
  return circuits ? circuits.processor(limited) : limited;
}
