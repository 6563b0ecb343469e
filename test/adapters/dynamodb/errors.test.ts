import {
  ConditionalCheckFailedException,
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ResourceNotFoundException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../src/adapters/dynamodb/billing/store.js';
import { createDynamoClient } from '../../../src/adapters/dynamodb/client.js';
import { toDomainError, type TransactionItemDescription } from '../../../src/adapters/dynamodb/errors.js';
import { DynamoLockStore } from '../../../src/adapters/dynamodb/lock-store.js';
import { freePort } from '../../../src/adapters/dynamodb/local-server.js';
import { DynamoStripeEventStore } from '../../../src/adapters/dynamodb/stripe-event-store.js';
import { AlreadyExistsError, ConcurrentModificationError, InterruptedError, TransientError } from '../../../src/domain/errors.js';
import { historyOf, makeRecord } from '../../support/billing-fixtures.js';

const meta = { $metadata: {} };
const items: TransactionItemDescription[] = [
  { onConditionFailed: 'concurrent', label: 'primary' },
  { onConditionFailed: 'exists', label: 'next period' },
  { onConditionFailed: 'concurrent', label: 'history' },
];
const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: codes.map((Code) => ({ Code })) });

describe('toDomainError', () => {
  it.each([
    ['ThrottlingException', new ThrottlingException({ message: 'm', ...meta })],
    ['ProvisionedThroughputExceededException', new ProvisionedThroughputExceededException({ message: 'm', ...meta })],
    ['RequestLimitExceeded', new RequestLimitExceeded({ message: 'm', ...meta })],
    ['TransactionConflictException', new TransactionConflictException({ message: 'm', ...meta })],
    ['InternalServerError', new InternalServerError({ message: 'm', ...meta })],
    ['a 503', Object.assign(new Error('m'), { name: 'Whatever', $metadata: { httpStatusCode: 503 } })],
    ['a reset connection', Object.assign(new Error('m'), { code: 'ECONNRESET' })],
    ['a cancelled transaction with a conflict', cancelled('None', 'TransactionConflict', 'None')],
    ['a cancelled transaction throttled', cancelled('ThrottlingError', 'None', 'None')],
  ])('maps %s to TransientError carrying the cause', (_, error) => {
    const mapped = toDomainError(error, { operation: 'op', transactionItems: items });
    expect(mapped).toBeInstanceOf(TransientError);
    expect((mapped as Error).cause).toBe(error);
  });

  it('maps a condition failure by the item it failed on, from CancellationReasons', () => {
    expect(toDomainError(cancelled('ConditionalCheckFailed', 'None', 'None'), { operation: 'op', transactionItems: items })).toBeInstanceOf(
      ConcurrentModificationError,
    );
    expect(toDomainError(cancelled('None', 'ConditionalCheckFailed', 'None'), { operation: 'op', transactionItems: items })).toBeInstanceOf(
      AlreadyExistsError,
    );
    const history = toDomainError(cancelled('None', 'None', 'ConditionalCheckFailed'), { operation: 'op', transactionItems: items });
    expect(history).toBeInstanceOf(ConcurrentModificationError);
    expect((history as Error).message).toContain('history');
    // A false condition is the answer even when another item also conflicted.
    expect(toDomainError(cancelled('TransactionConflict', 'ConditionalCheckFailed', 'None'), { operation: 'op', transactionItems: items })).toBeInstanceOf(
      AlreadyExistsError,
    );
  });

  it('maps a single-item condition failure by what the caller says it means', () => {
    const error = new ConditionalCheckFailedException({ message: 'm', ...meta });
    expect(toDomainError(error, { operation: 'op', item: { onConditionFailed: 'exists', label: 'x' } })).toBeInstanceOf(AlreadyExistsError);
    expect(toDomainError(error, { operation: 'op', item: { onConditionFailed: 'concurrent', label: 'x' } })).toBeInstanceOf(ConcurrentModificationError);
  });

  it('maps an abort to InterruptedError and leaves unknown errors as they are', () => {
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
    expect(toDomainError(abort, { operation: 'op' })).toBeInstanceOf(InterruptedError);
    const missing = new ResourceNotFoundException({ message: 'no table', ...meta });
    expect(toDomainError(missing, { operation: 'op' })).toBe(missing);
    const validation = cancelled('ValidationError');
    expect(toDomainError(validation, { operation: 'op', transactionItems: items })).toBe(validation);
  });
});

describe('stores facing an unreachable DynamoDB', () => {
  it('throw TransientError, never a false "held" or "not found" answer', async () => {
    const port = await freePort(); // nothing listens here
    const client = createDynamoClient({ region: 'local', endpoint: `http://127.0.0.1:${port}` }, { maxAttempts: 1 });
    const billing = new DynamoBillingStore({ client, tableName: 't', historyTableName: 'h' });
    const record = makeRecord();
    await expect(billing.get(record)).rejects.toBeInstanceOf(TransientError);
    await expect(billing.commit({ writes: [{ kind: 'create', record }], history: [historyOf(record)] })).rejects.toBeInstanceOf(TransientError);
    const locks = new DynamoLockStore(client, 'locks');
    await expect(
      locks.tryAcquire({ key: 'k', owner_name: 'o', record_version_number: 'v', lease_duration_ms: 1, lease_expires_at: 1 }, 0),
    ).rejects.toBeInstanceOf(TransientError);
    const events = new DynamoStripeEventStore({ client, tableName: 'events' });
    await expect(events.claim('evt_1', Date.now(), 1000)).rejects.toBeInstanceOf(TransientError);
    client.destroy();
  });
});
