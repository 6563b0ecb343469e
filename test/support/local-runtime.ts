import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { freePort } from '../../src/adapters/dynamodb/local-server.js';
import { LOCAL_SECRET_DEFAULTS } from '../../src/local/options.js';

/**
 * `npm start` as a child process (fresh data dir, no seed, no schedule), driven only through
 * HTTP: the black-box tests of the local runtime (test/e2e) share these.
 */

export const ROOT = resolve(import.meta.dirname, '../..');
export const LOCAL_TOKEN = LOCAL_SECRET_DEFAULTS.LOCAL_API_TOKEN;

export interface Answer<T = any> {
  status: number;
  body: T;
}

export interface LocalRuntime {
  readonly base: string;
  /** Everything the child printed so far (for assertion messages). */
  output(): string;
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer<T>>;
  /** A /v1 call with the local token. */
  api<T = any>(method: string, path: string, body?: unknown): Promise<Answer<T>>;
  /** SIGTERM, then the exit code; removes the data dir. */
  stop(): Promise<number | null>;
}

export async function startLocalRuntime(options: { readonly env?: Record<string, string>; readonly args?: readonly string[] } = {}): Promise<LocalRuntime> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'billing-local-'));
  const base = `http://127.0.0.1:${port}`;
  let output = '';
  // `npm start` runs scripts/local/start.ts under tsx; here node loads tsx itself, so SIGTERM reaches
  // the runtime directly. The tsx CLI relays signals and SIGKILLs a child that has not
  // acknowledged one within ~60 ms, which a loaded machine misses (exit 143, Java left behind).
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'scripts/local/start.ts', '--port', String(port), '--fresh', '--no-seed', '--data-dir', dataDir, ...(options.args ?? [])], {
    cwd: ROOT,
    env: { ...process.env, COLLECTIONS_INTERVAL_MS: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exit = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));

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

  const runtime: LocalRuntime = {
    base,
    output: () => output,
    call,
    api: (method, path, body) => call(method, path, body, { authorization: `Bearer ${LOCAL_TOKEN}` }),
    async stop() {
      let code: number | null = child.exitCode;
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        code = await exit;
      }
      rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };

  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited early (${child.exitCode}):\n${output}`);
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await runtime.stop();
      throw new Error(`not healthy within 90 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return runtime;
}

export async function simulatedNow(runtime: LocalRuntime): Promise<string> {
  const { body } = await runtime.call<{ now: string }>('GET', '/local/clock');
  return body.now;
}

/** A NEW membership event, due now; answers its billing date. */
export async function newMember(runtime: LocalRuntime, userId: string, paymentMethod: 'ach' | 'pinless' | 'card'): Promise<string> {
  const now = await simulatedNow(runtime);
  const answer = await runtime.call('POST', '/local/memberships', {
    event_id: `evt-new-${userId}`,
    type: 'NEW',
    user_id: userId,
    occurred_at: now,
    plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: paymentMethod, ...(paymentMethod === 'card' ? {} : { account_last_four: '6789' }), first_billing_date: now },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.status).toBe('applied');
  return now;
}

export async function periodOf(runtime: LocalRuntime, userId: string, billingDate: string): Promise<any> {
  const { status, body } = await runtime.api('GET', `/v1/users/${userId}/subscriptions`);
  expect(status, JSON.stringify(body)).toBe(200);
  const record = body.items.find((r: any) => r.billing_date === billingDate);
  expect(record, JSON.stringify(body.items)).toBeDefined();
  return record;
}

export async function chargesFor(runtime: LocalRuntime, userId: string): Promise<any[]> {
  const { body } = await runtime.call<{ items: any[] }>('GET', '/local/processor/charges');
  return body.items.filter((c) => c.user_id === userId);
}

/** The README's waits between failures: each ladder wait plus a second. */
export const LADDER_WAITS = ['PT15M1S', 'PT1H1S', 'PT4H1S', 'PT12H1S', 'PT24H1S', 'PT24H1S', 'PT24H1S'] as const;
