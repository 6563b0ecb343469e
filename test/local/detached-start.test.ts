import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Process-level proof of how the local runtime's watch (src/local/terminal.ts) behaves when the
 * shell that started it exits: started in a job of its own (setsid here; nohup from an interactive
 * shell puts it in its own job too) it keeps running; started in the shell's job it stops with it.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const PROBE = `import('${resolve(ROOT, 'src/local/terminal.ts')}').then((m) => { m.watchAncestors(() => process.exit(3), 100); setTimeout(() => process.exit(0), 20000); })`;
const NODE = `"${process.execPath}" --import tsx -e "${PROBE}"`;

/** Runs `sh -c '<prefix> node probe & echo $!; sleep 1'` and answers the probe's pid once the shell has exited. */
function startUnderShell(prefix: string): Promise<number> {
  const args = ['-c', `${prefix} ${NODE} >/dev/null 2>&1 & echo $!; sleep 1`];
  const shell = spawn('sh', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  shell.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((done, fail) => {
    shell.once('error', fail);
    shell.once('exit', () => done(Number(out.trim())));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function aliveAfter(pid: number, ms: number): Promise<boolean> {
  await new Promise((r) => setTimeout(r, ms));
  const result = alive(pid);
  if (result) process.kill(pid, 'SIGKILL');
  return result;
}

describe.skipIf(!existsSync('/proc/self/stat'))('a local runtime whose starting shell exits', () => {
  it('keeps running when started with setsid', async () => {
    const pid = await startUnderShell('setsid');
    expect(await aliveAfter(pid, 3_000)).toBe(true);
  }, 20_000);

  it('stops when started in the shell’s own job, as from a terminal', async () => {
    const pid = await startUnderShell('');
    expect(await aliveAfter(pid, 3_000)).toBe(false);
  }, 20_000);
});
