import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/adapters/dynamodb/local-server.js';
import { BILLING_RETRY_WAITS_MS } from '../../src/domain/ladder.js';
import { parseDurationMs } from '../../src/domain/time.js';
import { LOCAL_SECRET_DEFAULTS } from '../../src/local/options.js';

/**
 * The README tour, black-box: `npm start` as a child process (fresh data dir, no seed, no
 * schedule) driven only through HTTP — the control surface, the API and a signed ACH webhook.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const TOKEN = LOCAL_SECRET_DEFAULTS.LOCAL_API_TOKEN;
const ACH_SECRET = LOCAL_SECRET_DEFAULTS.ACH_WEBHOOK_SECRET;

let child: ChildProcess;
let base: string;
let dataDir: string;
let output = '';
let exit: Promise<number | null>;

interface Answer<T = any> {
  status: number;
  body: T;
}

async function call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: keep the text for the assertion message.
  }
  return { status: res.status, body: parsed as T };
}

const api = <T = any>(method: string, path: string, body?: unknown) => call<T>(method, path, body, { authorization: `Bearer ${TOKEN}` });

async function simulatedNow(): Promise<string> {
  const { body } = await call<{ now: string }>('GET', '/local/clock');
  return body.now;
}

async function newMember(userId: string, paymentMethod: 'ach' | 'pinless'): Promise<string> {
  const now = await simulatedNow();
  const answer = await call('POST', '/local/memberships', {
    event_id: `evt-new-${userId}`,
    type: 'NEW',
    user_id: userId,
    occurred_at: now,
    plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: paymentMethod, account_last_four: '6789', first_billing_date: now },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.status).toBe('applied');
  return now;
}

async function periodOf(userId: string, billingDate: string): Promise<any> {
  const { status, body } = await api('GET', `/v1/users/${userId}/subscriptions`);
  expect(status, JSON.stringify(body)).toBe(200);
  const record = body.items.find((r: any) => r.billing_date === billingDate);
  expect(record, JSON.stringify(body.items)).toBeDefined();
  return record;
}

async function chargesFor(userId: string): Promise<any[]> {
  const { body } = await call<{ items: any[] }>('GET', '/local/processor/charges');
  return body.items.filter((c) => c.user_id === userId);
}

beforeAll(async () => {
  const port = await freePort();
  dataDir = mkdtempSync(join(tmpdir(), 'billing-local-'));
  base = `http://127.0.0.1:${port}`;
  child = spawn(join(ROOT, 'node_modules/.bin/tsx'), ['scripts/local/start.ts', '--port', String(port), '--fresh', '--no-seed', '--no-schedule', '--data-dir', dataDir], {
    cwd: ROOT,
    // As the README tour: --no-schedule, so no scheduled run takes an attempt between two steps.
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  exit = new Promise((done) => child.once('exit', (code) => done(code)));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited early (${child.exitCode}):\n${output}`);
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`not healthy within 90 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}, 100_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    const code = await exit;
    expect(code, output).toBe(0);
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

describe('local runtime (npm start)', () => {
  it('answers health, refuses a missing or wrong token like API Gateway, and validates control bodies', async () => {
    expect((await call('GET', '/health')).body).toMatchObject({ status: 'ok' });
    expect(await call('GET', '/v1/users/nobody/subscriptions')).toMatchObject({ status: 401, body: { message: 'Unauthorized' } });
    expect((await call('GET', '/v1/users/nobody/subscriptions', undefined, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect(await api('GET', '/v1/users/nobody/subscriptions')).toMatchObject({ status: 200, body: { items: [], next: null } });

    const badClock = await call('POST', '/local/clock', { advance: 'fifteen minutes' });
    expect(badClock.status).toBe(400);
    expect(badClock.body.error.code).toBe('invalid_body');
    expect(badClock.body.error.details.length).toBeGreaterThan(0);
    expect((await call('POST', '/local/clock', { now: '2026-02-30T00:00:00Z' })).status).toBe(400);
    expect((await call('POST', '/local/clock', '{not json')).status).toBe(400);
    expect((await call('PUT', '/local/processor', { default: 'maybe' })).status).toBe(400);
    expect((await call('POST', '/local/memberships', { type: 'NEW', user_id: 'u' })).status).toBe(400);
  });

  it('bills a new ACH member and completes it when the bank settles by signed webhook', async () => {
    // Settlement three simulated days after submission, so the record is seen in ACHSENT first.
    expect((await call('PUT', '/local/processor', { default: 'approve', ach_settle_delay_ms: 3 * 86_400_000 })).status).toBe(200);
    const billingDate = await newMember('tour-ach', 'ach');
    expect((await periodOf('tour-ach', billingDate)).billing_status).toBe('PENDING');

    const run = await call('POST', '/local/collections/run');
    expect(run.status).toBe(200);
    expect(run.body.enqueued).toBeGreaterThanOrEqual(1);
    expect(run.body.outcomes.submitted).toBeGreaterThanOrEqual(1);
    const sent = await periodOf('tour-ach', billingDate);
    expect(sent.billing_status).toBe('ACHSENT');
    const [charge] = await chargesFor('tour-ach');
    expect(charge).toMatchObject({ rail: 'ach', amount_cents: 1999, outcome: 'submitted', confirmation_id: sent.transaction_id });

    const now = await simulatedNow();
    const body = JSON.stringify({
      event_id: 'ach-evt-tour-1',
      type: 'settled',
      confirmation_id: sent.transaction_id,
      amount_cents: 1999,
      occurred_at: now,
      reference: { kind: 'subscription', user_id: 'tour-ach', billing_date: billingDate },
    });
    // Signed at wall time, as the bank's sender would (`date +%s`), whatever the simulated now is.
    const t = Math.floor(Date.now() / 1000);
    const signature = `t=${t},v1=${createHmac('sha256', ACH_SECRET).update(`${t}.${body}`).digest('hex')}`;
    expect((await call('POST', '/webhooks/ach', body, { 'x-ach-signature': 't=1,v1=00' })).status).toBe(400);
    const settled = await call('POST', '/webhooks/ach', body, { 'x-ach-signature': signature });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    expect((await periodOf('tour-ach', billingDate)).billing_status).toBe('COMPLETED');

    // Three days on, the simulator's own settlement arrives through the pump: a replay, no change.
    expect((await call('POST', '/local/clock', { advance: 'P3DT1M' })).status).toBe(200);
    expect((await periodOf('tour-ach', billingDate)).billing_status).toBe('COMPLETED');
    expect(await chargesFor('tour-ach')).toHaveLength(1);
  });

  it('parks a subscription whose processor keeps erroring on the eighth counted failure, then bills it on operator retry', async () => {
    expect((await call('PUT', '/local/processor', { default: 'approve', users: { 'tour-pinless': 'error' } })).status).toBe(200);
    const billingDate = await newMember('tour-pinless', 'pinless');

    // The README's waits: each ladder wait plus a second.
    const waits = ['PT15M1S', 'PT1H1S', 'PT4H1S', 'PT12H1S', 'PT24H1S', 'PT24H1S', 'PT24H1S'];
    expect(waits.map((w) => parseDurationMs(w) - 1000)).toEqual(BILLING_RETRY_WAITS_MS);
    for (let failure = 1; failure <= 8; failure++) {
      const run = await call('POST', '/local/collections/run');
      expect(run.status).toBe(200);
      expect(run.body.outcomes.failed_counted, `run ${failure}: ${JSON.stringify(run.body)}`).toBe(1);
      expect(run.body.outcomes.parked).toBe(failure === 8 ? 1 : 0);
      const record = await periodOf('tour-pinless', billingDate);
      expect(record.billing_status).toBe('PENDING');
      expect(record.billing_failure).toMatchObject({ count: failure, state: failure < 8 ? 'retrying' : 'parked' });
      if (failure < 8) {
        // Not yet: the ladder holds it until its wait is over.
        expect((await call('POST', '/local/collections/run')).body).toMatchObject({ enqueued: 0, skipped_waiting: 1 });
        expect((await call('POST', '/local/clock', { advance: waits[failure - 1] })).status).toBe(200);
      }
    }
    const parked = await call('POST', '/local/collections/run');
    expect(parked.body).toMatchObject({ enqueued: 0, skipped_parked: 1 });
    const failing = await api('GET', '/v1/subscriptions?billing=failing&state=parked');
    expect(failing.body.items.map((r: any) => r.user_id)).toContain('tour-pinless');
    expect(await chargesFor('tour-pinless')).toHaveLength(0);

    expect((await call('PUT', '/local/processor', { default: 'approve' })).status).toBe(200);
    const subscriptionId = (await periodOf('tour-pinless', billingDate)).subscription_id;
    const retried = await api('POST', `/v1/subscriptions/${subscriptionId}/retry-billing`, { reason: 'processor outage over' });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body).toMatchObject({ outcome: 'billed', still_due: false });
    expect(retried.body.billing_failure).toBeUndefined();
    expect((await periodOf('tour-pinless', billingDate)).billing_status).toBe('COMPLETED');
    expect(await chargesFor('tour-pinless')).toHaveLength(1);
  }, 120_000); // 23 collections runs through the real process tree: slow on a loaded machine
});
