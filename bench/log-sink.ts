import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';

/**
 * Where the bench's project runs log, at the production level (info): a file written
 * synchronously, one write(2) per line, which is what pino does to stdout in Lambda (sonic-boom,
 * sync, fd 1, a pipe the runtime drains). The bench's own stdout carries its tables, so the lines
 * go to a file in a temporary directory instead; its size is reported, then it is deleted.
 */
export interface LogSink {
  readonly stream: pino.DestinationStream;
  bytes(): number;
  close(): void;
}

export function openLogSink(): LogSink {
  const dir = mkdtempSync(join(tmpdir(), 'billing-bench-log-'));
  const file = join(dir, 'info.log');
  const stream = pino.destination({ dest: file, sync: true, mkdir: false });
  return {
    stream,
    bytes: () => statSync(file).size,
    close: () => {
      stream.flushSync();
      stream.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const LOG_SINK_DESCRIPTION = 'level info (production), to a file written synchronously (one write(2) per line, as pino writes stdout in Lambda)';
