/** The planner's arithmetic on billing day (DESIGN 13): how much a run plans per processor, and when each message is due. */

/**
 * Stop this far before the next run: the poller's pickup of a message come due (about a second)
 * plus the p99 attempt. A message still queued at the next run comes off that run's quota anyway.
 */
export const PLAN_MARGIN_SECONDS = 2;
/** SQS DelaySeconds ceiling. */
export const MAX_DELAY_SECONDS = 900;

/** The quota's multiplier stays within these bounds (additive increase, multiplicative decrease). */
export const MIN_QUOTA_FACTOR = 0.1;
const FACTOR_STEP = 0.1;

export interface QuotaInputs {
  /** Scheduled requests per second the processor takes from us: (1 − share) × budget. */
  readonly rate: number;
  readonly intervalSeconds: number;
  readonly marginSeconds: number;
  /** The multiplier throttles lowered (1 when none were reported). */
  readonly factor: number;
  /** Its messages still queued, delayed or in flight. */
  readonly inQueue: number;
}

/** At most (1 − share) × budget × (interval − margin), lowered by throttles, minus what is still queued. */
export function quotaOf(input: QuotaInputs): number {
  const window = Math.max(0, input.intervalSeconds - input.marginSeconds);
  return Math.max(0, Math.floor(input.rate * window * input.factor) - Math.max(0, Math.floor(input.inQueue)));
}

/**
 * Lowered in proportion to what the workers reported throttled of a run's worth (at most halved),
 * else raised by a step, back to 1: a stray throttle at a second's edge costs a stray share, not half a run.
 */
export function nextQuotaFactor(factor: number, throttledSinceLastRun: number, plannedPerRun: number): number {
  const share = throttledSinceLastRun / Math.max(1, plannedPerRun);
  const next = throttledSinceLastRun > 0 ? factor * Math.max(0.5, 1 - share) : factor + FACTOR_STEP;
  return Math.min(1, Math.max(MIN_QUOTA_FACTOR, Math.round(next * 1000) / 1000));
}

/**
 * Message i of a processor is due at `runStart + i / rate` (so the send time does not shift the
 * tail): its SQS DelaySeconds when sent `elapsedMs` after the run's start.
 */
export function delaySecondsOf(index: number, rate: number, elapsedMs: number): number {
  const slotMs = Math.floor(index / rate) * 1000;
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((slotMs - elapsedMs) / 1000)));
}

/** The interval a synth accepts: at least the planner's timeout plus the margin, at most 900 s (the longest delay). */
export function intervalProblem(intervalSeconds: number, timeoutSeconds: number): string | undefined {
  if (intervalSeconds < timeoutSeconds + PLAN_MARGIN_SECONDS) {
    return `the collections interval (${intervalSeconds} s) must be at least the collections-job timeout plus ${PLAN_MARGIN_SECONDS} s (${timeoutSeconds + PLAN_MARGIN_SECONDS} s)`;
  }
  if (intervalSeconds > MAX_DELAY_SECONDS) return `the collections interval (${intervalSeconds} s) must be at most ${MAX_DELAY_SECONDS} s, the longest SQS delay`;
  return undefined;
}

/** Minutes to present `backlog` periods at `rate` per second. */
export function backlogEtaMinutes(backlog: number, rate: number): number {
  return rate > 0 ? Math.ceil(backlog / rate / 60) : 0;
}

/** Presentments one batch-worker invocation has in flight (its users at once: USER_CONCURRENCY). */
export const IN_BATCH_PARALLELISM = 8;

/**
 * How long a collections queue's event source gathers for a full batch. Paced messages come due one
 * at a time, so without it batches are small and the cap below, sized for this parallelism, is short.
 */
export const COLLECTION_BATCHING_WINDOW_SECONDS = 1;

/** The processor's slow answer the event source's cap is sized for (the bench's simulator: p50 120 ms, p99 380 ms). */
export const PROCESSOR_P99_LATENCY_MS = 380;

/**
 * An event source's `maximumConcurrency`: max(2, ⌈budget × p99 latency ÷ in-batch parallelism⌉ + 1),
 * enough invocations to keep `budgetPerSecond` requests in flight, and no more.
 */
export function eventSourceCap(budgetPerSecond: number, p99Ms: number, parallelism: number): number {
  return Math.max(2, Math.ceil((budgetPerSecond * p99Ms) / 1000 / parallelism) + 1);
}
