import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * The real `npm start` process tree (npm → sh → node → java) in a process group of its own, as a
 * terminal's job, so a test can signal the whole tree at once: the crash and stop tests share it.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const running = new Set<ChildProcess>();

export interface NpmStartTree {
  readonly child: ChildProcess;
  readonly base: string;
  output(): string;
  readonly exited: Promise<number | null>;
}

export function npmStart(args: readonly string[], env: Record<string, string> = {}): NpmStartTree {
  const child = spawn('npm', ['start', '--', ...args], {
    cwd: ROOT,
    detached: true,
    env: { ...process.env, COLLECTIONS_INTERVAL_MS: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      running.delete(child);
      done(code);
    }),
  );
  return { child, base: `http://127.0.0.1:${args[args.indexOf('--port') + 1]}`, output: () => output, exited };
}

/** SIGKILLs every tree still running (for afterAll). */
export function killRunningTrees(): void {
  for (const child of running) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** Polls `probe` until it answers a value; fails with the tree's output if the tree exits or time runs out. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, tree: NpmStartTree, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (tree.child.exitCode !== null) throw new Error(`npm start exited (${tree.child.exitCode}) while waiting for ${what}:\n${tree.output()}`);
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s:\n${tree.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const healthy = (tree: NpmStartTree) => until('healthy', async () => ((await fetch(`${tree.base}/health`)).status === 200 ? true : undefined), tree);

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function groupGone(pgid: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still alive`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
