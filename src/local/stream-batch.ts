/**
 * Lambda's rule for a stream event source's batch (Kinesis and DynamoDB Streams alike), shared by
 * the local pollers: the records before the first reported failure are done, the failed one is read
 * again alone until its retries run out, then it goes to the on-failure destination and the shard
 * moves past it. An empty or unknown `itemIdentifier` fails the whole batch.
 */

export interface StreamRetry {
  readonly sequenceNumber: string;
  readonly attempts: number;
}

/** Position of the first failed record, or undefined when every record succeeded. */
export function firstFailedIndex(failures: readonly { readonly itemIdentifier?: string }[], sequenceNumbers: readonly string[]): number | undefined {
  if (failures.length === 0) return undefined;
  const positions = failures.map((f) => sequenceNumbers.indexOf(f.itemIdentifier ?? ''));
  return positions.some((p) => p < 0) ? 0 : Math.min(...positions);
}

export interface StreamBatchOutcome {
  /** Records done with, each with the attempts it took. */
  readonly processed: readonly StreamRetry[];
  /** The last processed record: where the shard resumes after them (undefined when none). */
  readonly processedThrough?: string;
  /** The failed record to read again alone (and its attempts so far). */
  readonly retry?: StreamRetry;
  /** The failed record whose retries ran out, at `index` of the batch: to the on-failure destination. */
  readonly givenUp?: StreamRetry & { readonly index: number };
}

/** What one invocation's answer (`failedAt`, from firstFailedIndex) means for the shard, given the retry in progress. */
export function streamBatchOutcome(sequenceNumbers: readonly string[], failedAt: number | undefined, retry: StreamRetry | undefined, retryAttempts: number): StreamBatchOutcome {
  const attempt = retry && retry.sequenceNumber === sequenceNumbers[0] ? retry.attempts + 1 : 1;
  if (failedAt === undefined) {
    return { processed: sequenceNumbers.map((sequenceNumber) => ({ sequenceNumber, attempts: attempt })), processedThrough: sequenceNumbers[sequenceNumbers.length - 1] };
  }
  const processed = sequenceNumbers.slice(0, failedAt).map((sequenceNumber) => ({ sequenceNumber, attempts: 1 }));
  const failed = { sequenceNumber: sequenceNumbers[failedAt]!, attempts: failedAt === 0 ? attempt : 1 };
  return {
    processed,
    ...(failedAt > 0 ? { processedThrough: sequenceNumbers[failedAt - 1]! } : {}),
    ...(failed.attempts > retryAttempts ? { givenUp: { ...failed, index: failedAt } } : { retry: failed }),
  };
}
