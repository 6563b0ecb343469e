import { setTimeout as sleep } from 'node:timers/promises';
import { cancellationCodes } from './errors.js';

/** Tries after the first: a conflicting transaction holds its items for milliseconds, so five waits (10-320 ms) see it done. */
export const CONFLICT_RETRIES = 5;

/**
 * Whether DynamoDB cancelled a transaction only because another one was in flight on one of its
 * items (a counter shard, an instruments item): nothing was written, so the identical transaction
 * may be sent again. A failed condition anywhere is the caller's answer, never retried.
 */
export function isConflictOnly(error: unknown): boolean {
  const codes = cancellationCodes(error);
  if (!codes || !codes.includes('TransactionConflict')) return false;
  return codes.every((code) => code === undefined || code === 'None' || code === 'TransactionConflict');
}

/** Sends a transaction, and again (identically, after a jittered wait) while it is cancelled only by a conflict. */
export async function retryingConflicts<T>(send: () => Promise<T>): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await send();
    } catch (error) {
      if (retry >= CONFLICT_RETRIES || !isConflictOnly(error)) throw error;
      await sleep(10 * 2 ** retry * (0.5 + Math.random()));
    }
  }
}

/** Reads again (a few times, after short waits) while a transactional read is cancelled by a transaction writing one of its items. */
export async function retryingReadConflicts<T>(read: () => Promise<T>): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await read();
    } catch (error) {
      if (retry >= 3 || !cancellationCodes(error)?.includes('TransactionConflict')) throw error;
      await sleep(10 * 2 ** retry);
    }
  }
}
