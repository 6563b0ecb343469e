import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalSystem } from '../src/local/system.js';
import { chargesPerUser, httpCaller, parkFleet, runItems, waitForRun } from '../test/support/retry-run-fleet.js';

/**
 * One measurement, not part of npm test: a bulk retry of N parked subscriptions (default 1,000)
 * through the local runtime (the whole system in this process: DynamoDB Local, the SQS emulator
 * and its poller, the retry-run-worker). Parks N members through the real failure ladder, then
 * times POST /v1/billing/retry-runs until GET says done, and checks that each was billed exactly once.
 *
 *   npx tsx bench/retry-run.ts [N]
 */

const count = Number(process.argv[2] ?? 1000);
const dataDir = mkdtempSync(join(tmpdir(), 'retry-run-bench-'));
const system = await startLocalSystem({ port: 0, fresh: true, seed: false, dataDir, collectionsIntervalMs: 0, logLevel: 'warn' });
try {
  const { call, api } = httpCaller(system.url, system.options.secrets.apiToken);
  const parkStarted = Date.now();
  const users = await parkFleet(call, count, 'bench');
  const parkMs = Date.now() - parkStarted;

  const started = Date.now();
  const created = await api('POST', '/v1/billing/retry-runs', { state: 'parked', reason: 'bench: processor outage over' }, { 'idempotency-key': 'bench-run' });
  if (created.status !== 202) throw new Error(`POST: ${created.status} ${JSON.stringify(created.body)}`);
  const acceptedMs = Date.now() - started;
  const done = await waitForRun(api, created.body.run_id, 30 * 60_000);
  const wallMs = Date.now() - started;

  const replay = await api('POST', '/v1/billing/retry-runs', { state: 'parked', reason: 'bench: processor outage over' }, { 'idempotency-key': 'bench-run' });
  const charges = await chargesPerUser(call, users);
  const items = await runItems(api, created.body.run_id);
  const result = {
    subscriptions: count,
    selected: created.body.selected,
    counts: done.counts,
    charged_users: charges.size,
    charges: [...charges.values()].reduce((a, b) => a + b, 0),
    max_charges_per_user: Math.max(0, ...charges.values()),
    items_billed: items.filter((i) => i.outcome === 'billed').length,
    replay_same_run: replay.body.run_id === created.body.run_id,
    post_answered_ms: acceptedMs,
    run_wall_ms: wallMs,
    park_ms: parkMs,
  };
  console.log(JSON.stringify(result, null, 2));
  if (result.charges !== count || result.max_charges_per_user !== 1 || result.items_billed !== count) process.exitCode = 1;
} finally {
  await system.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
