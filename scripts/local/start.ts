/**
 * `npm start`: the whole billing system on this machine (docs/design.md, local runtime). Stops cleanly on Ctrl-C/SIGTERM.
 * Flags: --port N, --fresh (wipe .local/, after the port and Java checks), --no-seed, --no-schedule, --now <RFC3339>, --data-dir DIR.
 */
import { LocalUsageError, parseCliFlags, resolveOptions } from '../../src/local/options.js';
import { LocalStartupError } from '../../src/local/runtime-errors.js';
import { quietAwsSdkNodeWarning, startupBanner, watchAncestors } from '../../src/local/terminal.js';

quietAwsSdkNodeWarning();

async function main(): Promise<void> {
  const flags = parseCliFlags(process.argv.slice(2));
  const options = resolveOptions(process.env, flags);
  // Imported after the flags are checked, so `--help` answers at once.
  const { startLocalSystem } = await import('../../src/local/system.js');
  const system = await startLocalSystem(options);
  process.stdout.write(startupBanner(system));

  let stoppingSince: number | undefined;
  const shutdown = (signal: NodeJS.Signals | 'parent exited') => {
    if (stoppingSince !== undefined) {
      // npm and tsx relay one Ctrl-C/SIGTERM more than once; only a later, deliberate second one forces the exit.
      if (Date.now() - stoppingSince < 1_000) return;
      process.stderr.write(`\n${signal} again: exiting now\n`);
      process.exit(130);
    }
    stoppingSince = Date.now();
    system.logger.info({ signal }, 'stopping the local runtime');
    const force = setTimeout(() => {
      process.stderr.write('the local runtime did not stop within 10 s; exiting\n');
      process.exit(1);
    }, 10_000);
    force.unref();
    system.stop().then(
      () => {
        process.stdout.write('stopped.\n');
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`stop failed: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  process.on('SIGHUP', shutdown);
  watchAncestors(() => shutdown('parent exited'));
}

main().catch((error: unknown) => {
  if (error instanceof LocalStartupError || error instanceof LocalUsageError) {
    process.stderr.write(`npm start: ${error.message}\n`);
    process.exit(error instanceof LocalUsageError && /^usage:/.test(error.message) ? 0 : 1);
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`npm start failed: ${message}\n(set LOG_LEVEL=debug for details)\n`);
  if (process.env.LOG_LEVEL === 'debug' && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
