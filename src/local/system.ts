import type { TableNames } from '../adapters/dynamodb/table-definitions.js';
import { join } from 'node:path';
import { FileSimulatorJournal } from '../adapters/processor/journal.js';
import { PaymentSimulator } from '../adapters/processor/simulator.js';
import { SimulatedServicesAuth, simulatedServicesAnswer } from '../adapters/processor/simulator-services.js';
import { formatInstant } from '../domain/time.js';
import type { FunctionName } from '../manifest/index.js';
import { DynamoCircuitStore } from '../adapters/dynamodb/circuit-store.js';
import { CircuitBreaker } from '../runtime/circuits.js';
import { systemClock } from '../runtime/compose.js';
import type { AppDeps } from '../runtime/deps.js';
import { createLogger, type Logger } from '../runtime/logger.js';
import { AchSettlementPump, type AchPumpResult } from './ach-pump.js';
import type { SimulatedClock } from './clock.js';
import { CollectionsRun, RUN_QUEUES, startAchPumpTimer, startSchedule, type CollectionsRunSummary } from './collections-run.js';
import type { LocalControl } from './control-routes.js';
import type { LocalEventBus } from './event-bus.js';
import { startEventSources, type LocalEventSources } from './event-sources.js';
import { localFunctionDeps } from './function-deps.js';
import { MEMBER_TOKEN_TTL_S, mintMemberToken } from './member-tokens.js';
import type { HttpHandler } from './gateway.js';
import { Cleanups, StartupProgress } from './lifecycle.js';
import { resolveOptions, type LocalSystemOptions } from './options.js';
import { OutcomeTally } from './outcome-tally.js';
import { demoteInfo } from './quiet-logger.js';
import { LocalStartupError } from './runtime-errors.js';
import { seedOnce, type SeedResult } from './seed.js';
import { startEmulators, type Emulators } from './start-emulators.js';
import { localGateway, preflight, prepareDataDir, reapOrphans } from './startup.js';

export { LOCAL_PREFIX } from './emulators.js';
export type { CollectionsRunSummary } from './collections-run.js';

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

/**
 * Brings the whole system up on this machine (docs/design.md, local runtime): the emulators
 * (DynamoDB Local with the stack's tables, fauxqs, kinesalite, the local bus), every function of
 * the manifest behind its trigger (the gateway, the pollers, the scheduler), the payment
 * simulator with its ACH pump, and the control surface. `stop()` takes it all down, in reverse.
 */
/** The on-demand reconciliation of POST /local/reconciliation/run and the simulator's report behind it. */
function reconciliationControl(processorReport: LocalControl['processorReport'], handler: ((event: never) => Promise<unknown>) | undefined): Pick<LocalControl, 'processorReport' | 'runReconciliation'> {
  return {
    processorReport,
    runReconciliation: async (date) => {
      if (!handler) throw new LocalStartupError('no reconciliation-job in the manifest');
      return handler({ date } as never);
    },
  };
}

export async function startLocalSystem(overrides: Partial<LocalSystemOptions> = {}, env: NodeJS.ProcessEnv = process.env): Promise<LocalSystem> {
  const progress = new StartupProgress();
  const options = resolveOptions(env, {}, overrides);
  const logger = createLogger({ level: options.logLevel, pretty: options.pretty, base: {} });
  const cleanups = new Cleanups(logger);
  const http: Partial<Record<FunctionName, HttpHandler>> = {};
  let control: LocalControl | undefined;
  const { gateway, listen } = localGateway({ options, logger, progress, handlers: http, control: () => control });
  try {
    await reapOrphans(options, logger);
    const url = await listen();
    cleanups.push(() => gateway.close());
    progress.up('gateway');
    progress.mark('gateway');
    await preflight(options, progress);
    const clock = prepareDataDir(options);
    clock.startPersisting();
    cleanups.push(() => clock.stop());
    const simulator = new PaymentSimulator(clock, new FileSimulatorJournal(join(options.dataDir, 'processor-journal.jsonl')));
    const emulators = await startEmulators(options, logger, cleanups, progress);

    const quiet = demoteInfo(logger);
    const tally = new OutcomeTally();
    const pump = new AchSettlementPump({ clock, wallClock: systemClock, simulator, secret: options.secrets.achWebhook, logger: quiet.child({ part: 'ach-pump' }), dispatch: (request) => gateway.dispatch(request) });
    const circuits = new CircuitBreaker({ store: new DynamoCircuitStore(emulators.dynamoClient, emulators.tables.locks), wallClock: systemClock, refreshMs: 0 });
    const run = new CollectionsRun({ clock, tally, pump, logger, paced: options.processorBudget !== undefined, openCircuits: () => circuits.openServices() });
    const servicesAuth = new SimulatedServicesAuth(simulator, options.servicesClient);
    const functions = localFunctionDeps({ options, logger, clock, simulator, servicesAuth, emulators, tally, observe: { queues: RUN_QUEUES, wrap: (queue) => run.observe(queue) } });
    const seeded = options.seed ? await seedOnce({ dataDir: options.dataDir, stores: functions.stores, clock, simulator, logger }) : undefined;
    progress.up('seed');
    progress.mark('seed');

    // Stopping, after the pollers finished their invocations: the answers in flight, then the clients and emulators.
    cleanups.push(() => gateway.idle());
    const sources = await startEventSources({ options, logger: quiet, emulators, functions, http, sqsHooks: Object.fromEntries(RUN_QUEUES.map((id) => [id, run.consumerHooks()])), cleanups });
    progress.up('pollers');
    progress.mark('pollers');
    // The local scheduler runs the collections; reconciliation runs on demand (POST /local/reconciliation/run).
    const reconciliation = sources.scheduled.find((s) => s.name === 'reconciliation-job');
    const [scheduled, ...others] = sources.scheduled.filter((s) => s !== reconciliation);
    if (!scheduled || others.length > 0) throw new LocalStartupError(`the local scheduler runs one scheduled function; the manifest schedules ${sources.scheduled.length}`);
    run.schedules(scheduled.name, scheduled.handler);
    // Stopping, first: no new request, run or delivery; the run in progress ends; then the pollers drain (above).
    cleanups.push(async () => {
      gateway.beginDrain();
      await run.stop();
      await pump.stop();
    });
    cleanups.push(startSchedule(run, options.collectionsIntervalMs, logger));
    progress.up('scheduler');
    cleanups.push(startAchPumpTimer(pump, run, logger));

    const paymentsService: LocalControl['paymentsService'] = (request) => simulatedServicesAnswer(simulator, servicesAuth, request);
    const queueStats: LocalControl['queueStats'] = () => functions.queueSends.stats(emulators.sqs);
    control = { ...localControl({ clock, simulator, logger, progress, run, pump, emulators, sources, apiToken: options.secrets.apiToken }), ...reconciliationControl(functions.processorReport, reconciliation?.handler), paymentsService, queueStats };

    const startupMs = Date.now() - progress.started;
    logger.info({ url, ms: startupMs, timings: progress.timings, now: formatInstant(clock.now()), data_dir: options.dataDir }, 'local runtime ready');
    let stopping: Promise<void> | undefined;
    return {
      url,
      port: Number(new URL(url).port),
      options,
      clock,
      simulator,
      deps: functions.deps,
      tables: emulators.tables,
      logger,
      seeded,
      startupMs,
      eventBus: emulators.eventBus,
      runCollections: () => run.run('control'),
      pumpAch: () => pump.pump(),
      stop: () => (stopping ??= cleanups.runAll()),
    };
  } catch (error) {
    await cleanups.runAll();
    throw error;
  }
}

/** The control surface of the finished runtime (src/local/control-routes.ts). */
function localControl(parts: {
  readonly clock: SimulatedClock;
  readonly simulator: PaymentSimulator;
  readonly logger: Logger;
  readonly progress: StartupProgress;
  readonly run: CollectionsRun;
  readonly pump: AchSettlementPump;
  readonly emulators: Emulators;
  readonly sources: LocalEventSources;
  readonly apiToken: string;
}): Omit<LocalControl, 'processorReport' | 'runReconciliation' | 'paymentsService' | 'queueStats'> {
  const { clock, simulator, logger, progress, run, pump, emulators, sources } = parts;
  return {
    clock,
    simulator,
    logger,
    health: () => ({ ready: progress.ready, parts: { ...progress.parts } }),
    runCollections: () => run.run('control'),
    afterClockChange: () => pump.pump(),
    listEvents: (filter) => emulators.eventBus.list(filter),
    mintToken: (userId) => ({ token: mintMemberToken(parts.apiToken, userId, Math.floor(Date.now() / 1000)).token, expiresInS: MEMBER_TOKEN_TTL_S }),
    putMembership: async (rawBody, userId) => {
      const settled = await sources.putOnStream('memberships', userId, rawBody);
      return settled ? { status: settled.status, shard_id: settled.shardId, sequence_number: settled.sequenceNumber, attempts: settled.attempts } : undefined;
    },
  };
}
