import { describe, expect, it } from 'vitest';
import { firstFailedIndex, streamBatchOutcome } from '../../src/local/stream-batch.js';

const seqs = ['1', '2', '3'];

describe('a stream batch as Lambda treats it (local Kinesis and DynamoDB Streams pollers)', () => {
  it('finds the first failed record; an empty or unknown itemIdentifier fails the whole batch', () => {
    expect(firstFailedIndex([], seqs)).toBeUndefined();
    expect(firstFailedIndex([{ itemIdentifier: '3' }, { itemIdentifier: '2' }], seqs)).toBe(1);
    expect(firstFailedIndex([{ itemIdentifier: '' }], seqs)).toBe(0);
    expect(firstFailedIndex([{ itemIdentifier: '9' }, { itemIdentifier: '3' }], seqs)).toBe(0);
  });

  it('a whole success is processed through its last record, with the attempts the retried record took', () => {
    expect(streamBatchOutcome(seqs, undefined, undefined, 2)).toEqual({ processed: seqs.map((s) => ({ sequenceNumber: s, attempts: 1 })), processedThrough: '3' });
    expect(streamBatchOutcome(['2'], undefined, { sequenceNumber: '2', attempts: 2 }, 2).processed).toEqual([{ sequenceNumber: '2', attempts: 3 }]);
  });

  it('keeps the records before a failure, retries the failed one alone, and gives it up once its retries ran out', () => {
    expect(streamBatchOutcome(seqs, 1, undefined, 2)).toEqual({ processed: [{ sequenceNumber: '1', attempts: 1 }], processedThrough: '1', retry: { sequenceNumber: '2', attempts: 1 } });
    expect(streamBatchOutcome(['2'], 0, { sequenceNumber: '2', attempts: 1 }, 2)).toEqual({ processed: [], retry: { sequenceNumber: '2', attempts: 2 } });
    expect(streamBatchOutcome(['2'], 0, { sequenceNumber: '2', attempts: 2 }, 2)).toEqual({ processed: [], givenUp: { sequenceNumber: '2', attempts: 3, index: 0 } });
    // A retry of another record does not count toward this one.
    expect(streamBatchOutcome(seqs, 0, { sequenceNumber: '9', attempts: 5 }, 2).retry).toEqual({ sequenceNumber: '1', attempts: 1 });
  });
});
