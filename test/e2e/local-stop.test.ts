import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/adapters/dynamodb/local-server.js';
import { LOCAL_SECRET_DEFAULTS } from '../../src/local/options.js';
import { groupGone, healthy, killRunningTrees, npmStart, until, type NpmStartTree } from '../support/npm-start.js';

/**
 * `npm start` killed in the middle of a collections run (SIGKILL of the whole tree, and SIGTERM),
 * then started again on the same data: every ACH debit the simulator accepted still settles, no
 * member is charged twice, and a SIGTERM stops cleanly (handlers drained, no error stacks).
 * Waits are on events (an answer, an exit, a condition polled), never fixed sleeps.
 */

const TOKEN = LOCAL_SECRET_DEFAULTS.LOCAL_API_TOKEN;
const MEMBERS = 24;
const dirs: string[] = [];

async function call(base: string, method: string, path: string, body?: unknown, token = false): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${TOKEN}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const achCharges = async (base: string): Promise<{ user_id: string; confirmation_id: string }[]> =>
  ((await call(base, 'GET', '/local/processor/charges')).body.items as { user_id: string; rail: string; confirmation_id: string }[]).filter((c) => c.rail === 'ach');

afterAll(() => {
  killRunningTrees();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Fresh data, ACH members due now, settlement an hour after submission: a run whose debits are all pending. */
async function startWithDueAchMembers(port: number, dataDir: string): Promise<NpmStartTree> {
  const runtime = npmStart(['--port', String(port), '--fresh', '--no-seed', '--data-dir', dataDir, '--now', '2027-03-01T09:00:00Z']);
  await healthy(runtime);
  expect((await call(runtime.base, 'PUT', '/local/processor', { default: 'approve', ach_settle_delay_ms: 3_600_000 })).status).toBe(200);
  const { body: clock } = await call(runtime.base, 'GET', '/local/clock');
  for (let i = 0; i < MEMBERS; i++) {
    const userId = `stop-member-${i}`;
    const answer = await call(runtime.base, 'POST', '/local/memberships', {
      event_id: `evt-new-${userId}`,
      type: 'NEW',
      user_id: userId,
      occurred_at: clock.now,
      plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: clock.now },
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  }
  return runtime;
}

/** After a restart: outcomes come due, interrupted attempts are taken again, and their outcomes come due too. */
async function settleEverything(runtime: NpmStartTree): Promise<void> {
  expect((await call(runtime.base, 'POST', '/local/clock', { advance: 'PT2H' })).status).toBe(200);
  expect((await call(runtime.base, 'POST', '/local/collections/run')).status).toBe(200);
  expect((await call(runtime.base, 'POST', '/local/clock', { advance: 'PT2H' })).status).toBe(200);
}

async function periodsByStatus(base: string): Promise<Record<string, string[]>> {
  const byStatus: Record<string, string[]> = {};
  for (let i = 0; i < MEMBERS; i++) {
    const userId = `stop-member-${i}`;
    const { status, body } = await call(base, 'GET', `/v1/users/${userId}/subscriptions`, undefined, true);
    expect(status).toBe(200);
    for (const record of body.items as { billing_status: string }[]) (byStatus[record.billing_status] ??= []).push(userId);
  }
  return byStatus;
}

describe('npm start stopped in the middle of a collections run', () => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${signal}: after a restart every ACH debit the simulator accepted settles, and no member is charged twice`, async () => {
      const port = await freePort();
      const dataDir = mkdtempSync(join(tmpdir(), `billing-stop-${signal}-`));
      dirs.push(dataDir);
      const first = await startWithDueAchMembers(port, dataDir);

      const run = call(first.base, 'POST', '/local/collections/run').catch(() => undefined);
      // Mid-run: some debits accepted by the simulator, so some periods are ACHSENT and others not yet attempted.
      const accepted = await until('the first accepted debits', async () => {
        const charges = await achCharges(first.base);
        return charges.length >= 2 ? charges : undefined;
      }, first);
      process.kill(-first.child.pid!, signal);
      await first.exited;
      await groupGone(first.child.pid!);
      await run;
      if (signal === 'SIGTERM') {
        expect(first.output()).toContain('stopped.');
        // A clean stop: nothing logged at error level, no stack printed.
        expect(first.output()).not.toMatch(/"level":(50|60)/);
        expect(first.output()).not.toMatch(/\n\s+at \S+ \(/);
      }

      const second = npmStart(['--port', String(port), '--no-seed', '--data-dir', dataDir]);
      await healthy(second);
      // What the simulator promised before the stop is still known to it.
      const remembered = new Set((await achCharges(second.base)).map((c) => c.confirmation_id));
      for (const charge of accepted) expect(remembered.has(charge.confirmation_id), charge.confirmation_id).toBe(true);

      await settleEverything(second);
      const byStatus = await periodsByStatus(second.base);
      // Each member's period completed (and its next one is PENDING, not yet due); none left waiting on the bank.
      expect(byStatus.COMPLETED, JSON.stringify(byStatus)).toEqual(Array.from({ length: MEMBERS }, (_, i) => `stop-member-${i}`));
      expect(Object.keys(byStatus).sort(), JSON.stringify(byStatus)).toEqual(['COMPLETED', 'PENDING']);
      const charges = await achCharges(second.base);
      const perMember = new Map<string, number>();
      for (const c of charges) perMember.set(c.user_id, (perMember.get(c.user_id) ?? 0) + 1);
      expect([...perMember.values()].every((n) => n === 1), JSON.stringify([...perMember])).toBe(true);
      expect(perMember.size).toBe(MEMBERS);

      process.kill(-second.child.pid!, 'SIGINT');
      await second.exited;
      await groupGone(second.child.pid!);
      expect(second.output()).toContain('stopped.');
      expect(second.output()).not.toMatch(/"level":(50|60)/);
    }, 400_000);
  }
});
