import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startDynamoLocal } from '../src/adapters/dynamodb/local-server.js';
import { measureBundles } from './bundles.js';
import { measureLatency } from './latency.js';
import { measurePathCosts } from './paths.js';
import { collectionRun, rawFloor, type CollectionRun } from './throughput.js';

/**
 * `npm run bench`: DynamoDB cost per billed subscription on each path, collection throughput
 * against the raw request floor, bundle sizes and cold imports, API latency, and cost growth.
 * Starts its own DynamoDB Local and its own tables; prints tables and writes bench/results.json.
 *
 *   --n <count>          subscriptions in the throughput run (default 5000)
 *   --invocations <k>    concurrent batch-worker invocations (default 4; 8 users each in flight)
 *   --quick              skip the 20k point of the growth run
 *   --only <a,b>         sections: paths, throughput, bundles, latency, growth
 */

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '5000' },
    invocations: { type: 'string', default: '4' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    'latency-seconds': { type: 'string', default: '5' },
    connections: { type: 'string', default: '16' },
  },
});

const n = Number(values.n);
const invocations = Number(values.invocations);
const sections = new Set((values.only ?? 'paths,throughput,bundles,latency,growth').split(','));

function table(title: string, rows: Record<string, unknown>[]): void {
  console.log(`\n${title}`);
  if (rows.length === 0) return;
  const keys = Object.keys(rows[0]!);
  const cells = rows.map((r) => keys.map((k) => (typeof r[k] === 'object' ? JSON.stringify(r[k]) : String(r[k]))));
  const widths = keys.map((k, i) => Math.max(k.length, ...cells.map((c) => c[i]!.length)));
  const line = (parts: string[]) => `| ${parts.map((p, i) => p.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(keys));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells) console.log(line(c));
}

const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

const results: Record<string, unknown> = {
  machine: { nproc: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform },
  startedAt: new Date().toISOString(),
  options: { n, invocations, quick: values.quick },
};

log('starting DynamoDB Local');
const server = await startDynamoLocal();
try {
  if (sections.has('paths')) {
    log('section 1: requests and request units per billed subscription, per path');
    const paths = await measurePathCosts(server.endpoint);
    results.paths = paths;
    table('1. DynamoDB per billed subscription (200 subscriptions per path, all approved)', paths.map((p) => ({
      path: p.path,
      billed: `${p.billed}/${p.subscriptions}`,
      requests: p.requestsPerSub,
      by_command: p.byCommandPerSub,
      RRU: p.rruPerSub,
      WRU: p.wruPerSub,
      GSI_WRU: p.gsiWruPerSub,
    })));
  }

  const runs = new Map<number, CollectionRun>();
  if (sections.has('throughput')) {
    // DynamoDB Local is a JVM: warm it (and our code) on both sequences before timing either.
    log('section 2: warming up');
    await collectionRun(server.endpoint, 500, invocations);
    await rawFloor(server.endpoint, 500, invocations * 8);
    log(`section 2: ${n} subscriptions through collections-job → queue → batch-worker`);
    const run = await collectionRun(server.endpoint, n, invocations);
    runs.set(n, run);
    log('section 2: the raw floor');
    const floor = await rawFloor(server.endpoint, n, invocations * 8);
    const ratio = Math.round((run.subsPerSecond / floor.subsPerSecond) * 100) / 100;
    results.throughput = { run, floor, ratio, queue: 'in-memory (SQS emulator left out as noise)', concurrency: { invocations, usersPerInvocation: 8 } };
    table(`2. Collection throughput (${n} due subscriptions, ${invocations} batch-worker invocations × 8 users in flight; in-memory queue)`, [
      { what: 'collections-job → batch-worker', seconds: run.totalSeconds, 'subs/s': run.subsPerSecond, billed: run.billed, redelivered: run.retried, 'job s': run.jobSeconds, 'client CPU ms/sub': run.clientCpuMsPerSub },
      { what: 'raw floor (Put lock, Get, TransactWrite, Delete)', seconds: floor.seconds, 'subs/s': floor.subsPerSecond, billed: floor.subscriptions, redelivered: 0, 'job s': '-', 'client CPU ms/sub': floor.clientCpuMsPerSub },
      { what: 'ratio (target ≥ 0.7)', seconds: '', 'subs/s': ratio, billed: '', redelivered: '', 'job s': '', 'client CPU ms/sub': '' },
    ]);
  }

  if (sections.has('bundles')) {
    log('section 3: bundles and cold imports');
    const bundles = await measureBundles();
    results.bundles = bundles;
    table(`3. Bundles (esbuild as CDK: ESM, minified, node; median cold import of ${7} fresh processes)`, [
      { bundle: 'bare DynamoDB client', KiB: Math.round(bundles.baseline.bytes / 1024), 'cold import ms': bundles.baseline.coldImportMs, 'size ×': 1, 'import ×': 1 },
      ...bundles.handlers.map((h) => ({ bundle: h.name, KiB: Math.round(h.bytes / 1024), 'cold import ms': h.coldImportMs, 'size ×': h.sizeRatio, 'import ×': h.importRatio })),
    ]);
  }

  if (sections.has('latency')) {
    log('section 4: API latency under load');
    const latency = await measureLatency(server.endpoint, { connections: Number(values.connections), durationS: Number(values['latency-seconds']) });
    results.latency = latency;
    table('4. API latency (autocannon, loopback, node:http adapter → api handler)', latency.map((l) => ({ request: l.name, connections: l.connections, 'req/s': l.rps, 'p50 ms': l.p50, 'p99 ms': l.p99, requests: l.requests, non2xx: l.non2xx })));
  }

  if (sections.has('growth')) {
    const sizes = values.quick ? [1000, 5000] : [1000, 5000, 20000];
    for (const size of sizes) {
      if (runs.has(size)) continue;
      log(`section 5: scheduled run at ${size}`);
      runs.set(size, await collectionRun(server.endpoint, size, invocations));
    }
    const growth = sizes.map((s) => runs.get(s)!);
    results.growth = growth;
    table('5. Cost growth of the scheduled run (collections-job + batch-worker, per subscription)', growth.map((g) => ({
      subscriptions: g.subscriptions,
      requests: g.requestsPerSub,
      by_command: g.byCommandPerSub,
      RRU: g.rruPerSub,
      WRU: g.wruPerSub,
      GSI_WRU: g.gsiWruPerSub,
      'subs/s': g.subsPerSecond,
    })));
  }
} finally {
  await server.stop();
}

results.finishedAt = new Date().toISOString();
const file = join(import.meta.dirname, 'results.json');
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
log(`wrote ${file}`);
