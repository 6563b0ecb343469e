import { EventBridgePublisher } from '../adapters/eventbridge/event-bus.js';
import { eventIdOf } from '../adapters/eventbridge/event-id.js';
import { EmfMetrics } from '../adapters/metrics/emf.js';
import type { PaymentSimulator } from '../adapters/processor/simulator.js';
import { SimulatedProcessorReport } from '../adapters/processor/simulator-report.js';
import type { SimulatedServicesAuth } from '../adapters/processor/simulator-services.js';
import { EventBridgeReconciliationEvents } from '../adapters/eventbridge/reconciliation-events.js';
import { SqsQueue } from '../adapters/sqs/queue.js';
import type { FactoryDepsOf } from '../functions/handler-factories.js';
import type { EventsPublisherDeps } from '../handlers/events-publisher.js';
import { COLLECTION_QUEUES, type FunctionName, type QueueId } from '../manifest/index.js';
import { dynamoStores, systemClock, uuidIds, type DynamoStores } from '../runtime/compose.js';
import type { AppDeps, QueuePort } from '../runtime/deps.js';
import { functionDeps, sharedDeps } from '../runtime/function-deps.js';
import type { Logger } from '../runtime/logger.js';
import type { SimulatedClock } from './clock.js';
import { LOCAL_PREFIX } from './emulators.js';
import type { LocalSystemOptions } from './options.js';
import type { OutcomeTally } from './outcome-tally.js';
import { demoteInfo } from './quiet-logger.js';
import { QueueSends } from './queue-stats.js';
import { authenticatedSimulatorServices } from './services-client.js';
import type { Emulators } from './start-emulators.js';

export interface LocalFunctionDeps {
  /** Every port on the local resources, unguarded (`LocalSystem.deps`: benches and tests write through it). */
  readonly deps: AppDeps;
  /** The stores without the run's tally (the seed writes through them). */
  readonly stores: DynamoStores;
  /** The deps a function's handler factory takes, by manifest name: only what its manifest grants, guarded as deployed. */
  depsOf<F extends FunctionName>(name: F): FactoryDepsOf<F>;
  /** The simulator's report of what it moved, with its injected faults (DESIGN 9, 14). */
  readonly processorReport: SimulatedProcessorReport;
  /** What the functions sent to each queue (`GET /local/queues`). */
  readonly queueSends: QueueSends;
}

/**
 * The dependencies the functions get locally: the real DynamoDB stores on DynamoDB Local, SQS
 * queues on fauxqs, the payment simulator as processor and account directory (the payments and
 * accounts services behind a client-credentials token, as deployed), the simulated
 * clock, and the local bus for a function that puts events. Each function gets its own, narrowed
 * to its manifest by functionDeps (src/runtime), so a missing grant fails under npm start too.
 * `observe` wraps the queue a collections run waits on; the tally counts what a run's attempts write.
 */
export function localFunctionDeps(input: {
  readonly options: LocalSystemOptions;
  readonly logger: Logger;
  readonly clock: SimulatedClock;
  readonly simulator: PaymentSimulator;
  /** The simulated services' token endpoint and check, which every ACH, pinless and accounts call meets. */
  readonly servicesAuth: SimulatedServicesAuth;
  readonly emulators: Emulators;
  readonly tally: OutcomeTally;
  /** The queues a collections run fills: each send is observed by the run in progress. */
  readonly observe: { readonly queues: readonly QueueId[]; wrap(queue: QueuePort): QueuePort };
}): LocalFunctionDeps {
  const { options, logger, clock, simulator, servicesAuth, emulators, tally, observe } = input;
  const services = authenticatedSimulatorServices(simulator, servicesAuth, options.servicesClient);
  const { sqs, tables, eventBus } = emulators;
  const stores = dynamoStores({ client: emulators.dynamoClient, tables, statusShardCount: options.statusShardCount, paymentShardCount: options.paymentShardCount });
  const queueSends = new QueueSends();
  const queue = (id: QueueId): QueuePort => {
    const sender = queueSends.wrap(id, new SqsQueue(sqs.client, sqs.queues[id].url));
    return observe.queues.includes(id) ? observe.wrap(sender) : sender;
  };
  const metricsLogger = logger.child({ part: 'metrics' });
  // Per-attempt, per-request and per-batch lines at debug; the runtime's own summaries stay at info.
  const quiet = demoteInfo(logger);
  const processorReport = new SimulatedProcessorReport(simulator);
  const deps: AppDeps = {
    ...stores,
    billing: tally.wrap(stores.billing),
    payments: tally.wrapPayments(stores.payments),
    clock,
    // Signatures are checked against real time while business time is simulated.
    wallClock: systemClock,
    ids: uuidIds,
    logger: quiet,
    processor: services.processor,
    accounts: services.accounts,
    cardPayments: simulator,
    processorReports: { card: processorReport, ach: processorReport, pinless: processorReport },
    reconciliationEvents: new EventBridgeReconciliationEvents(emulators.eventBridge, eventBus.busName),
    collectionQueues: { stripe: queue(COLLECTION_QUEUES.stripe), payments: queue(COLLECTION_QUEUES.payments) },
    balanceEventsQueue: queue('balanceEvents'),
    retryRunsQueue: queue('retryRuns'),
    reconciliationQueue: queue('reconciliation'),
    // EMF lines would be CloudWatch's; locally they go to the log at debug level.
    metrics: new EmfMetrics({
      write: (line: string) => {
        metricsLogger.debug({ emf: safeJson(line) }, 'metric');
        return true;
      },
    }),
    secrets: { stripeWebhook: options.secrets.stripeWebhook, achWebhook: options.secrets.achWebhook, balanceWebhook: options.secrets.balanceWebhook },
    settings: {
      stage: LOCAL_PREFIX,
      balanceThresholdCents: options.balanceThresholdCents,
      maxPaymentCents: options.maxPaymentCents,
      // A circuit opened by the simulator's revoked key closes a minute after the key is fixed (5 minutes in AWS).
      circuitOpenMs: 60_000,
      ...(options.processorBudget ? { processorBudget: options.processorBudget } : {}),
      ...(options.collectionsIntervalMs > 0 ? { collectionsIntervalSeconds: Math.max(1, Math.round(options.collectionsIntervalMs / 1000)) } : {}),
    },
  };
  const publisherDeps: EventsPublisherDeps = {
    logger: quiet,
    publisher: new EventBridgePublisher(emulators.eventBridge, eventBus.busName),
    eventIdOf,
    historyTableName: tables.billingActivityHistory,
  };
  const granted = (name: FunctionName): AppDeps => {
    const own = functionDeps(name, sharedDeps(deps), { client: emulators.dynamoClient, tables, statusShardCount: options.statusShardCount, paymentShardCount: options.paymentShardCount });
    return { ...own, billing: tally.wrap(own.billing), payments: tally.wrapPayments(own.payments) };
  };
  return {
    deps,
    stores,
    processorReport,
    queueSends,
    // A function that puts events on a bus gets the publisher's deps (its manifest grants no table).
    depsOf: <F extends FunctionName>(name: F) => (name === 'events-publisher' ? publisherDeps : granted(name)) as FactoryDepsOf<F>,
  };
}

export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
