import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoLocal } from '../src/adapters/dynamodb/local-server.js';
import { measureLatency } from './latency.js';
import { LOG_SINK_DESCRIPTION, openLogSink } from './log-sink.js';
import { measurePathCosts } from './paths.js';
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
 *   --quick              growth without the 20k point
 *   --only <a,b>         sections: paths, throughput, growth, coldstart, latency
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
  },
});

const n = Number(values.n);
const pairs = Number(values.pairs);
const invocations = Number(values.invocations);
const billUpTo = Number(values['bill-up-to']);
const sections = new Set((values.only ?? 'paths,throughput,growth,coldstart,latency').split(','));
const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

const results: Record<string, unknown> = {
  machine: { nproc: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform, loadavgAtStart: loadavg().map((x) => Math.round(x * 100) / 100) },
  startedAt: new Date().toISOString(),
  options: { n, pairs, invocations, quick: values.quick, billUpTo: Number(values['bill-up-to']), sections: [...sections] },
  logging: LOG_SINK_DESCRIPTION,
};

log('starting DynamoDB Local');
const server = await startDynamoLocal();
const sink = openLogSink();
try {
  if (sections.has('paths')) {
    log('paths: requests and request units per billed subscription');
    results.paths = await measurePathCosts(server.endpoint, 200, sink.stream);
  }

  if (sections.has('throughput')) {
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
  }

  if (sections.has('growth')) {
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
      growth.push({ ...s, project, floor });
    }
    results.growth = growth;
  }

  if (sections.has('coldstart')) {
    const module = join(import.meta.dirname, 'cold-start.ts');
    if (existsSync(module)) {
      log('cold start: fresh processes, bundles as synthesized');
      const { measureColdStart } = (await import('./cold-start.js' as string)) as { measureColdStart: (o: { endpoint: string; runs: number; log: (m: string) => void }) => Promise<unknown> };
      try {
        results.coldStart = await measureColdStart({ endpoint: server.endpoint, runs: 7, log });
      } catch (error) {
        // One failing function must not lose the rest of the run's figures.
        log(`cold start failed: ${String(error).slice(0, 300)}`);
        results.coldStart = null;
        results.coldStartError = String(error).slice(0, 300);
      }
    } else {
      log('cold start: bench/cold-start.ts is not here yet (the manifest helper supplies it); skipped');
      results.coldStart = null;
    }
  }

  if (sections.has('latency')) {
    log('latency: API under load');
    results.latency = await measureLatency(server.endpoint, { connections: Number(values.connections), durationS: Number(values['latency-seconds']) });
  }
} finally {
  sink.close();
  await server.stop();
}

results.finishedAt = new Date().toISOString();
(results.machine as Record<string, unknown>).loadavgAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
const file = join(import.meta.dirname, 'results.json');
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(renderTables(results as never));
log(`wrote ${file}; render docs/benchmarks.md with: npx tsx bench/report.ts`);
