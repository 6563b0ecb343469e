/**
 * `npm run collect -- [--now <RFC3339> | --advance <ISO-8601 duration>] [--url http://127.0.0.1:3000]`
 * One collections run against a running `npm start`: sets the simulated clock, runs the
 * collections-job, drains its queue through the batch-worker, and prints what happened.
 */

interface Args {
  url: string;
  now?: string;
  advance?: string;
  json: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { url: process.env.LOCAL_URL ?? `http://127.0.0.1:${process.env.PORT ?? '3000'}`, json: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) fail(`${arg} needs a value`);
      return v;
    };
    if (arg === '--now') args.now = value();
    else if (arg === '--advance') args.advance = value();
    else if (arg === '--url') args.url = value().replace(/\/$/, '');
    else if (arg === '--json') args.json = true;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: npm run collect -- [--now <RFC3339> | --advance PT1H] [--url http://127.0.0.1:3000] [--json]\n');
      process.exit(0);
    } else fail(`unknown option ${arg} (try --help)`);
  }
  if (args.now && args.advance) fail('give --now or --advance, not both');
  return args;
}

function fail(message: string): never {
  process.stderr.write(`npm run collect: ${message}\n`);
  process.exit(1);
}

async function request(url: string, method: string, body?: unknown): Promise<{ status: number; body: any }> {
  let res: Response;
  try {
    res = await fetch(url, { method, headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  } catch {
    fail(`no local runtime answers at ${new URL(url).origin}. Start one with "npm start" (or pass --url).`);
  }
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** A spinner with the elapsed time on stderr while the run drains (TTY only). */
function progress(label: string): () => void {
  if (!process.stderr.isTTY) return () => undefined;
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  const started = Date.now();
  let i = 0;
  const timer = setInterval(() => {
    process.stderr.write(`\r${frames[i++ % frames.length]} ${label} ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 80);
  return () => {
    clearInterval(timer);
    process.stderr.write('\r\u001b[2K');
  };
}

const ROWS: readonly [string, (r: any) => number][] = [
  ['enqueued', (r) => r.enqueued],
  ['skipped: waiting on the ladder', (r) => r.skipped_waiting],
  ['skipped: parked', (r) => r.skipped_parked],
  ['delivered to the batch-worker', (r) => r.delivered],
  ['collected (pinless/card)', (r) => r.outcomes.collected],
  ['submitted (ACH)', (r) => r.outcomes.submitted],
  ['declined', (r) => r.outcomes.declined],
  ['failed (counted on the ladder)', (r) => r.outcomes.failed_counted],
  ['  of which parked now', (r) => r.outcomes.parked],
  ['cancelled (pending cancel)', (r) => r.outcomes.cancelled],
  ['inactive account', (r) => r.outcomes.inactive],
  ['pause window advanced', (r) => r.outcomes.pause_advanced],
  ['no change', (r) => r.outcomes.no_change],
  ['left for redelivery', (r) => r.outcomes.retry_later],
  ['ACH settled', (r) => r.ach.settled],
  ['ACH returned', (r) => r.ach.returned],
  ['ACH deliveries to retry', (r) => r.ach.failed],
];

function table(run: any): string {
  const tty = process.stdout.isTTY;
  const dim = (t: string) => (tty ? `\u001b[2m${t}\u001b[0m` : t);
  const bold = (t: string) => (tty ? `\u001b[1m${t}\u001b[0m` : t);
  const width = Math.max(...ROWS.map(([label]) => label.length));
  const lines = [bold(`Collections run at ${run.now} (${(run.duration_ms / 1000).toFixed(1)} s)${run.truncated ? ' — truncated, the next run continues' : ''}`)];
  for (const [label, pick] of ROWS) {
    const value = pick(run) ?? 0;
    const line = `  ${label.padEnd(width)}  ${String(value).padStart(6)}`;
    lines.push(value === 0 ? dim(line) : line);
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const health = await request(`${args.url}/health`, 'GET');
  if (health.status !== 200) fail(`the local runtime at ${args.url} is not ready yet (${health.status}); try again in a moment`);
  if (args.now || args.advance) {
    const clock = await request(`${args.url}/local/clock`, 'POST', args.now ? { now: args.now } : { advance: args.advance });
    if (clock.status !== 200) fail(`the clock refused ${args.now ?? args.advance}: ${JSON.stringify(clock.body.error ?? clock.body)}`);
  }
  const done = progress('collecting');
  const run = await request(`${args.url}/local/collections/run`, 'POST').finally(done);
  if (run.status !== 200) fail(`the run failed (${run.status}): ${JSON.stringify(run.body)}`);
  process.stdout.write(args.json ? `${JSON.stringify(run.body, null, 2)}\n` : table(run.body));
}

void main();
