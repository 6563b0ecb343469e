import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutRecordCommand } from '@aws-sdk/client-kinesis';
import { createDynamoClient } from '../adapters/dynamodb/client.js';
import { createAllTables, latestStreamArn } from '../adapters/dynamodb/create-tables.js';
import { DynamoLocalInUseError, DynamoLocalStartError, reapStaleDynamoLocal, startDynamoLocal, type DynamoLocalServer } from '../adapters/dynamodb/local-server.js';
import { tableNamesFor, type TableNames } from '../adapters/dynamodb/table-definitions.js';
import { createEventBridgeClient, EventBridgePublisher } from '../adapters/eventbridge/event-bus.js';
import { eventIdOf } from '../adapters/eventbridge/event-id.js';
import { EmfMetrics } from '../adapters/metrics/emf.js';
import { PaymentSimulator } from '../adapters/processor/simulator.js';
import { SqsQueue } from '../adapters/sqs/queue.js';
import type { CollectionsSummary } from '../domain/use-cases/plan-collections.js';
import { formatInstant } from '../domain/time.js';
import { createAchHandler } from '../handlers/ach-handler.js';
import { createApiHandler } from '../handlers/api.js';
import { createBatchWorkerHandler } from '../handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../handlers/collections-job.js';
import { createEventsPublisherHandler } from '../handlers/events-publisher.js';
import { createMembershipsConsumerHandler } from '../handlers/memberships-consumer.js';
import { createStripeWebhookHandler } from '../handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../handlers/webhook-balance-worker.js';
import { createRetryRunWorkerHandler } from '../handlers/retry-run-worker.js';
import type { FunctionName } from '../manifest/index.js';
import { dynamoStores, systemClock, uuidIds } from '../runtime/compose.js';
import { functionDeps, sharedDeps } from '../runtime/function-deps.js';
import type { AppDeps, QueueMessage, QueuePort } from '../runtime/deps.js';
import { createLogger, type Logger } from '../runtime/logger.js';
import { AchSettlementPump, type AchPumpResult } from './ach-pump.js';
import { SavedClockAheadError, SimulatedClock } from './clock.js';
import { controlRoutes, type LocalControl } from './control-routes.js';
import { DynamoStreamEventSource, localDynamoStreamsClient } from './dynamodb-stream-event-source.js';
import { LocalEventBus } from './event-bus.js';
import { localPages } from './pages.js';
import { startLocalKinesis, startLocalSqs, LOCAL_REGION, type LocalKinesis, type LocalSqs } from './emulators.js';
import { LocalGateway, type HttpHandler } from './gateway.js';
import { KinesisEventSource } from './kinesis-event-source.js';
import { lambdaContext, scheduledEvent } from './lambda-shapes.js';
import { LOCAL_OPERATOR_SUB, resolveOptions, type LocalSystemOptions } from './options.js';
import { emptyCounts, OutcomeTally, WRITTEN_OUTCOMES, type OutcomeCounts } from './outcome-tally.js';
import { assertJavaAvailable, assertPortFree, LocalStartupError, portInUseMessage } from './runtime-errors.js';
import { SEED_PROCESSOR_USERS, seedDemoData, type SeedResult } from './seed.js';
import { SqsEventSource, type SqsDelivery } from './sqs-event-source.js';
import { demoteInfo } from './quiet-logger.js';

export const LOCAL_PREFIX = 'local';

export interface CollectionsRunSummary extends CollectionsSummary {
  readonly now: string;
  /** Messages the batch-worker received during the run (this run's, plus any redeliveries that came due). */
  readonly delivered: number;
  readonly outcomes: OutcomeCounts;
  readonly ach: AchPumpResult;
  readonly duration_ms: number;
}

export interface LocalSystem {
  readonly url: string;
  readonly port: number;
  readonly options: LocalSystemOptions;
  readonly clock: SimulatedClock;
  readonly simulator: PaymentSimulator;
  readonly deps: AppDeps;
  readonly tables: TableNames;
  readonly logger: Logger;
  readonly seeded: SeedResult | undefined;
  readonly startupMs: number;
  /** The local EventBridge bus the events-publisher puts on (GET /local/events lists it). */
  readonly eventBus: LocalEventBus;
  runCollections(): Promise<CollectionsRunSummary>;
  pumpAch(): Promise<AchPumpResult>;
  stop(): Promise<void>;
}

/** A QueuePort that tells the runtime which bodies it sent, before they can be received. */
class ObservedQueue implements QueuePort {
  constructor(
    private readonly inner: QueuePort,
    private readonly onSending: (messages: readonly QueueMessage[]) => () => void,
  ) {}

  async sendBatch(messages: readonly QueueMessage[]): Promise<void> {
    const undo = this.onSending(messages);
    try {
      await this.inner.sendBatch(messages);
    } catch (error) {
      undo();
      throw error;
    }
  }
}

/** Waits for specific message bodies to be delivered once by the batch-worker. */
class DeliveryWatch {
  private readonly expected = new Map<string, number>();
  private resolveDone: (() => void) | undefined;
  deliveredCount = 0;

  expect(bodies: readonly string[]): () => void {
    for (const b of bodies) this.expected.set(b, (this.expected.get(b) ?? 0) + 1);
    return () => {
      for (const b of bodies) this.take(b);
      this.check();
    };
  }

  observe(deliveries: readonly SqsDelivery[]): void {
    this.deliveredCount += deliveries.length;
    for (const d of deliveries) this.take(d.record.body);
    this.check();
  }

  /** Resolves when every expected body was delivered (or after `timeoutMs`). */
  settled(timeoutMs: number): Promise<boolean> {
    if (this.expected.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.resolveDone = undefined;
        resolve(false);
      }, timeoutMs);
      this.resolveDone = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  private take(body: string): void {
    const n = this.expected.get(body);
    if (n === undefined) return;
    if (n <= 1) this.expected.delete(body);
    else this.expected.set(body, n - 1);
  }

  private check(): void {
    if (this.expected.size === 0 && this.resolveDone) {
      const done = this.resolveDone;
      this.resolveDone = undefined;
      done();
    }
  }
}

/** Serialises async work (collections runs: one at a time, as one Lambda schedule would). */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.catch(() => undefined).then(fn);
    this.tail = next;
    return next;
  }
}

/**
 * Brings the whole system up on this machine (docs/design.md, local runtime): DynamoDB Local with the stack's table
 * definitions, fauxqs queues with DLQs, a kinesalite stream, the seven handlers behind a local API
 * Gateway and local event source mappings, a scheduler for the collections rule, the payment
 * simulator with its ACH settlement pump, and the control surface. `stop()` takes it all down.
 */
export async function startLocalSystem(overrides: Partial<LocalSystemOptions> = {}, env: NodeJS.ProcessEnv = process.env): Promise<LocalSystem> {
  const started = Date.now();
  const options = resolveOptions(env, {}, overrides);
  const logger = createLogger({ level: options.logLevel, pretty: options.pretty, base: {} });
  // Set once the port and Java checks passed (and --fresh wiped the data): nothing reads them before.
  let clock!: SimulatedClock;
  let simulator!: PaymentSimulator;
  const timings: Record<string, number> = {};
  const mark = (name: string) => {
    timings[name] = Date.now() - started;
  };
  const parts: Record<string, boolean> = { gateway: false, dynamodb: false, tables: false, sqs: false, kinesis: false, events: false, seed: false, pollers: false, scheduler: false };

  // Everything that is started is stopped again, in reverse, also when a later step fails.
  const cleanups: (() => Promise<void> | void)[] = [];
  const stopAll = async () => {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        logger.warn({ err: error }, 'cleanup step failed');
      }
    }
    cleanups.length = 0;
  };

  const handlers: Partial<Record<'api' | 'ach-handler' | 'stripe-webhook', HttpHandler>> = {};
  let control: LocalControl | undefined;
  let baseUrl = `http://${options.host}:${options.port}`;
  const pages = localPages({ baseUrl: () => baseUrl });
  const gateway = new LocalGateway({
    apiToken: options.secrets.apiToken,
    operatorSub: LOCAL_OPERATOR_SUB,
    logger: logger.child({ part: 'gateway' }),
    handlers,
    control: async (request, path) => {
      const page = await pages(request, path);
      if (page) return page;
      if (control) return controlRoutes(control)(request, path);
      if (path === '/health') return { status: 503, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'starting', parts }) };
      if (path.startsWith('/local/') || path.startsWith('/v1/') || path.startsWith('/webhooks/')) {
        return { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' }, body: JSON.stringify({ error: { code: 'starting', message: 'the local runtime is still starting; poll GET /health' } }) };
      }
      return undefined;
    },
  });

  try {
    let url: string;
    try {
      url = await gateway.listen(options.port, options.host);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE') throw new LocalStartupError(portInUseMessage(options.port, options.host));
      if (code === 'EACCES') throw new LocalStartupError(`Port ${options.port} needs privileges on this machine; choose one above 1024: PORT=3000 npm start`);
      throw error;
    }
    baseUrl = url;
    cleanups.push(() => gateway.close());
    parts.gateway = true;
    mark('gateway');
    const port = Number(new URL(url).port);

    assertJavaAvailable();
    if (options.dynamoPort) await assertPortFree(options.dynamoPort, 'DynamoDB Local', 'DYNAMO_LOCAL_PORT');
    mark('java');

    // A DynamoDB Local still on this data directory: another runtime's (refused) or an orphan (stopped).
    try {
      const reaped = await reapStaleDynamoLocal(join(options.dataDir, 'dynamodb'));
      if (reaped.length > 0) logger.warn({ pids: reaped }, 'stopped a stale DynamoDB Local left on this data directory by an earlier run');
    } catch (error) {
      if (error instanceof DynamoLocalInUseError) throw new LocalStartupError(error.message);
      throw error;
    }

    // Only now that the port, Java and data-directory checks passed may --fresh delete anything.
    if (options.fresh) rmSync(options.dataDir, { recursive: true, force: true });
    mkdirSync(join(options.dataDir, 'dynamodb'), { recursive: true });
    try {
      clock = SimulatedClock.restore(join(options.dataDir, 'clock.json'), options.now, new Date());
    } catch (error) {
      if (error instanceof SavedClockAheadError) throw new LocalStartupError(error.message);
      throw error;
    }
    clock.startPersisting();
    cleanups.push(() => clock.stop());
    simulator = new PaymentSimulator(clock);
    const emulators = await Promise.allSettled([
      startDynamoLocal({ ...(options.dynamoPort ? { port: options.dynamoPort } : {}), path: join(options.dataDir, 'dynamodb') }),
      startLocalSqs({ prefix: LOCAL_PREFIX, visibilityTimeoutS: options.sqsVisibilityTimeoutS, maxReceiveCount: options.sqsMaxReceiveCount }),
      startLocalKinesis({ streamName: `${LOCAL_PREFIX}-memberships`, shardCount: options.kinesisShardCount }),
    ] as const);
    for (const started of emulators) if (started.status === 'fulfilled') cleanups.push(() => started.value.stop());
    const failed = emulators.find((e): e is PromiseRejectedResult => e.status === 'rejected');
    if (failed) {
      const error: unknown = failed.reason;
      if (error instanceof DynamoLocalStartError) {
        throw new LocalStartupError(
          `${error.message.trim()} Check that "java -version" works, that no other DynamoDB Local uses ${join(options.dataDir, 'dynamodb')}, or start over with: npm start -- --fresh`,
        );
      }
      throw error;
    }
    mark('emulators');
    const [dynamo, sqs, kinesis] = emulators.map((e) => (e as PromiseFulfilledResult<unknown>).value) as [DynamoLocalServer, LocalSqs, LocalKinesis];
    parts.dynamodb = parts.sqs = parts.kinesis = true;

    const dynamoClient = createDynamoClient({ region: LOCAL_REGION, endpoint: dynamo.endpoint });
    cleanups.push(() => dynamoClient.destroy());
    const tables = tableNamesFor(LOCAL_PREFIX);
    await createAllTables(dynamoClient, tables);
    const historyStreamArn = await latestStreamArn(dynamoClient, tables.billingActivityHistory);
    if (!historyStreamArn) throw new LocalStartupError(`${tables.billingActivityHistory} has no stream; start over with: npm start -- --fresh`);
    parts.tables = true;
    mark('tables');

    // Events out (docs/design.md section 11): the local bus, before anything writes a history row.
    const eventBus = new LocalEventBus({ busName: `billing-${LOCAL_PREFIX}`, logger: logger.child({ part: 'event-bus' }), webhookUrl: options.eventsWebhookUrl });
    await eventBus.start();
    cleanups.push(() => eventBus.stop());
    const eventBridge = createEventBridgeClient({ region: LOCAL_REGION, endpoint: eventBus.endpoint });
    cleanups.push(() => eventBridge.destroy());
    parts.events = true;

    const tally = new OutcomeTally();
    const stores = dynamoStores({ client: dynamoClient, tables, statusShardCount: options.statusShardCount, paymentShardCount: options.paymentShardCount });
    let watch: DeliveryWatch | undefined;
    const collectionsQueue = new ObservedQueue(new SqsQueue(sqs.client, sqs.collections.url), (messages) =>
      watch ? watch.expect(messages.map((m) => m.body)) : () => undefined,
    );
    const metricsLogger = logger.child({ part: 'metrics' });
    // Per-attempt, per-request and per-batch lines at debug; the runtime's own summaries stay at info.
    const quiet = demoteInfo(logger);
    const deps: AppDeps = {
      ...stores,
      billing: tally.wrap(stores.billing),
      payments: tally.wrapPayments(stores.payments),
      clock,
      // Signatures are checked against real time while business time is simulated (DESIGN 9).
      wallClock: systemClock,
      ids: uuidIds,
      logger: quiet,
      processor: simulator,
      accounts: simulator,
      cardPayments: simulator,
      collectionsQueue,
      balanceEventsQueue: new SqsQueue(sqs.client, sqs.balanceEvents.url),
      retryRunsQueue: new SqsQueue(sqs.client, sqs.retryRuns.url),
      // EMF lines would be CloudWatch's; locally they go to the log at debug level.
      metrics: new EmfMetrics({
        write: (line: string) => {
          metricsLogger.debug({ emf: safeJson(line) }, 'metric');
          return true;
        },
      }),
      secrets: { stripeWebhook: options.secrets.stripeWebhook, achWebhook: options.secrets.achWebhook, balanceWebhook: options.secrets.balanceWebhook },
      settings: { stage: LOCAL_PREFIX, balanceThresholdCents: options.balanceThresholdCents, maxPaymentCents: options.maxPaymentCents },
    };

    let seeded: SeedResult | undefined;
    const marker = join(options.dataDir, 'seeded.json');
    if (options.seed && !existsSync(marker)) {
      const seedStarted = Date.now();
      seeded = await seedDemoData(stores, clock.now());
      writeFileSync(marker, `${JSON.stringify({ at: formatInstant(clock.now()), ...seeded }, null, 2)}\n`);
      logger.info({ users: seeded.users, records: seeded.records, history_rows: seeded.historyRows, loan_payments: seeded.loanPayments, ms: Date.now() - seedStarted }, 'seeded demo data');
    } else if (options.seed) {
      seeded = safeJson(readFileSync(marker, 'utf8')) as SeedResult | undefined;
    }
    // The demo data's simulated outcomes (the RETRY loan payment the simulator declines); a PUT /local/processor replaces them.
    if (options.seed) simulator.configure({ default: 'approve', users: { ...SEED_PROCESSOR_USERS } });
    parts.seed = true;
    mark('seed');

    // Each handler gets its own function's deps, behind its manifest's grants, as deployed.
    const depsFor = (name: FunctionName): AppDeps => {
      const granted = functionDeps(name, sharedDeps(deps), { client: dynamoClient, tables, statusShardCount: options.statusShardCount, paymentShardCount: options.paymentShardCount });
      return { ...granted, billing: tally.wrap(granted.billing), payments: tally.wrapPayments(granted.payments) };
    };
    handlers.api = createApiHandler(depsFor('api')) as HttpHandler;
    handlers['ach-handler'] = createAchHandler(depsFor('ach-handler')) as HttpHandler;
    handlers['stripe-webhook'] = createStripeWebhookHandler(depsFor('stripe-webhook')) as HttpHandler;
    const collectionsJob = createCollectionsJobHandler(depsFor('collections-job'));
    const batchWorker = createBatchWorkerHandler(depsFor('batch-worker'));
    const balanceWorker = createBalanceWorkerHandler(depsFor('webhook-balance-worker'));
    const membershipsConsumer = createMembershipsConsumerHandler(depsFor('memberships-consumer'));
    const retryRunWorker = createRetryRunWorkerHandler(depsFor('retry-run-worker'));
    const eventsPublisher = createEventsPublisherHandler({
      logger: quiet,
      publisher: new EventBridgePublisher(eventBridge, eventBus.busName),
      eventIdOf,
      historyTableName: tables.billingActivityHistory,
    });

    let runCounts: OutcomeCounts | undefined;
    const collectionsSource = new SqsEventSource({
      client: sqs.client,
      queue: sqs.collections,
      functionName: 'batch-worker',
      handler: batchWorker,
      logger: quiet,
      around: (fn) => (runCounts ? tally.run(runCounts, fn) : fn()),
      onDelivered: (deliveries) => {
        if (runCounts) {
          for (const d of deliveries) if (!d.succeeded) runCounts.retry_later += 1;
        }
        watch?.observe(deliveries);
      },
    });
    const balanceSource = new SqsEventSource({ client: sqs.client, queue: sqs.balanceEvents, functionName: 'webhook-balance-worker', handler: balanceWorker, logger: quiet });
    const retryRunsSource = new SqsEventSource({ client: sqs.client, queue: sqs.retryRuns, functionName: 'retry-run-worker', handler: retryRunWorker, logger: quiet });
    const membershipsSource = new KinesisEventSource({
      client: kinesis.client,
      streamName: kinesis.streamName,
      streamArn: kinesis.streamArn,
      functionName: 'memberships-consumer',
      handler: membershipsConsumer,
      logger: quiet,
      onFailure: { client: sqs.client, queue: sqs.membershipsFailures },
      retryAttempts: options.kinesisRetryAttempts,
    });
    const streamsClient = localDynamoStreamsClient(dynamo.endpoint);
    cleanups.push(() => streamsClient.destroy());
    const historySource = new DynamoStreamEventSource({
      client: streamsClient,
      streamArn: historyStreamArn,
      functionName: 'events-publisher',
      handler: eventsPublisher,
      logger: quiet,
      onFailure: { client: sqs.client, queue: sqs.eventsFailures },
      retryAttempts: options.kinesisRetryAttempts,
      // Kept across restarts, as the event source mapping keeps its position across deploys.
      checkpointFile: join(options.dataDir, 'history-stream-checkpoints.json'),
    });
    collectionsSource.start();
    balanceSource.start();
    retryRunsSource.start();
    await membershipsSource.start();
    await historySource.start();
    cleanups.push(() => collectionsSource.stop(), () => balanceSource.stop(), () => retryRunsSource.stop(), () => membershipsSource.stop(), () => historySource.stop());
    await waitUntil(() => collectionsSource.isReady && balanceSource.isReady && retryRunsSource.isReady && membershipsSource.isReady, 15_000, 'the event source pollers did not start');
    // The history stream may hold the seed's rows: they are read (and publish nothing) before the runtime says it is ready.
    await waitUntil(() => historySource.isReady, 120_000, 'the history stream poller did not catch up');
    parts.pollers = true;
    mark('pollers');

    const pump = new AchSettlementPump({
      clock,
      wallClock: systemClock,
      simulator,
      secret: options.secrets.achWebhook,
      logger: quiet.child({ part: 'ach-pump' }),
      dispatch: (request) => gateway.dispatch(request),
    });

    const collectionsMutex = new Mutex();
    let collecting = false;
    const runCollections = (trigger: 'control' | 'schedule'): Promise<CollectionsRunSummary> =>
      collectionsMutex.run(async () => {
        const runStarted = Date.now();
        const counts = emptyCounts();
        const runWatch = new DeliveryWatch();
        collecting = true;
        runCounts = counts;
        watch = runWatch;
        try {
          const now = clock.now();
          const summary = (await collectionsJob(scheduledEvent(now, `${LOCAL_PREFIX}-collections-schedule`), lambdaContext('collections-job'))) as CollectionsSummary;
          const drained = await runWatch.settled(120_000);
          if (!drained) logger.warn({ trigger }, 'collections run: not every message was delivered within 120 s; the pollers keep going');
          let acknowledged = 0;
          for (const key of WRITTEN_OUTCOMES) acknowledged += counts[key];
          counts.no_change = Math.max(0, runWatch.deliveredCount - counts.retry_later - acknowledged);
          runCounts = undefined;
          watch = undefined;
          const ach = await pump.pump();
          const result: CollectionsRunSummary = { now: formatInstant(now), ...summary, delivered: runWatch.deliveredCount, outcomes: counts, ach, duration_ms: Date.now() - runStarted };
          logger.info({ trigger, enqueued: result.enqueued, outcomes: compact(counts), ach: compact(ach), ms: result.duration_ms }, 'collections run');
          return result;
        } finally {
          collecting = false;
          runCounts = undefined;
          watch = undefined;
        }
      });

    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    if (options.collectionsIntervalMs > 0) {
      const tick = () => {
        timer = setTimeout(async () => {
          try {
            await runCollections('schedule');
          } catch (error) {
            logger.error({ err: error }, 'scheduled collections run failed; the next run retries');
          }
          if (!stopped) tick();
        }, options.collectionsIntervalMs);
        timer.unref?.();
      };
      tick();
    }
    cleanups.push(() => {
      stopped = true;
      if (timer) clearTimeout(timer);
    });
    parts.scheduler = true;

    // ACH outcomes come due as simulated time passes by itself, too.
    const pumpTimer = setInterval(() => {
      // During a collections run its own pump delivers (and counts) the outcomes.
      if (collecting) return;
      pump.pump().catch((error: unknown) => logger.error({ err: error }, 'ach pump failed'));
    }, 1_000);
    pumpTimer.unref();
    cleanups.push(() => clearInterval(pumpTimer));

    control = {
      clock,
      simulator,
      logger,
      health: () => ({ ready: Object.values(parts).every(Boolean), parts: { ...parts } }),
      runCollections: () => runCollections('control'),
      afterClockChange: () => pump.pump(),
      listEvents: (filter) => eventBus.list(filter),
      putMembership: async (rawBody, userId) => {
        const put = await kinesis.client.send(new PutRecordCommand({ StreamName: kinesis.streamName, PartitionKey: userId, Data: Buffer.from(rawBody, 'utf8') }));
        const settled = await membershipsSource.waitFor(put.SequenceNumber!, 60_000);
        return settled ? { status: settled.status, shard_id: settled.shardId, sequence_number: settled.sequenceNumber, attempts: settled.attempts } : undefined;
      },
    };

    const startupMs = Date.now() - started;
    logger.info({ url, ms: startupMs, timings, now: formatInstant(clock.now()), data_dir: options.dataDir }, 'local runtime ready');
    let stopping: Promise<void> | undefined;
    return {
      url,
      port,
      options,
      clock,
      simulator,
      deps,
      tables,
      logger,
      seeded,
      startupMs,
      eventBus,
      runCollections: () => runCollections('control'),
      pumpAch: () => pump.pump(),
      stop: () => (stopping ??= stopAll()),
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

async function waitUntil(predicate: () => boolean, timeoutMs: number, message: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new LocalStartupError(message);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function compact(counts: object): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, v]) => typeof v === 'number' && v > 0));
}
