import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { historyRowOf } from '../src/domain/billing-record.js';
import type { BillingRecord } from '../src/domain/records.js';
import { formatInstant } from '../src/domain/time.js';
import { startLocalSystem } from '../src/local/system.js';
import { chargesPerUser, httpCaller, parkFleet, runItems, waitForRun } from '../test/support/retry-run-fleet.js';

/**
 * One measurement, not part of npm test: a bulk retry of N parked subscriptions (default 1,000)
 * through the local runtime (the whole system in this process: DynamoDB Local, the SQS emulator
 * and its poller, the retry-run-worker). Stores N parked periods (as eight counted failures leave
 * them; `--ladder` parks them through the real failure ladder instead, ~30 min for 1,000 on a
 * loaded 2-core machine), then times POST /v1/billing/retry-runs until GET says done, and checks
 * that each was billed exactly once.
 *
 *   npx tsx bench/retry-run.ts [N] [--ladder]
 */

const count = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 1000);
const dataDir = mkdtempSync(join(tmpdir(), 'retry-run-bench-'));
const system = await startLocalSystem({ port: 0, fresh: true, seed: false, dataDir, collectionsIntervalMs: 0, logLevel: 'silent' });

/** N pinless periods due a day ago with a parked failure (count 8, no next attempt), with their audit rows. */
async function storeParked(n: number): Promise<string[]> {
  const now = system.clock.now().getTime();
  const at = (offsetMs: number, nanos = 0) => formatInstant(new Date(now + offsetMs), nanos);
  const records: BillingRecord[] = Array.from({ length: n }, (_, i) => {
    const due = at(-24 * 3_600_000);
    return {
      user_id: `bench-${String(i).padStart(5, '0')}`,
      billing_date: due,
      subscription_id: randomUUID(),
      amount_cents: 1999,
      billing_status: 'PENDING',
      last_run_date: at(-3_600_000, i),
      created_date: at(-40 * 24 * 3_600_000),
      process: 'SCHEDULED',
      term: 'MONTHLY',
      tier: 'plus:v3',
      payment_method: 'pinless',
      account_last_four: '6789',
      payment_attempts: 0,
      version: 8,
      billing_failed_for: `${due}#0`,
      billing_failure_count: 8,
      billing_failed_at: at(-3_600_000),
      billing_last_error: 'The payment processor is unavailable.',
    };
  });
  for (let i = 0; i < records.length; i += 50) {
    const chunk = records.slice(i, i + 50);
    await system.deps.billing.addAll(chunk, chunk.map((r) => historyRowOf(r)));
  }
  return records.map((r) => r.user_id);
}
try {
  const { call, api } = httpCaller(system.url, system.options.secrets.apiToken);
  const parkStarted = Date.now();
  const users = process.argv.includes('--ladder') ? await parkFleet(call, api, count, 'bench') : await storeParked(count);
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
