import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';

/** A startup problem the person at the terminal can fix: one line, no stack trace. */
export class LocalStartupError extends Error {
  override readonly name = 'LocalStartupError';
}

/** DynamoDB Local is a Java program: say so before waiting on it. */
export function assertJavaAvailable(): void {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore', timeout: 15_000 });
  if (probe.error && (probe.error as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new LocalStartupError(
      'Java was not found on PATH. DynamoDB Local needs Java 17+: install it (Debian/Ubuntu: sudo apt-get install default-jre-headless, macOS: brew install openjdk) and run npm start again.',
    );
  }
  if (probe.status !== 0 && probe.status !== null) {
    throw new LocalStartupError(`"java -version" failed (exit ${probe.status}). DynamoDB Local needs a working Java 17+; check your JAVA_HOME/PATH and run npm start again.`);
  }
}

export function portInUseMessage(port: number, host: string): string {
  return `Port ${port} on ${host} is already in use (another npm start?). Stop that process or choose another port: PORT=${port + 1} npm start`;
}

/** A fixed DynamoDB Local port that something else holds would hang the readiness probe: check first. */
export async function assertPortFree(port: number, what: string, variable: string): Promise<void> {
  const free = await new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, () => probe.close(() => resolve(true)));
  });
  if (!free) throw new LocalStartupError(`Port ${port} for ${what} is already in use. Free it, or unset ${variable} to let npm start pick a free port.`);
}
