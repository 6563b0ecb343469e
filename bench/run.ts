import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoLocal } from '../src/adapters/dynamodb/local-server.js';
import { measureColdStart } from './cold-start.js';
import { measureLatency } from './latency.js';
import { LOG_SINK_DESCRIPTION, openLogSink } from './log-sink.js';
import { measureBillingDay } from './billing-day-section.js';
import { measurePathCosts } from './paths.js';
import { measureReconciliation } from './reconciliation.js';
import { renderTables } from './report.js';
import { collectionRun, floorRun, median, type CollectionRun, type FloorRun } from './throughput.js';

/**
 * `npm run bench`: requests and request units per billed subscription on each path, collection
 * throughput as the median of interleaved project/floor pairs, planning growth with due work and
 * with waiting work, cold start per function against a bare client (bench/cold-start.ts), API
 * latency. Starts its own DynamoDB Local and its own tables; prints tables, writes
 * bench/results.json; `npx tsx bench/report.ts` renders docs/benchmarks.md from it.
 *
 *   --n <count>          due subscriptions per throughput run (default 1000)
 *   --bill-up-to <k>     growth points with more due records plan only (default 1000)
 *   --pairs <k>          interleaved project/floor pairs (default 5, at least 5 for the doc)
 *   --invocations <k>    concurrent batch-worker invocations (default 4; 8 users each in flight)
 *   --cold-runs <k>      interleaved cold-start rounds (default 15)
 *   --quick              growth without the 20k point
 *   --only <a,b>         sections: paths, throughput, growth, coldstart, latency, billing-day, reconciliation
 *   --day-periods <k>    billing day: periods due at one instant (default 10000; 3000 with --quick)
 *   --day-budget <k>     billing day: each processor's budget per second (default 20)
 *   --day-interval <s>   billing day: the collections schedule's interval (default 60)
 *   --day-paced-only     billing day: a 10-period baseline (development runs)
 *   --day-key <name>     billing day: where in the results it goes (default billingDay; billingDayAtMachinePace
 *                        for a second run at a smaller budget)
 *   --out <file>         where the results go (default bench/results.json)
 *   --merge              keep the sections of the existing --out file that this run does not measure
 *                        (re-measure one section of a run, e.g. `--only coldstart --merge`)
 */

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    pairs: { type: 'string', default: '5' },
    invocations: { type: 'string', default: '4' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    'latency-seconds': { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
    'bill-up-to': { type: 'string', default: '1000' },
    'cold-runs': { type: 'string', default: '15' },
    'day-periods': { type: 'string' },
    'day-budget': { type: 'string', default: '20' },
    'day-interval': { type: 'string', default: '60' },
    'day-paced-only': { type: 'boolean', default: false },
    'day-key': { type: 'string', default: 'billingDay' },
    out: { type: 'string', default: join(import.meta.dirname, 'results.json') },
    merge: { type: 'boolean', default: false },
  },
});

const n = Number(values.n);
const pairs = Number(values.pairs);
const invocations = Number(values.invocations);
const billUpTo = Number(values['bill-up-to']);
const coldRuns = Number(values['cold-runs']);
const sections = new Set((values.only ?? 'paths,throughput,growth,coldstart,latency,billing-day,reconciliation').split(','));
const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

const load = () => loadavg().map((x) => Math.round(x * 100) / 100);
const file = resolve(values.out);
const earlier: Record<string, unknown> | undefined = values.merge && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : undefined;
const results: Record<string, unknown> = earlier ?? {
  machine: { nproc: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform, loadavgAtStart: load() },
  startedAt: new Date().toISOString(),
  options: { n, pairs, invocations, quick: values.quick, billUpTo: Number(values['bill-up-to']), sections: [...sections] },
  logging: LOG_SINK_DESCRIPTION,
};
/** Load average (1, 5, 15 min) at the start and end of each section: other agents share this machine. */
const sectionLoad = ((results.sectionLoad as Record<string, unknown> | undefined) ?? {}) as Record<string, { startedAt: string; start: number[]; end?: number[]; seconds?: number }>;
results.sectionLoad = sectionLoad;
if (earlier) {
  const remeasured = ((earlier.remeasured as unknown[] | undefined) ?? []) as unknown[];
  remeasured.push({ sections: [...sections], startedAt: new Date().toISOString(), loadavgAtStart: load() });
  results.remeasured = remeasured;
}
async function section(name: string, work: () => Promise<void>): Promise<void> {
  if (!sections.has(name)) return;
  const started = performance.now();
  sectionLoad[name] = { startedAt: new Date().toISOString(), start: load() };
  log(`${name}: load average ${sectionLoad[name].start.join(' / ')}`);
  await work();
  sectionLoad[name] = { ...sectionLoad[name], end: load(), seconds: Math.round((performance.now() - started) / 1000) };
}

log('starting DynamoDB Local');
const server = await startDynamoLocal();
const sink = openLogSink();
try {
  await section('paths', async () => {
    log('paths: requests and request units per billed subscription');
    results.paths = await measurePathCosts(server.endpoint, 200, sink.stream);
  });

  await section('throughput', async () => {
    // DynamoDB Local is a JVM: warm it (and our code) on both sequences before timing either.
    log('throughput: warming up');
    await collectionRun(server.endpoint, 500, invocations, sink);
    await floorRun(server.endpoint, 500, invocations);
    const runs: { order: string; project: CollectionRun; floor: FloorRun; ratio: number }[] = [];
    for (let i = 0; i < pairs; i++) {
      // Interleaved, order alternating: a drift in the machine's load falls on both sides.
      const projectFirst = i % 2 === 0;
      log(`throughput: pair ${i + 1}/${pairs} (${projectFirst ? 'project first' : 'floor first'})`);
      let project: CollectionRun;
      let floor: FloorRun;
      if (projectFirst) {
        project = await collectionRun(server.endpoint, n, invocations, sink);
        floor = await floorRun(server.endpoint, n, invocations);
      } else {
        floor = await floorRun(server.endpoint, n, invocations);
        project = await collectionRun(server.endpoint, n, invocations, sink);
      }
      runs.push({ order: projectFirst ? 'project, floor' : 'floor, project', project, floor, ratio: Math.round((project.subsPerSecond / floor.subsPerSecond) * 100) / 100 });
      log(`  project ${project.subsPerSecond} subs/s (${project.totalSeconds} s, seeding ${project.seedSeconds} s), floor ${floor.subsPerSecond} subs/s (${floor.seconds} s, seeding ${floor.seedSeconds} s)`);
    }
    results.throughput = {
      subscriptions: n,
      pairs: runs,
      medianProjectSubsPerSecond: median(runs.map((r) => r.project.subsPerSecond)),
      medianFloorSubsPerSecond: median(runs.map((r) => r.floor.subsPerSecond)),
      medianRatio: median(runs.map((r) => r.ratio)),
      concurrency: { invocations, usersPerInvocation: 8, batchSize: 10 },
      queue: 'in memory on both sides',
    };
  });

  await section('growth', async () => {
    const scenarios = [
      { due: 1000, waiting: 0 },
      ...(values.quick ? [] : [{ due: 20000, waiting: 0 }]),
      { due: 1000, waiting: 19000 },
    ];
    const growth: { due: number; waiting: number; project: CollectionRun; floor: FloorRun }[] = [];
    for (const s of scenarios) {
      log(`growth: ${s.due} due, ${s.waiting} waiting`);
      const bill = s.due <= billUpTo;
      const project = await collectionRun(server.endpoint, s.due, invocations, sink, s.waiting, bill);
      const floor = await floorRun(server.endpoint, s.due, invocations, s.waiting, bill);
      log(`  planning ${project.planSeconds} s (project, ${project.planning.itemsRead} items read) vs ${floor.planSeconds} s (floor); seeding ${project.seedSeconds} + ${floor.seedSeconds} s`);
      growth.push({ ...s, project, floor });
    }
    results.growth = growth;
  });

  await section('coldstart', async () => {
    log('cold start: fresh processes, bundles as synthesized');
    try {
      results.coldStart = await measureColdStart({ endpoint: server.endpoint, runs: coldRuns, log });
      delete results.coldStartError;
    } catch (error) {
      // One failing function must not lose the rest of the run's figures (re-measure it with
      // `--only coldstart --merge`).
      log(`cold start failed: ${String(error).slice(0, 300)}`);
      results.coldStart = null;
      results.coldStartError = String(error).slice(0, 300);
    }
  });

  await section('latency', async () => {
    log('latency: API under load');
    results.latency = await measureLatency(server.endpoint, { connections: Number(values.connections), durationS: Number(values['latency-seconds']) });
  });

  await section('reconciliation', async () => {
    log('reconciliation: one day of 2,000 movements, the table holding it alone, then 20 more days; then handed over every 5 pages');
    results.reconciliation = [
      await measureReconciliation(server.endpoint, { movements: 2000, otherDays: 0 }),
      await measureReconciliation(server.endpoint, { movements: 2000, otherDays: 20 }),
      await measureReconciliation(server.endpoint, { movements: 2000, otherDays: 20, handOverEverySteps: 5 }),
    ];
  });

  await section('billing-day', async () => {
    results[values['day-key']] = await measureBillingDay(server.endpoint, sink, log, {
      periods: Number(values['day-periods'] ?? (values.quick ? 3000 : 10000)),
      budgetPerSecond: Number(values['day-budget']),
      intervalSeconds: Number(values['day-interval']),
      pacedOnly: values['day-paced-only'],
    });
  });
} finally {
  sink.close();
  await server.stop();
}

results.finishedAt = new Date().toISOString();
(results.machine as Record<string, unknown>).loadavgAtEnd = load();
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(renderTables(results as never));
log(`wrote ${file}; render docs/benchmarks.md with: npx tsx bench/report.ts`);
