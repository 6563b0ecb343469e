import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Which of its ancestors `npm start` watches (src/local/terminal.ts): those of its own job
 * (process group) only, so a runtime started detached outlives the shell that started it, and one
 * in a terminal's job still stops with its npm.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const PROBE = `import('${resolve(ROOT, 'src/local/terminal.ts')}').then((m) => console.log(JSON.stringify(m.jobAncestors())))`;

/** `sh -c 'node …; true'` (sh stays the node's parent), in a new process group or in this one. */
function ancestorsUnder(detached: boolean): Promise<{ sh: number; ancestors: number[] }> {
  const child = spawn('sh', ['-c', `"${process.execPath}" --import tsx -e "${PROBE}"; true`], { cwd: ROOT, detached, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((done, fail) => {
    child.once('error', fail);
    child.once('exit', () => done({ sh: child.pid!, ancestors: JSON.parse(out.trim()) as number[] }));
  });
}

describe.skipIf(!existsSync('/proc/self/stat'))('the ancestors the local runtime watches', () => {
  it('in a job of its own (setsid, a service manager, a detached start): only that job, not the shell or process that started it', async () => {
    const { sh, ancestors } = await ancestorsUnder(true);
    expect(ancestors).toEqual([sh]);
  });

  it('in the job it was started in (a terminal): every ancestor of that job, up to the one that started it', async () => {
    const { sh, ancestors } = await ancestorsUnder(false);
    expect(ancestors[0]).toBe(sh);
    expect(ancestors).toContain(process.pid);
  });
});
