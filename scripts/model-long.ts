/**
 * The billing reference model's long run (test/model/billing-model.test.ts) on every core: one
 * DynamoDB Local, MODEL_WORKERS vitest processes (default 2) each on its own tables, sharing the
 * seeds and the step budget, appending to one report, whose total this script writes at the end.
 *
 *   MODEL_TOTAL_STEPS=100000 [MODEL_DEADLINE=2026-12-08T18:00:00Z] [MODEL_WORKERS=2] [MODEL_REPORT=/tmp/x.md] npm run model:long
 *
 * The other MODEL_* knobs (MODEL_RUNS, MODEL_STEPS, MODEL_USERS, MODEL_SEED as the base seed) pass through.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoLocal } from '../src/adapters/dynamodb/local-server.js';

const total = Number(process.env.MODEL_TOTAL_STEPS ?? 0);
if (!Number.isInteger(total) || total <= 0) {
  console.error('model:long needs MODEL_TOTAL_STEPS (a positive number of steps); MODEL_DEADLINE (an ISO instant) and MODEL_WORKERS are optional');
  process.exit(2);
}
if (process.env.MODEL_DEADLINE && Number.isNaN(Date.parse(process.env.MODEL_DEADLINE))) {
  console.error(`MODEL_DEADLINE is not an ISO instant: ${process.env.MODEL_DEADLINE}`);
  process.exit(2);
}
const workers = Number(process.env.MODEL_WORKERS ?? 2);
const report = process.env.MODEL_REPORT ?? '/tmp/model-long-run.md';
const base = process.env.MODEL_SEED !== undefined ? Number(process.env.MODEL_SEED) : Math.floor(Math.random() * 2 ** 30);
const started = Date.now();

const server = await startDynamoLocal();
const progress = mkdtempSync(join(tmpdir(), 'model-long-'));
appendFileSync(
  report,
  `\n# long run started ${new Date(started).toISOString()} (base seed ${base}, ${workers} workers, ${process.env.MODEL_RUNS ?? 20} sequences per batch, up to ${process.env.MODEL_STEPS ?? 40} steps, ${process.env.MODEL_USERS ?? 3} members; target ${total} steps${process.env.MODEL_DEADLINE ? `, deadline ${process.env.MODEL_DEADLINE}` : ''})\n`,
);

const children = Array.from({ length: workers }, (_, index) =>
  spawn(join('node_modules', '.bin', 'vitest'), ['run', 'test/model/billing-model.test.ts'], {
    stdio: 'inherit',
    // Each worker leads its own process group, so a stop reaches vitest's test processes too.
    detached: true,
    env: { ...process.env, TEST_DYNAMO_ENDPOINT: server.endpoint, MODEL_WORKER: `${index}/${workers}`, MODEL_PROGRESS: progress, MODEL_SEED: String(base), MODEL_TOTAL_STEPS: String(total), MODEL_REPORT: report },
  }),
);
// The whole group: a test process left running after its vitest exits would meet a stopped
// DynamoDB Local and report connection errors as counterexamples.
const stop = () => {
  for (const child of children) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const codes = await Promise.all(children.map((child) => new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)))));

const sums = { steps: 0, sequences: 0, failures: 0 };
for (const file of readdirSync(progress).filter((f) => f.endsWith('.json'))) {
  const counts = JSON.parse(readFileSync(join(progress, file), 'utf8')) as typeof sums;
  sums.steps += counts.steps;
  sums.sequences += counts.sequences;
  sums.failures += counts.failures;
}
appendFileSync(report, `\n**total: ${sums.steps} steps in ${sums.sequences} sequences (${workers} workers), ${sums.failures} failing batches, ${((Date.now() - started) / 60000).toFixed(1)} min**\n`);
console.log(`model:long: ${sums.steps} steps, ${sums.failures} failing batches; report ${report}`);
rmSync(progress, { recursive: true, force: true });
await server.stop();
process.exit(codes.every((c) => c === 0) ? 0 : 1);
