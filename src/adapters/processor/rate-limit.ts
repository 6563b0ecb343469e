import * as z from '../../domain/zod.js';
import { ProcessorThrottledError } from '../../domain/errors.js';
import { PROCESSOR_IDS, type ProcessorId } from '../../domain/processor-budget.js';

/** The simulator's limits (DESIGN 9): requests per wall-clock second per processor, and a presentment's latency. */
export const rateLimitSchema = z.strictObject({
  stripe: z.optional(z.int().check(z.positive())),
  payments: z.optional(z.int().check(z.positive())),
});
export const latencySchema = z
  .strictObject({ p50: z.int().check(z.nonnegative(), z.maximum(60_000)), p99: z.int().check(z.nonnegative(), z.maximum(60_000)) })
  .check(z.refine((l) => l.p99 >= l.p50, 'p99 must be at least p50'));

export interface ProcessorStats {
  requests: number;
  presented: number;
  throttled: number;
  max_per_second: number;
}

export interface SimulatorStats extends ProcessorStats {
  readonly by_processor: Record<ProcessorId, ProcessorStats>;
}

const emptyStats = (): ProcessorStats => ({ requests: 0, presented: 0, throttled: 0, max_per_second: 0 });

/**
 * Counts every request per processor and wall-clock second, and refuses those above the limit the
 * way the processor does (its adapter's ProcessorThrottledError). Cumulative since start.
 */
export class ProcessorRateLimit {
  private limits: z.infer<typeof rateLimitSchema> = {};
  private latency: z.infer<typeof latencySchema> | undefined;
  private readonly seconds = new Map<ProcessorId, { second: number; count: number }>();
  private readonly stats = Object.fromEntries(PROCESSOR_IDS.map((id) => [id, emptyStats()])) as Record<ProcessorId, ProcessorStats>;

  constructor(private readonly wallNowMs: () => number = Date.now) {}

  configure(limits: z.infer<typeof rateLimitSchema> | undefined, latency: z.infer<typeof latencySchema> | undefined): void {
    this.limits = limits ?? {};
    this.latency = latency;
  }

  /** One request to `processor`: counted, then refused if its second is over the limit. */
  admit(processor: ProcessorId): void {
    const stats = this.stats[processor];
    stats.requests += 1;
    const second = Math.floor(this.wallNowMs() / 1000);
    const current = this.seconds.get(processor);
    const window = current && current.second === second ? current : { second, count: 0 };
    window.count += 1;
    this.seconds.set(processor, window);
    stats.max_per_second = Math.max(stats.max_per_second, window.count);
    const limit = this.limits[processor];
    if (limit !== undefined && window.count > limit) {
      stats.throttled += 1;
      throw new ProcessorThrottledError(processor);
    }
  }

  presented(processor: ProcessorId): void {
    this.stats[processor].presented += 1;
  }

  /** A presentment's wait: log-normal with the configured median and 99th percentile; 0 when none is set. */
  delayMs(random: () => number = Math.random): number {
    if (!this.latency || this.latency.p50 === 0) return 0;
    const { p50, p99 } = this.latency;
    const sigma = p99 > p50 ? Math.log(p99 / p50) / 2.326 : 0;
    const u = Math.max(random(), 1e-12);
    const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    return Math.min(60_000, p50 * Math.exp(sigma * normal));
  }

  snapshot(): SimulatorStats {
    const by = Object.fromEntries(PROCESSOR_IDS.map((id) => [id, { ...this.stats[id] }])) as Record<ProcessorId, ProcessorStats>;
    const all = Object.values(by);
    return {
      requests: all.reduce((n, s) => n + s.requests, 0),
      presented: all.reduce((n, s) => n + s.presented, 0),
      throttled: all.reduce((n, s) => n + s.throttled, 0),
      max_per_second: Math.max(...all.map((s) => s.max_per_second)),
      by_processor: by,
    };
  }
}
