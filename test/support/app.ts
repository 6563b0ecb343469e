import { randomUUID } from 'node:crypto';
import { PaymentSimulator } from '../../src/adapters/processor/simulator.js';
import type { AccountDirectory } from '../../src/domain/ports/account-directory.js';
import type { Clock } from '../../src/domain/ports/clock.js';
import type { PaymentProcessor } from '../../src/domain/ports/processor.js';
import type { ProcessorId } from '../../src/domain/processor-budget.js';
import type { FunctionName } from '../../src/manifest/index.js';
import { dynamoStores, systemClock, uuidIds } from '../../src/runtime/compose.js';
import { functionDeps, sharedDeps, type SharedDeps } from '../../src/runtime/function-deps.js';
import { DEFAULT_MAX_PAYMENT_CENTS } from '../../src/runtime/config.js';
import type { ReturnRate } from '../../src/domain/ach-return-rates.js';
import type { ReturnRateClass } from '../../src/domain/nacha.js';
import type { AppDeps, MetricsPort, QueueMessage, QueuePort, Settings, WebhookSecrets } from '../../src/runtime/deps.js';
import { createLogger } from '../../src/runtime/logger.js';
import { createTestDynamo, type TestDynamo } from './dynamo.js';
import { ManualClock } from './fakes.js';

/** Keeps what was sent, so a test can read the queue like the consumer would. */
export class RecordingQueue implements QueuePort {
  readonly sent: QueueMessage[] = [];
  /** Make the next n sendBatch calls throw, to exercise failure paths. */
  failNext = 0;

  /** `mirror` records every send too (and may fail it): one view of several queues. */
  constructor(private readonly mirror?: RecordingQueue) {}

  async sendBatch(messages: readonly QueueMessage[]): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('queue unavailable');
    }
    await this.mirror?.sendBatch(messages);
    this.sent.push(...messages);
  }

  bodies<T = unknown>(): T[] {
    return this.sent.map((m) => JSON.parse(m.body) as T);
  }

  clear(): void {
    this.sent.length = 0;
  }
}

export class RecordingMetrics implements MetricsPort {
  readonly gauges: { retrying: number; parked: number }[] = [];
  readonly dunning: { retrying: number; exhausted: number }[] = [];
  failingSubscriptions(counts: { retrying: number; parked: number }): void {
    this.gauges.push(counts);
  }
  dunningSubscriptions(counts: { retrying: number; exhausted: number }): void {
    this.dunning.push(counts);
  }
  readonly returnRates: Readonly<Record<ReturnRateClass, ReturnRate>>[] = [];
  achReturnRates(rates: Readonly<Record<ReturnRateClass, ReturnRate>>): void {
    this.returnRates.push(rates);
  }
  readonly backlogs: { backlog: Partial<Record<string, number>>; etaMinutes: number }[] = [];
  dueBacklog(backlog: Partial<Record<string, number>>, etaMinutes: number): void {
    this.backlogs.push({ backlog, etaMinutes });
  }
  readonly reconciliationGauges: { rail: string; grossDriftCents: number; openExceptions: number; overdueExceptions?: number }[] = [];
  reconciliation(gauge: { readonly rail: string; readonly grossDriftCents: number; readonly openExceptions: number; readonly overdueExceptions?: number }): void {
    this.reconciliationGauges.push({ ...gauge });
  }
}

export const TEST_SECRETS: WebhookSecrets = {
  stripeWebhook: 'whsec_test_secret',
  achWebhook: 'ach_test_secret',
  balanceWebhook: 'balance_test_secret',
};

export interface TestApp {
  /** Every port, unguarded: for seeding and inspecting tables. */
  readonly deps: AppDeps;
  /**
   * One function's deps, as its deployed Lambda gets them (the stores behind its manifest's grant
   * guard, the ports it is not granted throwing), sharing everything else with `deps`. Build every
   * handler from these. `replace` swaps shared ports (a recording processor) before the grants apply.
   */
  depsFor(name: FunctionName, replace?: Partial<SharedDeps>): AppDeps;
  readonly db: TestDynamo;
  /** Business time, moved by hand. */
  readonly clock: ManualClock;
  /** Signature time (DESIGN 9): the machine's clock unless the test passes its own. Sign webhooks with it. */
  readonly wallClock: Clock;
  readonly simulator: PaymentSimulator;
  /** Every collection message, whichever processor's queue it went to. */
  readonly collectionsQueue: RecordingQueue;
  /** The collections queue of each processor (DESIGN 13); each also records into `collectionsQueue`. */
  readonly collectionQueues: Readonly<Record<ProcessorId, RecordingQueue>>;
  readonly balanceEventsQueue: RecordingQueue;
  readonly retryRunsQueue: RecordingQueue;
  readonly reconciliationQueue: RecordingQueue;
  readonly metrics: RecordingMetrics;
}

export interface TestAppOptions {
  readonly label?: string;
  readonly now?: string;
  readonly statusShardCount?: number;
  /** Shards of the loan payments' status index (GSI2); default 8. */
  readonly paymentShardCount?: number;
  readonly settings?: Partial<Settings>;
  /** Replace the simulator as processor or account directory (e.g. to inject faults). */
  readonly processor?: PaymentProcessor;
  readonly accounts?: AccountDirectory;
  /** The clock webhook signatures are checked against (default: the system clock, as in production). */
  readonly wallClock?: Clock;
  /** The history table's stream (only the events-publisher tests read it; see createTestDynamo). */
  readonly streams?: boolean;
}

/**
 * The whole AppDeps on fresh, isolated DynamoDB Local tables with the real adapters; the business
 * clock is manual (signatures use the wall clock), the processor and account directory are the payment simulator, queues and metrics record.
 */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const db = await createTestDynamo(options.label ?? 'app', { streams: options.streams === true });
  const clock = new ManualClock(options.now ?? '2026-12-01T12:00:00.000Z');
  const simulator = new PaymentSimulator(clock);
  const collectionsQueue = new RecordingQueue();
  const collectionQueues = { stripe: new RecordingQueue(collectionsQueue), payments: new RecordingQueue(collectionsQueue) };
  const balanceEventsQueue = new RecordingQueue();
  const retryRunsQueue = new RecordingQueue();
  const reconciliationQueue = new RecordingQueue();
  const metrics = new RecordingMetrics();
  const stores = dynamoStores({
    client: db.client,
    tables: db.tables,
    ...(options.statusShardCount !== undefined ? { statusShardCount: options.statusShardCount } : {}),
    ...(options.paymentShardCount !== undefined ? { paymentShardCount: options.paymentShardCount } : {}),
  });
  const wallClock = options.wallClock ?? systemClock;
  const deps: AppDeps = {
    ...stores,
    clock,
    wallClock,
    ids: uuidIds,
    logger: createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent', base: { test: randomUUID().slice(0, 8) } }),
    processor: options.processor ?? simulator,
    accounts: options.accounts ?? simulator,
    cardPayments: simulator,
    collectionQueues,
    balanceEventsQueue,
    retryRunsQueue,
    reconciliationQueue,
    metrics,
    secrets: TEST_SECRETS,
    settings: { stage: 'test', balanceThresholdCents: 5000, maxPaymentCents: DEFAULT_MAX_PAYMENT_CENTS, ...options.settings },
  };
  const shared = sharedDeps(deps);
  const dynamo = {
    client: db.client,
    tables: db.tables,
    ...(options.statusShardCount !== undefined ? { statusShardCount: options.statusShardCount } : {}),
    ...(options.paymentShardCount !== undefined ? { paymentShardCount: options.paymentShardCount } : {}),
  };
  const depsFor = (name: FunctionName, replace: Partial<SharedDeps> = {}): AppDeps => functionDeps(name, { ...shared, ...replace }, dynamo);
  return { deps, depsFor, db, clock, wallClock, simulator, collectionsQueue, collectionQueues, balanceEventsQueue, retryRunsQueue, reconciliationQueue, metrics };
}
