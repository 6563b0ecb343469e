import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createDynamoClient } from '../src/adapters/dynamodb/client.js';
import { createAllTables } from '../src/adapters/dynamodb/create-tables.js';
import { tableNamesFor, type TableNames } from '../src/adapters/dynamodb/table-definitions.js';
import { PaymentSimulator } from '../src/adapters/processor/simulator.js';
import { historyRowOf } from '../src/domain/billing-record.js';
import type { Clock } from '../src/domain/ports/clock.js';
import type { ProcessorId } from '../src/domain/processor-budget.js';
import type { BillingRecord } from '../src/domain/records.js';
import type { FunctionName } from '../src/manifest/index.js';
import { dynamoStores, systemClock, uuidIds } from '../src/runtime/compose.js';
import { functionDeps, sharedDeps } from '../src/runtime/function-deps.js';
import { DEFAULT_MAX_PAYMENT_CENTS } from '../src/runtime/config.js';
import type { AppDeps, QueueMessage, QueuePort, Settings } from '../src/runtime/deps.js';
import { createLogger } from '../src/runtime/logger.js';
import { meterCapacity, type CapacityMeter } from './capacity.js';
import type { DestinationStream } from 'pino';

export { dueRecord } from '../test/support/billing-fixtures.js';

/** The whole AppDeps on fresh tables of the bench's DynamoDB Local, with a metered client. */

/** The business clock starts at the wall clock: DynamoDB Local's TTL sweeper deletes lock items by wall time. */
export const BENCH_NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();

export class BenchClock implements Clock {
  private ms: number;
  constructor(start: string) {
    this.ms = Date.parse(start);
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** In-memory SQS stand-in: the bench measures DynamoDB and our code, not an emulator's HTTP. */
export class MemoryQueue implements QueuePort {
  readonly messages: QueueMessage[] = [];
  async sendBatch(messages: readonly QueueMessage[]): Promise<void> {
    this.messages.push(...messages);
  }
  drain(): QueueMessage[] {
    return this.messages.splice(0, this.messages.length);
  }
}

export interface BenchApp {
  /** Every port, unguarded: for seeding. */
  readonly deps: AppDeps;
  /** One function's deps behind its manifest's grant guard, as deployed: build handlers from these. */
  depsFor(name: FunctionName): AppDeps;
  readonly client: DynamoDBClient;
  readonly tables: TableNames;
  readonly meter: CapacityMeter;
  readonly clock: BenchClock;
  readonly simulator: PaymentSimulator;
  readonly collectionsQueue: MemoryQueue;
  readonly balanceQueue: MemoryQueue;
}

/** A keep-alive client with enough sockets for the bench's concurrency. */
export function benchClient(endpoint: string): DynamoDBClient {
  return createDynamoClient(
    { region: 'local', endpoint },
    { requestHandler: new NodeHttpHandler({ httpAgent: new Agent({ keepAlive: true, maxSockets: 512 }) }) },
  );
}

/** What a bench section sets beyond the defaults: settings (budgets, the interval), the collections queue, the gauges. */
export interface BenchAppOverrides {
  readonly settings?: Partial<Settings>;
  readonly collectionQueues?: Readonly<Record<ProcessorId, QueuePort>>;
  readonly metrics?: Partial<AppDeps['metrics']>;
}

/** `logTo`: the production logger (level info) writes there; without it the app logs nothing. */
export async function createBenchApp(endpoint: string, label: string, logTo?: DestinationStream, overrides: BenchAppOverrides = {}): Promise<BenchApp> {
  const client = benchClient(endpoint);
  const tables = tableNamesFor(`bench-${label}-${randomUUID().slice(0, 6)}`);
  // No stream on the history table: nothing in the bench reads it, and DynamoDB Local slows down as
  // stream records pile up (see createAllTables). Real DynamoDB bills no request units for a stream.
  await createAllTables(client, tables, { streams: false });
  const meter = meterCapacity(client, tables);
  const clock = new BenchClock(BENCH_NOW);
  const simulator = new PaymentSimulator(clock);
  const collectionsQueue = new MemoryQueue();
  const balanceQueue = new MemoryQueue();
  const deps: AppDeps = {
    ...dynamoStores({ client, tables }),
    clock,
    wallClock: systemClock,
    ids: uuidIds,
    logger: logTo ? createLogger({ level: 'info', destination: logTo }) : createLogger({ level: 'silent' }),
    processor: simulator,
    accounts: simulator,
    // Both processors' queues are one unless the caller gives its own: the bench drains every collection message itself.
    collectionQueues: overrides.collectionQueues ?? { stripe: collectionsQueue, payments: collectionsQueue },
    balanceEventsQueue: balanceQueue,
    retryRunsQueue: new MemoryQueue(),
    metrics: { failingSubscriptions: () => undefined, dunningSubscriptions: () => undefined, achReturnRates: () => undefined, dueBacklog: () => undefined, ...overrides.metrics },
    secrets: { stripeWebhook: 'whsec_bench', achWebhook: 'ach_bench', balanceWebhook: 'balance_bench' },
    settings: { stage: 'bench', balanceThresholdCents: 5000, maxPaymentCents: DEFAULT_MAX_PAYMENT_CENTS, ...overrides.settings },
  };
  const shared = sharedDeps(deps);
  const depsFor = (name: FunctionName): AppDeps => functionDeps(name, shared, { client, tables });
  return { deps, depsFor, client, tables, meter, clock, simulator, collectionsQueue, balanceQueue };
}


/** Seeds records with their history rows, 50 to a transaction, with the meter paused. */
export async function seed(app: BenchApp, records: readonly BillingRecord[], concurrency = 8): Promise<void> {
  app.meter.pause(true);
  const chunks: BillingRecord[][] = [];
  for (let i = 0; i < records.length; i += 50) chunks.push(records.slice(i, i + 50));
  await pool(chunks, concurrency, (chunk) => withTransientRetries(() => app.deps.billing.addAll(chunk, chunk.map((r) => historyRowOf(r)))));
  app.meter.pause(false);
}

/**
 * Seeding is set-up, not the thing measured: DynamoDB Local answers a busy transaction with a
 * transient "timed out waiting for a lock" 500 (real DynamoDB would not), so a chunk is put again.
 * addAll's puts are conditional on absence, so a chunk that did commit fails again as a conflict,
 * never twice.
 */
async function withTransientRetries<T>(work: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || (error as { code?: string }).code !== 'transient') throw error;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

/** Runs `work` over `items` with at most `concurrency` in flight. */
export async function pool<T>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i]!, i);
      }
    }),
  );
}
