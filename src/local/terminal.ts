import { readFileSync } from 'node:fs';
import { LOCAL_SECRET_DEFAULTS } from './options.js';
import type { LocalSystem } from './system.js';

/** The AWS SDK warns once per process on Node 20 about 2027 releases; locally it is noise. */
export function quietAwsSdkNodeWarning(): void {
  const emit = process.emitWarning.bind(process);
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    if (type === 'NodeVersionSupportWarning' || /NodeVersionSupportWarning|AWS SDK for JavaScript \(v3\)/.test(text)) return;
    (emit as (...args: unknown[]) => void)(warning, ...rest);
  }) as typeof process.emitWarning;
}

/**
 * What `npm start` prints once healthy: where it is (the API, the console, the API reference), the
 * token when it is the documented default (it is in the README; a chosen one is never printed: the
 * terminal may be logged), and things to try that work as printed with this run's data.
 */
export function startupBanner(system: LocalSystem): string {
  const { url, options, clock, seeded, startupMs } = system;
  const color = process.stdout.isTTY ? (code: number, text: string) => `\u001b[${code}m${text}\u001b[0m` : (_: number, text: string) => text;
  const bold = (t: string) => color(1, t);
  const dim = (t: string) => color(2, t);
  const defaultToken = LOCAL_SECRET_DEFAULTS.LOCAL_API_TOKEN;
  const chosen = process.env.LOCAL_API_TOKEN !== undefined && process.env.LOCAL_API_TOKEN !== defaultToken;
  const token = chosen
    ? `not shown: the value of LOCAL_API_TOKEN in this shell`
    : `${defaultToken}  ${dim('(the documented default; set LOCAL_API_TOKEN to choose your own)')}`;
  const auth = `-H "authorization: Bearer ${chosen ? '$LOCAL_API_TOKEN' : defaultToken}"`;
  const seededUser = seeded && seeded.users > 0 ? 'seed-user-0001' : undefined;
  const lines = [
    '',
    bold(`Billing backend running at ${url}`) + dim(`  (ready in ${(startupMs / 1000).toFixed(1)} s)`),
    `  console         ${url}/console  ${dim('(sign in with the API token)')}`,
    `  API reference   ${url}/docs  ${dim(`(OpenAPI 3.1: ${url}/openapi.json)`)}`,
    `  API token       ${token}  ${dim('(Authorization: Bearer …, scopes billing:read billing:write billing:operate)')}`,
    `  simulated now   ${clock.now().toISOString()}`,
    `  data            ${options.dataDir}${seeded ? dim(`  (seeded: ${seeded.users} members, ${seeded.records} records)`) : dim('  (not seeded)')}`,
    `  collections     ${options.collectionsIntervalMs > 0 ? `every ${options.collectionsIntervalMs / 1000} s of wall time (--no-schedule turns it off)` : 'on demand only (POST /local/collections/run)'}`,
    `  listening       127.0.0.1 only (the gateway, DynamoDB Local, the SQS and Kinesis emulators)`,
    '',
    bold('Try:'),
    `  curl -s ${url}/health`,
    ...(seededUser ? [`  curl -s ${auth} ${url}/v1/users/${seededUser}/subscriptions`] : []),
    `  curl -s ${auth} '${url}/v1/subscriptions?billing=failing'`,
    `  curl -s ${auth} '${url}/v1/subscriptions?billing=exceptions'`,
    `  curl -s -X POST ${url}/local/clock -H 'content-type: application/json' -d '{"advance":"PT24H"}'`,
    `  curl -s -X POST ${url}/local/collections/run`,
    dim(chosen ? '  (the curl lines read the token from $LOCAL_API_TOKEN: export it first; README "A five-minute tour"' : '  (README "A five-minute tour"'),
    dim(seededUser ? '   walks through a member end to end; Ctrl-C stops everything)' : '   creates members and walks them end to end; Ctrl-C stops everything)'),
    '',
  ];
  return `${lines.join('\n')}\n`;
}

/** The banner's "Try:" commands, as printed (a test runs them). */
export function tryCommands(banner: string): string[] {
  const plain = banner.replace(/\u001b\[\d+m/g, '');
  const start = plain.indexOf('Try:\n');
  if (start < 0) return [];
  return plain
    .slice(start + 'Try:\n'.length)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('curl '));
}

/** Fields of /proc/<pid>/stat after the parenthesised command name: state, ppid, pgrp, ... */
function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * The processes this one was started through that belong to its own job (process group): npm,
 * sh and tsx under `npm start`. The shell or service manager above the job is not watched, so a
 * runtime started detached (`setsid`, `nohup ... &`, systemd) outlives the shell that started it,
 * while a terminal's Ctrl-C or hang-up reaches the whole job as a signal.
 */
export function jobAncestors(): number[] {
  const group = Number(statFields('self')?.[2]);
  const ancestors: number[] = [];
  let pid = process.ppid;
  while (pid > 1 && Number.isInteger(group)) {
    const fields = statFields(pid);
    if (!fields || Number(fields[2]) !== group) break;
    ancestors.push(pid);
    pid = Number(fields[1]);
  }
  return ancestors;
}

/**
 * Calls `onGone` when a process of its own job this one was started under exits. `npm start` runs
 * us through npm → sh → tsx: a SIGTERM to npm kills npm and sh but not their children, which would
 * orphan this process tree (and DynamoDB Local's JVM). Linux only (/proc); elsewhere it watches nothing.
 */
export function watchAncestors(onGone: (pid: number) => void, intervalMs = 1_000): () => void {
  const ancestors = jobAncestors();
  const timer = setInterval(() => {
    for (const ancestor of ancestors) {
      try {
        process.kill(ancestor, 0);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ESRCH') {
          clearInterval(timer);
          onGone(ancestor);
          return;
        }
      }
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
