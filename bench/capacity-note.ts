import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { COLLECTION_BATCHING_WINDOW_SECONDS, eventSourceCap, IN_BATCH_PARALLELISM, PLAN_MARGIN_SECONDS, PROCESSOR_P99_LATENCY_MS } from '../src/domain/billing-day.js';
import { DEFAULT_BUDGET_PER_SECOND, DEFAULT_PERSON_SHARE } from '../src/domain/processor-budget.js';
import type { BillingDayRun } from './billing-day.js';
import { RESULTS_FILE, type BenchResults } from './report.js';

/**
 * docs/capacity.md from the billing-day section's measured units per period (bench/results.json):
 *
 *   npx tsx bench/capacity-note.ts
 *
 * Every per-period figure below is the bench's; the prices and AWS limits are stated where used.
 */

export const CAPACITY_FILE = join(import.meta.dirname, '..', 'docs', 'capacity.md');

const PERIODS = 2_000_000;
/** us-east-1 list prices (on-demand DynamoDB, arm64 Lambda, SQS standard, EventBridge custom events, CloudWatch Logs). */
const PRICE = { wruPerM: 0.625, rruPerM: 0.125, gbSecond: 0.0000133334, lambdaRequestPerM: 0.2, sqsPerM: 0.4, eventsPerM: 1.0, logsPerGb: 0.5 } as const;
const INTERVAL_S = 900;
/** A new on-demand table's warm throughput (writes, reads per second) and one partition's ceiling. */
const WARM_WRU = 4_000;
const PARTITION_WCU = 1_000;

const f = (x: number, digits = 2) => (Math.round(x * 10 ** digits) / 10 ** digits).toLocaleString('en-US');
const usd = (x: number) => `$${x.toFixed(2)}`;

/** The units come from a paced run that drained (every period charged): the machine-pace run when the full one was cut off. */
export function capacitySource(r: BenchResults): BillingDayRun {
  const runs = [r.billingDay?.paced, r.billingDayAtMachinePace?.paced].filter((x): x is BillingDayRun => x !== undefined);
  const run = runs.find((x) => x.drained) ?? [...runs].sort((a, b) => b.charged - a.charged)[0];
  if (!run) throw new Error('bench/results.json has no billing-day section: run npm run bench -- --only billing-day --merge');
  return perCharged(run);
}

/** Units per period charged: results from before `unitsPerCharged` divided the run's totals by every period seeded. */
function perCharged(run: BillingDayRun): BillingDayRun {
  if (run.unitsPerCharged || run.charged === run.periods || run.charged === 0) return run;
  const k = run.periods / run.charged;
  const x = (v: number) => Math.round(v * k * 1000) / 1000;
  const u = run.units;
  return {
    ...run,
    unitsPerCharged: true,
    units: {
      ...u,
      dynamodb: { requests: x(u.dynamodb.requests), rru: x(u.dynamodb.rru), wru: x(u.dynamodb.wru), gsiWru: x(u.dynamodb.gsiWru), byCommand: Object.fromEntries(Object.entries(u.dynamodb.byCommand).map(([c, v]) => [c, x(v)])) },
      sqs: { ...u.sqs, perPeriod: x(u.sqs.perPeriod) },
      eventBridgeEventsPerPeriod: x(u.eventBridgeEventsPerPeriod),
      logBytesPerPeriod: Math.round(u.logBytesPerPeriod * k),
    },
  };
}

export function renderCapacity(run: BillingDayRun, _results?: BenchResults): string {
  const u = run.units;
  const E = Math.floor((1 - DEFAULT_PERSON_SHARE) * DEFAULT_BUDGET_PER_SECOND + 1e-9);
  const wru = u.dynamodb.wru + u.dynamodb.gsiWru;
  const gbs = (u.lambda.workerMsPerMessage / 1000) * (u.lambda.workerMemoryMb / 1024);
  const invocations = 1 / u.lambda.messagesPerInvocation;
  const allCardS = PERIODS / E;
  const halfS = PERIODS / 2 / E;
  const runs = Math.ceil(allCardS / INTERVAL_S);
  const plannerGbs = runs * (u.lambda.plannerMsPerRun / 1000) * (u.lambda.plannerMemoryMb / 1024);
  const rows: [string, string, string, string, number][] = [
    ['DynamoDB writes (tables + indexes)', `${f(wru, 3)} WRU (${f(u.dynamodb.wru, 3)} + ${f(u.dynamodb.gsiWru, 3)})`, `${f((wru * PERIODS) / 1e6, 1)} M WRU`, `$${PRICE.wruPerM} per M`, (wru * PERIODS * PRICE.wruPerM) / 1e6],
    ['DynamoDB reads', `${f(u.dynamodb.rru, 3)} RRU`, `${f((u.dynamodb.rru * PERIODS) / 1e6, 2)} M RRU`, `$${PRICE.rruPerM} per M`, (u.dynamodb.rru * PERIODS * PRICE.rruPerM) / 1e6],
    ['Lambda batch-worker duration', `${f(u.lambda.workerMsPerMessage, 1)} ms at ${u.lambda.workerMemoryMb} MB = ${f(gbs, 4)} GB-s`, `${f(gbs * PERIODS, 0)} GB-s`, `$${PRICE.gbSecond} per GB-s (arm64)`, gbs * PERIODS * PRICE.gbSecond],
    ['Lambda batch-worker requests', `${f(invocations, 3)} invocations (${u.lambda.messagesPerInvocation} messages each)`, `${f((invocations * PERIODS) / 1e6, 2)} M`, `$${PRICE.lambdaRequestPerM} per M`, (invocations * PERIODS * PRICE.lambdaRequestPerM) / 1e6],
    ['Lambda collections-job', `${f(u.lambda.plannerMsPerRun, 0)} ms per run at ${u.lambda.plannerMemoryMb} MB`, `${runs} runs, ${f(plannerGbs, 0)} GB-s`, `$${PRICE.gbSecond} per GB-s`, plannerGbs * PRICE.gbSecond],
    ['SQS requests', `${f(u.sqs.perPeriod, 3)} (send, receive, delete, depth)`, `${f((u.sqs.perPeriod * PERIODS) / 1e6, 2)} M`, `$${PRICE.sqsPerM} per M`, (u.sqs.perPeriod * PERIODS * PRICE.sqsPerM) / 1e6],
    ['EventBridge events', `${f(u.eventBridgeEventsPerPeriod, 2)}`, `${f((u.eventBridgeEventsPerPeriod * PERIODS) / 1e6, 2)} M`, `$${PRICE.eventsPerM} per M`, (u.eventBridgeEventsPerPeriod * PERIODS * PRICE.eventsPerM) / 1e6],
    ['CloudWatch Logs (info)', `${u.logBytesPerPeriod} bytes`, `${f((u.logBytesPerPeriod * PERIODS) / 1e9, 2)} GB`, `$${PRICE.logsPerGb} per GB`, (u.logBytesPerPeriod * PERIODS * PRICE.logsPerGb) / 1e9],
  ];
  const total = rows.reduce((a, row) => a + row[4], 0);
  const rate = 2 * E;
  const byCommand = Object.entries(u.dynamodb.byCommand).map(([k, v]) => `${k} ${v}`).join(', ');
  const leases = u.dynamodb.byCommand.UpdateItem ?? 0;
  const warmPeriods = WARM_WRU / wru;
  const workerConcurrency = (rate * u.lambda.workerMsPerMessage) / 1000;
  const cap = eventSourceCap(2 * DEFAULT_BUDGET_PER_SECOND, PROCESSOR_P99_LATENCY_MS, IN_BATCH_PARALLELISM);
  const table = (headers: string[], body: string[][]) => [`| ${headers.join(' | ')} |`, `|${headers.map(() => '---').join('|')}|`, ...body.map((b) => `| ${b.join(' | ')} |`)].join('\n');

  return `# Capacity on billing day

<!-- Generated by \`npx tsx bench/capacity-note.ts\` from bench/results.json; do not edit by hand. -->

What 2 million periods due on one day cost and how long they take at the default budget
(\`STRIPE_BUDGET_PER_SECOND\` = \`PAYMENTS_BUDGET_PER_SECOND\` = ${DEFAULT_BUDGET_PER_SECOND}, \`PROCESSOR_PERSON_SHARE\` = ${DEFAULT_PERSON_SHARE}),
which limit binds next, and what an operator changes when the processor raises its limit.

**Source.** Every per-period figure is measured by \`npm run bench\` (section "billing day",
[benchmarks.md](benchmarks.md)): ${run.periods} periods due at one instant, half card and half
pinless, through the paced planner, the limiter, the batch-worker and the throttling simulator
(p50 ${run.latencyMs.p50} ms, p99 ${run.latencyMs.p99} ms; ${run.charged} periods charged${run.drained ? '' : ' before the run was cut off, units per period charged'}), at ${run.budgetPerSecond}/s per processor (benchmarks.md, "Billing day"). The bench prints
these units ("measured units per period"); this file is rendered from \`bench/results.json\`, so
the two cannot disagree. Prices are us-east-1 list prices (stated per row); AWS limits are the
documented defaults.

Measured per period: DynamoDB ${u.dynamodb.requests} requests (${byCommand}), ${u.dynamodb.rru} RRU,
${u.dynamodb.wru} WRU on the tables and ${u.dynamodb.gsiWru} on their indexes; SQS ${u.sqs.perPeriod} requests;
batch-worker ${u.lambda.workerMsPerMessage} ms of wall time per message at ${u.lambda.workerMemoryMb} MB in invocations of
${u.lambda.messagesPerInvocation} messages; ${u.eventBridgeEventsPerPeriod} EventBridge events; ${u.logBytesPerPeriod} log bytes. The worker's ms are
measured on a shared 2-core machine (load in benchmarks.md) and include the processor's latency
and the limiter's waits: an upper bound for Lambda, where a DynamoDB request takes milliseconds.

## How long

The schedule presents E = ⌊(1 − share) × budget⌋ = ${E} requests a second to each processor; the
other ${DEFAULT_BUDGET_PER_SECOND - E} are kept for manual pay, retry-billing, loan payments and reactivations. A card attempt is
one Stripe request (the PaymentMethod comes from the stored card instrument); a pinless or ACH
attempt is one payments-service request. The bench's paced run presented at ${run.minPaceRatio} of E
(the slower processor) and ${run.drained ? `drained in ${run.drainRatio} × periods ÷ E` : `was cut off at ${run.drainSeconds} s with ${run.charged} of ${run.periods} charged`} (benchmarks.md says why); the planner's margin alone costs
${PLAN_MARGIN_SECONDS} s of every run (${f((PLAN_MARGIN_SECONDS / INTERVAL_S) * 100, 1)} % of a 15-minute interval, ${f((PLAN_MARGIN_SECONDS / run.intervalSeconds) * 100, 1)} % of the bench's ${run.intervalSeconds} s).

${table(
    ['due on the day', 'processor mix', 'time at E', 'planner runs (15 min)'],
    [
      ['2,000,000', 'all card (Stripe)', `2,000,000 ÷ ${E}/s = ${f(allCardS, 0)} s ≈ **${f(allCardS / 3600, 1)} h**`, String(runs)],
      ['2,000,000', 'half card, half pinless/ACH', `1,000,000 ÷ ${E}/s per processor, in parallel ≈ **${f(halfS / 3600, 1)} h**`, String(Math.ceil(halfS / INTERVAL_S))],
    ],
  )}

Each 15-minute run enqueues at most E × (900 − ${PLAN_MARGIN_SECONDS}) = ${f(E * (INTERVAL_S - PLAN_MARGIN_SECONDS), 0)} messages per processor; the rest
waits in the due-index, not in a queue. The backlog ETA alarm (48 h) stays quiet at this size.

## What it costs

${table(['resource', 'per period (measured)', '2,000,000 periods', 'price', 'cost'], [...rows.map((row) => [row[0], row[1], row[2], row[3], usd(row[4])]), ['**total**', '', '', '', `**${usd(total)}**`]])}

DynamoDB writes are most of it: the attempt's one transaction (the period, its history row, the
next period and its history row, the card instrument's presentment or the movement row, the lock's
delete) at 2 WRU per KB, and the index entries the period leaves and the next period enters.

## Which limit binds next

At the default budget the processor binds. Each row says what billing day puts on the limit at
E = ${E}/s per processor (${rate} periods/s with both processors busy) and the rate at which it would bind.

${table(
    ['limit', 'at the default budget', 'binds at'],
    [
      ['processor budget', `100 % by design (${rate} requests/s)`, 'the budget'],
      ['billing-activity primary key (`user_id`, `billing_date`)', 'one item per period: no key is hot', 'never on billing day'],
      ['due-index (`DUE#{processor}#{n}`, 16 shards per processor, shards taken in turn)', `each attempt removes an entry and the next period adds one on the same shard: ≈ ${f((E / 16) * 2, 1)} index writes/s per shard`, `${PARTITION_WCU} WCU/s per partition: ≈ ${f((PARTITION_WCU * 16) / 2, 0)} attempts/s per processor`],
      ['subscription-id indexes (billing-activity, history)', 'one key per subscription', 'never on billing day'],
      ['failing, dunning, exceptions, held indexes; `GAUGES#` counters (32 items)', 'written only when an attempt fails, declines or is held: not by a successful billing day', `a decline wave: ${PARTITION_WCU} WCU/s per shard key; gauge commits conflict at about rate × 20 ms ÷ 32`],
      ['money-movements (`{rail}#{day}#{shard}`, 8 shards)', `one row per charge: ≈ ${f((E / 8) * 2, 1)} WRU/s per key (transactional)`, `≈ ${f((PARTITION_WCU * 8) / 2, 0)} charges/s per rail`],
      ['ACH return-rate counters (`ACH_RATES#`, 32 items of a day on one partition key) in an ACH debit\'s transaction', `ACH only (not card or pinless): at ${E} ACH debits/s ≈ ${f((E * 0.02 * 100) / 32, 1)} % of commits conflict (rate × 20 ms ÷ 32 items)`, `6 % at 100 ACH/s; the partition's ${PARTITION_WCU} WCU/s at ≈ 500 ACH debits/s`],
      ['limiter items (`processor-budget:{processor}:{second}`, locks table)', `${f(leases, 3)} leases per period measured: ≈ ${f(leases * E, 1)} UpdateItem/s on one second's key`, `${PARTITION_WCU} WCU/s per key: ≈ ${f(PARTITION_WCU / Math.max(leases, 0.01), 0)} presentments/s per processor`],
      ['lock items (`user#…`), instruments (`user_id`)', 'one per user', 'never on billing day'],
      ['on-demand warm throughput (a new table: 4,000 WRU/s, 12,000 RRU/s)', `${f(wru * rate, 0)} WRU/s`, `≈ ${f(warmPeriods, 0)} periods/s: pre-warm (\`WarmThroughput\`) or let the table double its peak first`],
      ['Lambda concurrency', `batch-worker needs ≈ ${f(workerConcurrency, 1)} concurrent invocations at the measured ${u.lambda.workerMsPerMessage} ms per message; its event source cap and reserved concurrency are ${cap}`, 'the account\'s 1,000 (shared by every function); the cap follows the budget at synth'],
      ['SQS in flight (120,000 per queue)', `≤ cap × 10 = ${cap * 10}; delayed messages (≤ ${f(2 * E * (INTERVAL_S - PLAN_MARGIN_SECONDS), 0)}) are not in flight`, 'not reached while the planner paces'],
      ['EventBridge PutEvents', `${f(u.eventBridgeEventsPerPeriod * rate, 1)} events/s`, "the region's PutEvents quota (10,000/s in us-east-1; lower in smaller regions)"],
      ['collections-job timeout (300 s)', `${f(u.lambda.plannerMsPerRun, 0)} ms per run for the bench's quota; a 15-minute quota is ${f(E * (INTERVAL_S - PLAN_MARGIN_SECONDS), 0)} messages per processor`, 'measure a full quota in AWS before raising budgets tenfold'],
    ],
  )}

The event source's cap assumes an attempt takes about the processor's p99 with 8 in flight
(${f(PROCESSOR_P99_LATENCY_MS / IN_BATCH_PARALLELISM, 1)} ms per message). The bench measured ${u.lambda.workerMsPerMessage} ms per message on its loaded machine (DynamoDB Local
sharing 2 cores; the limiter's waits included), so there the cap, not the budget, bound the pace;
in Lambda, where a DynamoDB request takes milliseconds, check the batch-worker's duration per
message against that figure after the first billing day, and raise the cap if it is above it.

The 8 in flight also need full batches, and paced messages come due one at a time (message i at
the run's start + i ÷ E): a poller that invokes with what one poll returns presents what came due
since its last poll, full batches only while the workers lag (the run above: ${u.lambda.messagesPerInvocation} messages per
invocation at ${u.lambda.workerMsPerMessage} ms per message) and a few when they keep up, when the cap is too low for the budget.
So both collections queues' event sources gather for up to ${COLLECTION_BATCHING_WINDOW_SECONDS} s (\`maxBatchingWindow\`, the
manifest's \`maxBatchingWindowSeconds\`): at E = ${E}/s ten messages come due in ${f(10 / E, 2)} s, so a batch
fills while a backlog lasts, and a message waits at most the window before it is presented. The
queues' visibility timeout is six function timeouts plus the window, as Lambda asks.

## When the processor raises its limit

1. Set the CDK contexts \`stripeBudgetPerSecond\` / \`paymentsBudgetPerSecond\` (the functions'
   \`STRIPE_BUDGET_PER_SECOND\` / \`PAYMENTS_BUDGET_PER_SECOND\`) to what the processor granted,
   keep \`processorPersonShare\` (raise it if people's actions wait for tokens), and deploy. The event
   source's \`maximumConcurrency\` and the batch-worker's reserved concurrency follow at synth
   (max(2, ⌈(stripe + payments budget) × 0.38 s ÷ 8⌉ + 1)).
2. Keep \`collectionsRate\` at 15 minutes or less (synth refuses more than 900 s, the longest SQS
   delay, or less than the job's timeout plus ${PLAN_MARGIN_SECONDS} s).
3. Past ≈ ${f(warmPeriods, 0)} periods/s in all, pre-warm the billing-activity and history tables' write
   throughput before the billing day.
4. Past ≈ 100 ACH debits/s, expect counter conflicts on \`ACH_RATES#\` (transient, retried, never a
   second charge) until the counters leave the attempt's transaction.
5. \`backlogEtaAlarmHours\` (default 48): set it to the longest billing day the business accepts;
   a budget twice as large halves the ETA.
`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
  if (!results.billingDay) throw new Error('bench/results.json has no billing-day section: run npm run bench -- --only billing-day --merge');
  writeFileSync(CAPACITY_FILE, renderCapacity(capacitySource(results), results));
  console.error(`wrote ${CAPACITY_FILE}`);
}
