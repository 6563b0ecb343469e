import { paginateScan } from '@aws-sdk/client-dynamodb';
import { eventIdOf } from '../src/adapters/eventbridge/event-id.js';
import type { SimulatorStats } from '../src/adapters/processor/rate-limit.js';
import { historyRowOf } from '../src/domain/billing-record.js';
import { eventSourceCap, IN_BATCH_PARALLELISM, PROCESSOR_P99_LATENCY_MS } from '../src/domain/billing-day.js';
import { PROCESSOR_IDS, processorOfRail, scheduledRate, type ProcessorBudgetSettings, type ProcessorId } from '../src/domain/processor-budget.js';
import { publishedEventsOf } from '../src/domain/published-events.js';
import type { BillingRecord } from '../src/domain/records.js';
import { formatInstant } from '../src/domain/time.js';
import { createBatchWorkerHandler } from '../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../src/handlers/collections-job.js';
import { FUNCTIONS } from '../src/manifest/index.js';
import { createBenchApp, dueRecord, pool, seed, type BenchApp } from './app.js';
import { scheduledEvent, sqsEvent } from './lambda-events.js';
import type { LogSink } from './log-sink.js';
import { SqsModel, type SqsRequestCounts } from './sqs-model.js';

/**
 * Billing day (DESIGN 13): `periods` due at one instant, half card and half pinless, the simulator
 * throttling each processor at its budget with a log-normal latency, the collections-job on a fixed
 * schedule of `intervalSeconds` and the batch-worker behind an SQS event source capped as the stack
 * caps it, on wall time, until every period is charged or the deadline passes. `paced` false is
 * the baseline: the same run with no budgets set (the unpaced planner, no limiter).
 *
 * The queue is an in-memory SQS (bench/sqs-model.ts: delays, visibility timeout, redrive); the
 * tables are DynamoDB Local's, metered like every other section; the simulator is the processor.
 */

export interface BillingDayOptions {
  readonly periods: number;
  readonly budgetPerSecond: number;
  readonly personShare: number;
  readonly intervalSeconds: number;
  readonly latency: { readonly p50: number; readonly p99: number };
  readonly paced: boolean;
  /** Stop anyway this long after the first run (the section must end by itself). */
  readonly deadlineSeconds: number;
  readonly log: (message: string) => void;
}

export interface PlannerRun {
  readonly atSeconds: number;
  readonly ms: number;
  readonly enqueued: number;
  readonly skipped?: string;
  readonly byProcessor?: Record<string, unknown>;
}

export interface ProcessorPace {
  readonly presented: number;
  /** From the first run's start to this processor's last charge. */
  readonly seconds: number;
  readonly perSecond: number;
  /** perSecond ÷ E. */
  readonly ratio: number;
}

export interface BillingDayRun {
  readonly planner: 'paced' | 'unpaced';
  readonly periods: number;
  readonly budgetPerSecond: number;
  readonly personShare: number;
  /** E per processor: (1 − share) × budget. */
  readonly effectivePerSecond: number;
  readonly intervalSeconds: number;
  readonly latencyMs: { p50: number; p99: number };
  readonly eventSourceCap: number;
  readonly drained: boolean;
  readonly charged: number;
  readonly drainSeconds: number;
  /** periods ÷ (E × processors): the drain at exactly the budget. */
  readonly idealSeconds: number;
  readonly drainRatio: number;
  readonly runs: readonly PlannerRun[];
  readonly messagesEnqueued: number;
  readonly messagesPerPeriod: number;
  readonly processor: SimulatorStats;
  readonly throttledShare: number;
  readonly pace: Record<ProcessorId, ProcessorPace>;
  readonly minPaceRatio: number;
  readonly countedFailures: number;
  readonly dunningMoves: number;
  readonly dlqMessages: number;
  readonly charges: { exactlyOne: number; none: number; moreThanOne: number };
  /** Tokens the limiter granted per processor (its per-second items), against what was presented: the rest expired unused. */
  readonly tokensLeased: Record<ProcessorId, number>;
  readonly units: MeasuredUnits;
  /** Set when `units` are per period charged; results without it divided by every period seeded. */
  readonly unitsPerCharged?: true;
}

/** What one charged period cost, measured: the capacity note (docs/capacity.md) is derived from these. */
export interface MeasuredUnits {
  readonly dynamodb: { requests: number; rru: number; wru: number; gsiWru: number; byCommand: Record<string, number> };
  readonly lambda: {
    workerInvocations: number;
    messagesPerInvocation: number;
    workerMsPerMessage: number;
    workerMemoryMb: number;
    plannerRuns: number;
    plannerMsPerRun: number;
    plannerMemoryMb: number;
  };
  readonly sqs: { sendBatch: number; receive: number; deleteBatch: number; getAttributes: number; perPeriod: number; emptyReceives: number };
  readonly eventBridgeEventsPerPeriod: number;
  readonly logBytesPerPeriod: number;
}

/** The function construct's memory when the manifest names none (lib/constructs/billing-function.ts). */
const DEFAULT_MEMORY_MB = 512;
const memoryOf = (name: 'batch-worker' | 'collections-job'): number => (FUNCTIONS[name] as { memoryMb?: number }).memoryMb ?? DEFAULT_MEMORY_MB;

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function budgetOf(o: BillingDayOptions): ProcessorBudgetSettings {
  return { perSecond: { stripe: o.budgetPerSecond, payments: o.budgetPerSecond }, personShare: o.personShare };
}

/** The periods: due an hour ago, all at the same instant, alternating card and pinless. */
function billingDayRecords(now: Date, count: number): BillingRecord[] {
  const first = dueRecord(now);
  return Array.from({ length: count }, (_, i) => dueRecord(now, i % 2 === 0 ? 'card' : 'pinless', { billing_date: first.billing_date, billing_anchor_day: first.billing_anchor_day }));
}

/**
 * Lambda's SQS pollers: up to `cap` invocations at once, each with the messages visible when it
 * polled, gathered for up to the trigger's batching window until the batch is full.
 */
class EventSource {
  invocations = 0;
  messages = 0;
  busyMs = 0;
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(
    private readonly queue: SqsModel,
    private readonly worker: ReturnType<typeof createBatchWorkerHandler>,
    cap: number,
    batchSize: number,
    private readonly windowMs: number,
  ) {
    this.loops = Array.from({ length: cap }, () => this.poll(batchSize));
  }

  private async poll(batchSize: number): Promise<void> {
    while (this.running) {
      const batch = this.queue.receive(batchSize);
      if (batch.length === 0) {
        await sleep(100);
        continue;
      }
      for (const until = Date.now() + this.windowMs; batch.length < batchSize && Date.now() < until; ) {
        await sleep(Math.min(50, until - Date.now()));
        batch.push(...this.queue.receive(batchSize - batch.length));
      }
      const started = performance.now();
      const response = await this.worker(sqsEvent(batch.map((m) => ({ id: m.messageId, body: m.body }))));
      this.busyMs += performance.now() - started;
      this.invocations += 1;
      this.messages += batch.length;
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      this.queue.delete(batch.filter((m) => !failed.has(m.messageId)).map((m) => m.messageId));
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

/** The collections-job on a fixed rate (EventBridge's `rate(n seconds)`); each run's deadline ends a margin before the next. */
class Schedule {
  readonly runs: PlannerRun[] = [];
  private readonly pending: Promise<void>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly app: BenchApp,
    private readonly intervalSeconds: number,
    private readonly startedMs: number,
  ) {}

  start(): void {
    const tick = (n: number) => {
      if (this.stopped) return;
      this.pending.push(this.runOnce());
      const next = this.startedMs + (n + 1) * this.intervalSeconds * 1000;
      this.timer = setTimeout(() => tick(n + 1), Math.max(0, next - Date.now()));
    };
    tick(0);
  }

  private async runOnce(): Promise<void> {
    const started = Date.now();
    // The job's timeout is the interval less the planner's margin, as the synth bound requires.
    const job = createCollectionsJobHandler(this.app.depsFor('collections-job'), { deadlineMs: started + (this.intervalSeconds - 5) * 1000, safetyMs: 5_000 });
    const summary = await job(scheduledEvent(formatInstant(this.app.clock.now())));
    const paced = summary as { skipped?: string; by_processor?: Record<string, unknown> };
    this.runs.push({
      atSeconds: round((started - this.startedMs) / 1000, 1),
      ms: Date.now() - started,
      enqueued: summary.enqueued,
      ...(paced.skipped ? { skipped: paced.skipped } : {}),
      ...(paced.by_processor ? { byProcessor: paced.by_processor } : {}),
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all(this.pending);
  }
}

/** Both processors' queues' requests added up, and per period. */
function sqsUnits(all: readonly SqsRequestCounts[], n: number) {
  const total: SqsRequestCounts = { sendBatch: 0, receive: 0, emptyReceive: 0, deleteBatch: 0, getAttributes: 0 };
  for (const r of all) for (const k of Object.keys(total) as (keyof SqsRequestCounts)[]) total[k] += r[k];
  return { ...total, perPeriod: round((total.sendBatch + total.receive + total.deleteBatch + total.getAttributes) / n), emptyReceives: total.emptyReceive };
}

/** Charges per seeded period, from the simulator's own list of what it took. */
function chargeCounts(app: BenchApp, records: readonly BillingRecord[]): Map<string, number> {
  const byPeriod = new Map(records.map((r) => [`${r.user_id}|${r.billing_date}`, 0]));
  for (const c of app.simulator.charges()) {
    if (c.reference.kind !== 'subscription') continue;
    const key = `${c.reference.user_id}|${c.reference.billing_date}`;
    const n = byPeriod.get(key);
    if (n !== undefined) byPeriod.set(key, n + 1);
  }
  return byPeriod;
}

export async function billingDayRun(endpoint: string, o: BillingDayOptions, sink: LogSink): Promise<BillingDayRun> {
  // One queue per processor, each with its own capped event source, as the stack has (DESIGN 13).
  const queues: Record<ProcessorId, SqsModel> = {
    stripe: new SqsModel({ visibilityTimeoutS: 6 * FUNCTIONS['batch-worker'].timeoutSeconds, maxReceiveCount: 5 }),
    payments: new SqsModel({ visibilityTimeoutS: 6 * FUNCTIONS['batch-worker'].timeoutSeconds, maxReceiveCount: 5 }),
  };
  const sum = (of: (q: SqsModel) => number) => PROCESSOR_IDS.reduce((a, p) => a + of(queues[p]), 0);
  const budget = budgetOf(o);
  const app = await createBenchApp(endpoint, o.paced ? 'day-paced' : 'day-unpaced', sink.stream, {
    collectionQueues: queues,
    settings: { collectionsIntervalSeconds: o.intervalSeconds, ...(o.paced ? { processorBudget: budget } : {}) },
  });
  const records = billingDayRecords(app.clock.now(), o.periods);
  o.log(`billing day (${o.paced ? 'paced' : 'unpaced baseline'}): seeding ${o.periods} periods`);
  await seed(app, records);
  app.meter.reset();
  app.simulator.configure({ default: 'approve', rate_limit_per_second: { stripe: o.budgetPerSecond, payments: o.budgetPerSecond }, latency_ms: { ...o.latency } });
  const trigger = FUNCTIONS['batch-worker'].trigger;
  const cap = eventSourceCap(o.budgetPerSecond, PROCESSOR_P99_LATENCY_MS, IN_BATCH_PARALLELISM);
  const E = scheduledRate(budget, 'stripe');
  const idealSeconds = o.periods / (E * PROCESSOR_IDS.length);

  const logBefore = sink.bytes();
  const startedMs = Date.now();
  const schedule = new Schedule(app, o.intervalSeconds, startedMs);
  const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
  const sqsTrigger = trigger.kind === 'sqs' ? trigger : undefined;
  const windowMs = (sqsTrigger?.maxBatchingWindowSeconds ?? 0) * 1000;
  const sources = PROCESSOR_IDS.map((p) => new EventSource(queues[p], worker, cap, sqsTrigger?.batchSize ?? 10, windowMs));
  const sourceSum = (of: (s: EventSource) => number) => sources.reduce((a, s) => a + of(s), 0);
  const lastCharge: Record<ProcessorId, number> = { stripe: startedMs, payments: startedMs };
  const presented: Record<ProcessorId, number> = { stripe: 0, payments: 0 };
  let seen = 0;
  let drained = false;
  schedule.start();
  // Sampled four times a second: when each processor's last charge came, and whether the backlog is gone.
  while (Date.now() - startedMs < o.deadlineSeconds * 1000) {
    await sleep(250);
    const charges = app.simulator.charges();
    for (; seen < charges.length; seen++) {
      const p = processorOfRail(charges[seen]!.rail);
      presented[p] += 1;
      lastCharge[p] = Date.now();
    }
    if (presented.stripe + presented.payments >= o.periods && sum((q) => q.size) === 0) {
      drained = true;
      break;
    }
    if ((Date.now() - startedMs) % 30_000 < 250) o.log(`  ${Math.round((Date.now() - startedMs) / 1000)} s: ${presented.stripe + presented.payments}/${o.periods} charged, ${sum((q) => q.size)} queued`);
  }
  await schedule.stop();
  await Promise.all(sources.map((s) => s.stop()));
  const endMs = Math.max(lastCharge.stripe, lastCharge.payments);
  const totals = app.meter.snapshot();
  const logBytes = sink.bytes() - logBefore;
  app.meter.pause(true);

  const counts = [...chargeCounts(app, records).values()];
  const after = await readAll(app, records);
  const events = await eventsPerPeriod(app, records.filter((_, i) => after[i]?.billing_status === 'COMPLETED').slice(0, 100));
  const tokensLeased = await leasedTokens(app);
  app.client.destroy();

  const stats = app.simulator.stats();
  const pace = Object.fromEntries(
    PROCESSOR_IDS.map((p) => {
      const seconds = (lastCharge[p] - startedMs) / 1000;
      const perSecond = seconds > 0 ? presented[p] / seconds : 0;
      return [p, { presented: presented[p], seconds: round(seconds, 1), perSecond: round(perSecond, 2), ratio: round(perSecond / E) }];
    }),
  ) as Record<ProcessorId, ProcessorPace>;
  const drainSeconds = (endMs - startedMs) / 1000;
  // Units are per period charged: a run cut off before the drain must not spread its cost over periods it never reached.
  const n = Math.max(1, counts.filter((c) => c > 0).length);
  return {
    planner: o.paced ? 'paced' : 'unpaced',
    periods: o.periods,
    budgetPerSecond: o.budgetPerSecond,
    personShare: o.personShare,
    effectivePerSecond: E,
    intervalSeconds: o.intervalSeconds,
    latencyMs: { ...o.latency },
    eventSourceCap: cap,
    drained,
    charged: counts.filter((c) => c > 0).length,
    drainSeconds: round(drainSeconds, 1),
    idealSeconds: round(idealSeconds, 1),
    drainRatio: round(drainSeconds / idealSeconds),
    runs: schedule.runs,
    messagesEnqueued: sum((q) => q.sent),
    messagesPerPeriod: round(sum((q) => q.sent) / o.periods),
    processor: stats,
    throttledShare: stats.requests > 0 ? round(stats.throttled / stats.requests, 5) : 0,
    pace,
    minPaceRatio: Math.min(...PROCESSOR_IDS.map((p) => pace[p].ratio)),
    countedFailures: after.filter((r) => (r?.billing_failure_count ?? 0) > 0).length,
    dunningMoves: after.filter((r) => (r?.dunning_attempts ?? 0) > 0 || r?.billing_status === 'FAILED').length,
    dlqMessages: sum((q) => q.deadLetters.length),
    tokensLeased,
    unitsPerCharged: true,
    charges: { exactlyOne: counts.filter((c) => c === 1).length, none: counts.filter((c) => c === 0).length, moreThanOne: counts.filter((c) => c > 1).length },
    units: {
      dynamodb: {
        requests: round(totals.requests / n),
        rru: round(totals.rru / n),
        wru: round(totals.wru / n),
        gsiWru: round(totals.gsiWru / n),
        byCommand: Object.fromEntries(Object.entries(totals.byCommand).map(([k, v]) => [k, round(v / n)])),
      },
      lambda: {
        workerInvocations: sourceSum((s) => s.invocations),
        messagesPerInvocation: round(sourceSum((s) => s.messages) / Math.max(1, sourceSum((s) => s.invocations)), 2),
        workerMsPerMessage: round(sourceSum((s) => s.busyMs) / Math.max(1, sourceSum((s) => s.messages)), 1),
        workerMemoryMb: memoryOf('batch-worker'),
        plannerRuns: schedule.runs.length,
        plannerMsPerRun: round(schedule.runs.reduce((a, r) => a + r.ms, 0) / Math.max(1, schedule.runs.length), 0),
        plannerMemoryMb: memoryOf('collections-job'),
      },
      sqs: sqsUnits(PROCESSOR_IDS.map((p) => queues[p].requests), n),
      eventBridgeEventsPerPeriod: events,
      logBytesPerPeriod: Math.round(logBytes / n),
    },
  };
}

async function readAll(app: BenchApp, records: readonly BillingRecord[]): Promise<(BillingRecord | undefined)[]> {
  const out: (BillingRecord | undefined)[] = new Array(records.length);
  await pool(records, 32, async (r, i) => {
    out[i] = await app.deps.billing.get(r);
  });
  return out;
}

/** Events the history stream publishes per period on billing day: a sample's rows, less the row each period was seeded with. */
async function eventsPerPeriod(app: BenchApp, sample: readonly BillingRecord[]): Promise<number> {
  let events = 0;
  for (const r of sample) {
    const rows = (await app.deps.billing.history(r.subscription_id, { limit: 100 })).items;
    for (const row of rows) events += publishedEventsOf(row, eventIdOf).length;
    events -= publishedEventsOf(historyRowOf(r), eventIdOf).length;
  }
  return round(events / Math.max(1, sample.length), 2);
}

/** The limiter's per-second items (`processor-budget:{processor}:{second}`), summed per processor. */
async function leasedTokens(app: BenchApp): Promise<Record<ProcessorId, number>> {
  const out: Record<ProcessorId, number> = { stripe: 0, payments: 0 };
  for await (const page of paginateScan({ client: app.client }, { TableName: app.tables.locks })) {
    for (const item of page.Items ?? []) {
      const [prefix, processor, second] = (item.PartitionKey?.S ?? '').split(':');
      if (prefix === 'processor-budget' && /^\d+$/.test(second ?? '') && (processor === 'stripe' || processor === 'payments')) out[processor] += Number(item.used?.N ?? 0);
    }
  }
  return out;
}
