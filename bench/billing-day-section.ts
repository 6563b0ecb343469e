import { DEFAULT_PERSON_SHARE } from '../src/domain/processor-budget.js';
import { billingDayRun, type BillingDayRun } from './billing-day.js';
import type { LogSink } from './log-sink.js';

/** The simulator's latency on billing day (DESIGN 13): p50 120 ms, p99 380 ms. */
export const BILLING_DAY_LATENCY = { p50: 120, p99: 380 } as const;

export interface BillingDayGoal {
  readonly measure: string;
  readonly paced: string;
  readonly unpaced: string;
  readonly goal: string;
  readonly met: boolean;
}

export interface BillingDaySection {
  readonly paced: BillingDayRun;
  readonly unpaced: BillingDayRun;
  readonly goals: readonly BillingDayGoal[];
}

const pct = (x: number) => `${Math.round(x * 100_000) / 1000} %`;

/** Each goal of DESIGN 13's billing day beside the paced run's figure and the baseline's. */
export function billingDayGoals(paced: BillingDayRun, unpaced: BillingDayRun): BillingDayGoal[] {
  const row = (measure: string, figure: (r: BillingDayRun) => string, goal: string, met: (r: BillingDayRun) => boolean): BillingDayGoal => ({ measure, paced: figure(paced), unpaced: figure(unpaced), goal, met: met(paced) });
  const drain = (r: BillingDayRun) => (r.drained ? String(r.drainRatio) : `not drained in ${Math.round(r.drainSeconds)} s (${r.charged}/${r.periods} charged)`);
  return [
    row('messages enqueued ÷ periods', (r) => (r.drained ? String(r.messagesPerPeriod) : `not drained: ${r.messagesEnqueued} messages for ${r.charged} periods charged`), '≤ 1.02', (r) => r.drained && r.messagesPerPeriod <= 1.02),
    row('throttled answers ÷ processor requests', (r) => `${pct(r.throttledShare)} (${r.processor.throttled} of ${r.processor.requests})`, '≤ 0.1 %', (r) => r.throttledShare <= 0.001),
    row('presentments per second ÷ E while a backlog lasts (the slower processor)', (r) => `${r.minPaceRatio} (card ${r.pace.stripe.perSecond}/s, pinless ${r.pace.payments.perSecond}/s, E ${r.effectivePerSecond}/s each)`, '≥ 0.9', (r) => r.minPaceRatio >= 0.9),
    row('counted failures, dunning moves, DLQ messages', (r) => `${r.countedFailures}, ${r.dunningMoves}, ${r.dlqMessages}`, '0, 0, 0', (r) => r.countedFailures + r.dunningMoves + r.dlqMessages === 0),
    row('charges per period', (r) => (r.charges.exactlyOne === r.periods ? 'exactly 1 for every period' : `1 for ${r.charges.exactlyOne}, 0 for ${r.charges.none}, 2+ for ${r.charges.moreThanOne}`), 'exactly 1', (r) => r.charges.exactlyOne === r.periods),
    row('drain time from the first run ÷ (periods ÷ E)', drain, '≤ 1.15', (r) => r.drained && r.drainRatio <= 1.15),
  ];
}

/** The paced run, then the baseline (today's unpaced planner, no limiter) on the same backlog, budget and latency. */
export async function measureBillingDay(
  endpoint: string,
  sink: LogSink,
  log: (message: string) => void,
  options: { periods: number; budgetPerSecond: number; intervalSeconds: number; pacedOnly?: boolean },
): Promise<BillingDaySection> {
  const base = { ...options, personShare: DEFAULT_PERSON_SHARE, latency: BILLING_DAY_LATENCY, log };
  const ideal = options.periods / (2 * Math.floor((1 - DEFAULT_PERSON_SHARE) * options.budgetPerSecond));
  // DynamoDB Local is a JVM: a short billing day first, not reported, so neither run pays its warm-up.
  log('billing day: warming up (200 periods, not reported)');
  await billingDayRun(endpoint, { ...base, periods: 200, intervalSeconds: 20, paced: true, deadlineSeconds: 90 }, sink);
  const paced = await billingDayRun(endpoint, { ...base, paced: true, deadlineSeconds: Math.ceil(ideal * 2 + 2 * options.intervalSeconds) }, sink);
  log(`  paced: ${paced.drained ? `drained in ${paced.drainSeconds} s` : 'not drained'}, ${paced.messagesPerPeriod} messages/period, ${paced.processor.throttled} throttled`);
  // The baseline is cut off where the paced run would have long finished: it shows the cost, it need not drain.
  const unpaced = await billingDayRun(endpoint, { ...base, paced: false, periods: options.pacedOnly ? 10 : options.periods, deadlineSeconds: Math.ceil(Math.max(paced.drainSeconds, ideal) * 1.5 + options.intervalSeconds) }, sink);
  log(`  unpaced: ${unpaced.drained ? `drained in ${unpaced.drainSeconds} s` : 'not drained'}, ${unpaced.messagesPerPeriod} messages/period, ${unpaced.processor.throttled} throttled`);
  const goals = billingDayGoals(paced, unpaced);
  for (const g of goals) log(`  ${g.met ? 'met ' : 'MISSED'} ${g.measure}: ${g.paced} (goal ${g.goal}; baseline ${g.unpaced})`);
  const u = paced.units;
  log(`  measured units per period: DynamoDB ${u.dynamodb.requests} requests, ${u.dynamodb.rru} RRU, ${u.dynamodb.wru} WRU + ${u.dynamodb.gsiWru} GSI WRU; SQS ${u.sqs.perPeriod} requests; Lambda ${u.lambda.workerMsPerMessage} ms at ${u.lambda.workerMemoryMb} MB per message (${u.lambda.messagesPerInvocation} per invocation), planner ${u.lambda.plannerMsPerRun} ms per run; EventBridge ${u.eventBridgeEventsPerPeriod} events; ${u.logBytesPerPeriod} log bytes`);
  return { paced, unpaced, goals };
}
