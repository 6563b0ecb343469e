import type { Context, ScheduledEvent } from 'aws-lambda';
import type { CollectionsSummary } from '../domain/use-cases/plan-collections.js';
import { formatInstant } from '../domain/time.js';
import { COLLECTION_QUEUE_IDS, type QueueId } from '../manifest/index.js';
import type { QueueMessage, QueuePort } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import type { AchPumpResult, AchSettlementPump } from './ach-pump.js';
import type { SimulatedClock } from './clock.js';
import { LOCAL_PREFIX } from './emulators.js';
import { lambdaContext, scheduledEvent, type FunctionName } from './lambda-shapes.js';
import { emptyCounts, WRITTEN_OUTCOMES, type OutcomeCounts, type OutcomeTally } from './outcome-tally.js';
import type { SqsDelivery, SqsEventSourceOptions } from './sqs-event-source.js';

/** The queues a collections run fills (one per processor) and then waits on until their consumer received every message. */
export const RUN_QUEUES: readonly QueueId[] = COLLECTION_QUEUE_IDS;
/** How long a run waits for its messages to be delivered before it reports anyway. */
const DRAIN_TIMEOUT_MS = 120_000;

export interface CollectionsRunSummary extends CollectionsSummary {
  readonly now: string;
  /** Messages the batch-worker received during the run (this run's, plus any redeliveries that came due). */
  readonly delivered: number;
  readonly outcomes: OutcomeCounts;
  readonly ach: AchPumpResult;
  readonly duration_ms: number;
}

export type ScheduledHandler = (event: ScheduledEvent, context?: Context) => Promise<unknown>;

/** A QueuePort that tells the runtime which bodies it sent, before they can be received. */
class ObservedQueue implements QueuePort {
  constructor(
    private readonly inner: QueuePort,
    private readonly onSending: (messages: readonly QueueMessage[]) => () => void,
  ) {}

  depth(): Promise<number> {
    return this.inner.depth ? this.inner.depth() : Promise.resolve(0);
  }

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

/** Waits for specific message bodies to be delivered once by the consumer. */
class DeliveryWatch {
  private readonly expected = new Map<string, number>();
  private resolveDone: (() => void) | undefined;
  private abandoned = false;
  deliveredCount = 0;

  expect(bodies: readonly string[]): () => void {
    if (this.abandoned) return () => undefined;
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

  /** Stops waiting: `settled` resolves at once with what was delivered so far. */
  abandon(): void {
    this.abandoned = true;
    this.expected.clear();
    this.check();
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

/** One run's state: what it waits for and what its attempts wrote. */
interface ActiveRun {
  readonly watch: DeliveryWatch;
  readonly counts: OutcomeCounts;
}

/**
 * A collections run, as `POST /local/collections/run` and the scheduler start it: the scheduled
 * function at the simulated now, then a wait until the consumer of RUN_QUEUES received every
 * message the run enqueued (counting what its attempts wrote), then the ACH pump. One run at a
 * time, as one Lambda schedule would run them.
 */
export class CollectionsRun {
  private tail: Promise<unknown> = Promise.resolve();
  private active: ActiveRun | undefined;
  private job: ScheduledHandler | undefined;
  private collecting = false;
  private stopped = false;

  constructor(
    private readonly deps: {
      readonly clock: SimulatedClock;
      readonly tally: OutcomeTally;
      readonly pump: AchSettlementPump;
      readonly logger: Logger;
      /** Budgets set (DESIGN 13): a run answers the planner's summary without waiting for the paced drain. */
      readonly paced?: boolean;
      /** The processors' open circuits (DESIGN 15), read after the drain: an outage the run's attempts met is reported. */
      readonly openCircuits?: () => Promise<readonly string[]>;
    },
  ) {}

  /** True while a run is in progress (its own pump delivers, and counts, the ACH outcomes). */
  get isCollecting(): boolean {
    return this.collecting;
  }

  /** The run's queue as the functions get it: each send is expected by the run in progress. */
  observe(queue: QueuePort): QueuePort {
    return new ObservedQueue(queue, (messages) => this.active?.watch.expect(messages.map((m) => m.body)) ?? (() => undefined));
  }

  /** Hooks for the event sources of RUN_QUEUES: their writes and deliveries count toward the run. */
  consumerHooks(): Pick<SqsEventSourceOptions, 'around' | 'onDelivered'> {
    return {
      around: (fn) => (this.active ? this.deps.tally.run(this.active.counts, fn) : fn()),
      onDelivered: (deliveries) => {
        const active = this.active;
        if (!active) return;
        for (const d of deliveries) if (!d.succeeded) active.counts.retry_later += 1;
        active.watch.observe(deliveries);
      },
    };
  }

  /** The scheduled function a run invokes (the manifest's one schedule-triggered function). */
  schedules(functionName: FunctionName, handler: ScheduledHandler): void {
    this.job = async (event) => handler(event, lambdaContext(functionName));
  }

  /**
   * On stop: the run in progress stops waiting for its queue (what is still queued stays due and
   * the next run after a restart takes it) and no new run starts. Resolves once the run ended.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.active?.watch.abandon();
    await this.tail.catch(() => undefined);
  }

  run(trigger: 'control' | 'schedule'): Promise<CollectionsRunSummary> {
    if (this.stopped) return Promise.reject(new Error('the local runtime is stopping'));
    const next = this.tail.catch(() => undefined).then(() => this.runOnce(trigger));
    this.tail = next;
    return next;
  }

  private async runPaced(job: ScheduledHandler, trigger: 'control' | 'schedule', runStarted: number): Promise<CollectionsRunSummary> {
    const result = await pacedSummary(job, this.deps.clock.now(), this.deps.pump, runStarted);
    this.deps.logger.info({ trigger, enqueued: result.enqueued, ms: result.duration_ms }, 'paced collections run planned');
    return result;
  }

  private async runOnce(trigger: 'control' | 'schedule'): Promise<CollectionsRunSummary> {
    const { clock, pump, logger } = this.deps;
    const job = this.job;
    if (!job) throw new Error('no scheduled function to run');
    const runStarted = Date.now();
    if (this.deps.paced) return this.runPaced(job, trigger, runStarted);
    const active: ActiveRun = { watch: new DeliveryWatch(), counts: emptyCounts() };
    this.collecting = true;
    this.active = active;
    try {
      const now = clock.now();
      const summary = (await job(scheduledEvent(now, `${LOCAL_PREFIX}-collections-schedule`))) as CollectionsSummary;
      const drained = await active.watch.settled(DRAIN_TIMEOUT_MS);
      if (!drained) logger.warn({ trigger }, 'collections run: not every message was delivered within 120 s; the pollers keep going');
      const { counts, watch } = active;
      let acknowledged = 0;
      for (const key of WRITTEN_OUTCOMES) acknowledged += counts[key];
      counts.no_change = Math.max(0, watch.deliveredCount - counts.retry_later - acknowledged);
      this.active = undefined;
      const ach = await pump.pump();
      const outage = [...new Set([...(summary.processor_outage ?? []), ...((await this.deps.openCircuits?.()) ?? [])])];
      const result: CollectionsRunSummary = {
        now: formatInstant(now),
        ...summary,
        ...(outage.length > 0 ? { processor_outage: outage } : {}),
        delivered: watch.deliveredCount,
        outcomes: counts,
        ach,
        duration_ms: Date.now() - runStarted,
      };
      const fields = { trigger, enqueued: result.enqueued, outcomes: compact(counts), ach: compact(ach), ms: result.duration_ms };
      if (outage.length > 0) logger.error({ ...fields, processor_outage: outage, skipped_outage: summary.skipped_outage ?? 0 }, 'collections run met a processor outage: nothing was counted against members (docs/runbook.md)');
      else logger.info(fields, 'collections run');
      return result;
    } finally {
      this.collecting = false;
      this.active = undefined;
    }
  }
}

/** What a paced run answers: the planner's summary; the delayed messages are presented by the pollers as they come due. */
async function pacedSummary(job: ScheduledHandler, now: Date, pump: AchSettlementPump, runStarted: number): Promise<CollectionsRunSummary> {
  const summary = (await job(scheduledEvent(now, `${LOCAL_PREFIX}-collections-schedule`))) as CollectionsSummary;
  return { now: formatInstant(now), ...summary, delivered: 0, outcomes: emptyCounts(), ach: await pump.pump(), duration_ms: Date.now() - runStarted };
}

/**
 * EventBridge's schedule, locally: a collections run every `intervalMs` of wall time, the next
 * one timed from the end of the last. Returns the stop.
 */
export function startSchedule(run: CollectionsRun, intervalMs: number, logger: Logger): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    timer = setTimeout(async () => {
      try {
        await run.run('schedule');
      } catch (error) {
        logger.error({ err: error }, 'scheduled collections run failed; the next run retries');
      }
      if (!stopped) tick();
    }, intervalMs);
    timer.unref?.();
  };
  if (intervalMs > 0) tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

/** ACH outcomes come due as simulated time passes by itself, too: the pump runs every second. Returns the stop. */
export function startAchPumpTimer(pump: AchSettlementPump, run: CollectionsRun, logger: Logger): () => void {
  const timer = setInterval(() => {
    if (run.isCollecting) return;
    pump.pump().catch((error: unknown) => logger.error({ err: error }, 'ach pump failed'));
  }, 1_000);
  timer.unref();
  return () => clearInterval(timer);
}

function compact(counts: object): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, v]) => typeof v === 'number' && v > 0));
}
