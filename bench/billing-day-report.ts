import { billingDayGoals, type BillingDaySection } from './billing-day-section.js';
import type { BillingDayRun } from './billing-day.js';

/** docs/benchmarks.md's billing-day tables (bench/report.ts renders the rest). */

function table(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(headers), `|${headers.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}

/** The headline row: every goal met or the ones missed, with the figures that matter most. */
export function billingDayHeadline(s: BillingDaySection, variant?: string): string[] {
  const missed = billingDayGoals(s.paced, s.unpaced).filter((g) => !g.met).map((g) => g.measure);
  const p = s.paced;
  const figure = p.drained
    ? `${p.periods} periods at ${p.budgetPerSecond}/s per processor: ${p.messagesPerPeriod} messages/period, ${p.processor.throttled} throttled, pace ${p.minPaceRatio} of E, drain ${p.drainRatio} × ideal, ${p.charges.exactlyOne}/${p.periods} charged once (baseline: ${s.unpaced.messagesPerPeriod} messages/period, ${s.unpaced.processor.throttled} throttled)`
    : `${p.periods} periods at ${p.budgetPerSecond}/s per processor: cut off at ${p.drainSeconds} s with ${p.charged} charged (each once), pace ${p.minPaceRatio} of E, ${p.processor.throttled} throttled, nothing counted (baseline: ${s.unpaced.messagesPerPeriod} messages/period, ${s.unpaced.processor.throttled} throttled)`;
  return [`Billing day, paced${variant ? `, ${variant}` : ''} (goals in the section)`, figure, missed.length === 0 ? 'every goal met' : `missed: ${missed.join('; ')}`];
}

function runRows(r: BillingDayRun): (string | number)[] {
  return [
    r.planner,
    r.periods,
    r.runs.length,
    r.drained ? `${r.drainSeconds} s` : `stopped at ${r.drainSeconds} s`,
    `${r.idealSeconds} s`,
    r.messagesEnqueued,
    `${r.processor.requests} / ${r.processor.presented} / ${r.processor.throttled}`,
    r.processor.max_per_second,
    `${r.pace.stripe.perSecond} / ${r.pace.payments.perSecond}`,
    r.eventSourceCap,
    r.planner === 'paced' ? `${r.tokensLeased.stripe} / ${r.tokensLeased.payments}` : 'no limiter',
  ];
}

export function renderBillingDay(s: BillingDaySection, variant?: string): string[] {
  const p = s.paced;
  const out: string[] = [`### Billing day${variant ? `, ${variant}` : ''}: a backlog presented at the processor budget (DESIGN 13)`, ''];
  out.push(
    `${p.periods} periods due at one instant, half card (Stripe) and half pinless (payments service); each processor's budget ${p.budgetPerSecond}/s with the person share ${p.personShare}, so E = (1 − share) × budget = ${p.effectivePerSecond}/s per processor; the simulator refuses a processor's requests above ${p.budgetPerSecond} in a wall-clock second and answers after a log-normal latency of p50 ${p.latencyMs.p50} ms, p99 ${p.latencyMs.p99} ms. The collections-job runs every ${p.intervalSeconds} s (wall time) until every period is charged; the batch-worker behind an SQS event source of maximumConcurrency ${p.eventSourceCap} (the stack's formula). The baseline is the same backlog with no budgets set: today's unpaced planner and no limiter, cut off at 1.5 × the paced drain.`,
    '',
  );
  out.push(table(['measure', 'paced', 'goal', 'met', 'baseline (unpaced)'], billingDayGoals(p, s.unpaced).map((g) => [g.measure, g.paced, g.goal, g.met ? 'yes' : 'no', g.unpaced])), '');
  const pacedRate = p.pace.stripe.perSecond + p.pace.payments.perSecond;
  const baseRate = s.unpaced.pace.stripe.perSecond + s.unpaced.pace.payments.perSecond;
  if (p.minPaceRatio < 0.9 && baseRate < 2 * p.effectivePerSecond * 0.9) {
    out.push(
      `Why the pace goal is missed here: the baseline, with no limiter and no pacing, presented ${baseRate.toFixed(2)}/s against the paced run's ${pacedRate.toFixed(2)}/s and the budget's ${2 * p.effectivePerSecond}/s, so on this machine the batch-worker bound the pace, not the budget: ${p.units.lambda.workerMsPerMessage} ms of wall time per message in invocations of ${p.units.lambda.messagesPerInvocation} (DynamoDB Local and the bench share the 2 cores with the load shown under "This run", the bench at nice 10), behind an event source cap of ${p.eventSourceCap}. Presenting ${2 * p.effectivePerSecond}/s needs about ${((2 * p.effectivePerSecond * p.units.lambda.workerMsPerMessage) / 1000).toFixed(1)} invocations at once at that speed.`,
      '',
    );
  }
  out.push(
    table(
      ['planner', 'periods', 'runs', 'drain', 'ideal (periods ÷ E)', 'messages sent', 'processor requests / presented / throttled', 'max requests in a second', 'card / pinless presented per s', 'event source cap', 'card / pinless tokens leased'],
      [runRows(p), runRows(s.unpaced)],
    ),
    '',
  );
  out.push('Planner runs (paced): start, enqueued, and per processor the quota, what was still queued, and the backlog after the run.', '');
  out.push(
    table(
      ['run', 'at s', 'ms', 'enqueued', 'card quota / in queue / backlog', 'pinless quota / in queue / backlog'],
      p.runs.map((run, i) => {
        const by = (run.byProcessor ?? {}) as Record<string, { quota?: number; in_queue?: number; backlog?: number }>;
        const cell = (k: string) => (by[k] ? `${by[k].quota} / ${by[k].in_queue} / ${by[k].backlog}` : run.skipped ?? '-');
        return [i + 1, run.atSeconds, run.ms, run.enqueued, cell('stripe'), cell('payments')];
      }),
    ),
    '',
  );
  const u = p.units;
  if (!p.drained) {
    out.push('This paced run was cut off before the drain; its units per period are in the run that drained (below, and docs/capacity.md).', '');
    return out;
  }
  out.push('Measured units per period on billing day (paced run; docs/capacity.md is derived from these):', '');
  out.push(
    table(
      ['unit', 'per period', 'detail'],
      [
        ['DynamoDB requests', u.dynamodb.requests, Object.entries(u.dynamodb.byCommand).map(([k, v]) => `${k} ${v}`).join(', ')],
        ['DynamoDB RRU', u.dynamodb.rru, 'on-demand read request units'],
        ['DynamoDB WRU (tables)', u.dynamodb.wru, 'transactional writes at 2 per KB'],
        ['DynamoDB WRU (GSIs)', u.dynamodb.gsiWru, 'index entries an item enters, leaves or changes in'],
        ['SQS requests', u.sqs.perPeriod, `SendMessageBatch ${u.sqs.sendBatch}, ReceiveMessage ${u.sqs.receive}, DeleteMessageBatch ${u.sqs.deleteBatch}, GetQueueAttributes ${u.sqs.getAttributes} in the run (${u.sqs.emptyReceives} empty polls apart)`],
        ['batch-worker Lambda ms', u.lambda.workerMsPerMessage, `${u.lambda.workerMemoryMb} MB; ${u.lambda.workerInvocations} invocations of ${u.lambda.messagesPerInvocation} messages; wall time including the processor's latency and the limiter's waits`],
        ['collections-job Lambda ms per run', u.lambda.plannerMsPerRun, `${u.lambda.plannerMemoryMb} MB; ${u.lambda.plannerRuns} runs`],
        ['EventBridge events', u.eventBridgeEventsPerPeriod, 'published from the history rows billing day writes (a sample of 100 periods)'],
        ['log bytes (info)', u.logBytesPerPeriod, 'CloudWatch Logs ingestion'],
      ],
    ),
    '',
  );
  return out;
}
