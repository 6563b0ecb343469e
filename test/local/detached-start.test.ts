import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Process-level proof of how the local runtime's watch (src/local/terminal.ts) behaves when the
 * shell that started it exits: started in a job of its own (setsid here; nohup from an interactive
 * shell puts it in its own job too) it keeps running; started in the shell's job it stops with it.
 */

const ROOT = resolve(import.meta.dirname, '../..');
/** The probe says it is watching by creating `ready`: a loaded machine may take seconds to load tsx. */
function probe(ready: string): string {
  const code = `import('${resolve(ROOT, 'src/local/terminal.ts')}').then((m) => { m.watchAncestors(() => process.exit(3), 100); require('node:fs').writeFileSync('${ready}', ''); setTimeout(() => process.exit(0), 20000); })`;
  return `"${process.execPath}" --import tsx -e "${code}"`;
}

/** Runs `sh -c '<prefix> node probe &; echo $!'`, exits the shell once the probe watches, and answers the probe's pid. */
function startUnderShell(prefix: string): Promise<number> {
  const ready = join(mkdtempSync(join(tmpdir(), 'detached-start-')), 'ready');
  const args = ['-c', `${prefix} ${probe(ready)} >/dev/null 2>&1 & echo $!; i=0; while [ ! -e '${ready}' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`];
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
