import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { TransactionCanceledException, TransactWriteItemsCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { CorruptItemError, InvalidPageRequestError, InvalidTransactionError, toDomainError } from '../../src/adapters/dynamodb/errors.js';
import {
  AlreadyExistsError,
  ConcurrentModificationError,
  DomainError,
  IllegalTransitionError,
  InterruptedError,
  InternalFaultError,
  LockedError,
  LockLostError,
  NotFoundError,
  PreconditionFailedError,
  ProcessorError,
  TransientError,
  UnbilledPeriodError,
} from '../../src/domain/errors.js';
import { IdempotencyKeyReusedError } from '../../src/domain/use-cases/make-loan-payment.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { errorResponse, type HttpResult } from '../../src/handlers/shared/http.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import type { FunctionName } from '../../src/manifest/index.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { httpEvent, responseOf } from '../support/http-events.js';
import { achDelivery, achEventBody, paymentIntentObject, stripeDelivery, stripeEvent } from '../support/webhooks.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord } from './api-fixtures.js';

/**
 * DESIGN 8, "Errors": errors become HTTP answers by class in one place. Conflicts answer 409 with
 * their code; internal faults (a corrupt stored item, an invalid transaction, an interruption, a
 * lost lock) answer 500 with a generic message and a reference, and the full error goes to the log
 * under the same reference; the body never names a table, a key or what the item holds.
 */

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'errors' });
});

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly reference?: string;
  readonly err?: { type?: string; message?: string; stack?: string };
  readonly [key: string]: unknown;
}

function capturingLogger(): { logger: pino.Logger; lines: () => LogLine[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines: () => chunks.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as LogLine) };
}

function withLogger(name: FunctionName): { deps: AppDeps; lines: () => LogLine[] } {
  const { logger, lines } = capturingLogger();
  return { deps: { ...app.depsFor(name), logger }, lines };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The one 500 shape: generic message, the reference in the message and in details, nothing else. */
function expectInternalError(result: HttpResult): string {
  const res = responseOf(result);
  expect(res.status).toBe(500);
  const reference = res.body?.error?.details?.reference as string;
  expect(reference).toMatch(UUID);
  expect(res.body).toEqual({
    error: { code: 'internal_error', message: `An internal error occurred. Reference: ${reference}`, details: { reference } },
  });
  return reference;
}

/** Writes an attribute no record can hold straight into the billing table, as a bad migration or hand edit would. */
async function corrupt(record: BillingRecord, marker: string): Promise<void> {
  await app.db.client.send(
    new UpdateItemCommand({
      TableName: app.db.tables.billingActivity,
      Key: { user_id: { S: record.user_id }, billing_date: { S: record.billing_date } },
      UpdateExpression: 'SET billing_status = :bad, tier = :marker',
      ExpressionAttributeValues: { ':bad': { S: `NOT-A-STATUS-${marker}` }, ':marker': { N: '424242' } },
    }),
  );
}

/** Nothing of the item or where it lives reaches the client. */
function expectNoLeak(result: HttpResult, record: BillingRecord, marker: string): void {
  const body = result.body ?? '';
  for (const secret of [app.db.tables.billingActivity, record.user_id, record.billing_date, marker, 'NOT-A-STATUS', '424242', 'billing_status', 'corrupt']) {
    expect(body).not.toContain(secret);
  }
}

/** The log holds the full error under the reference the client got. */
function expectLogged(lines: LogLine[], reference: string, ...fragments: string[]): LogLine {
  const line = lines.find((l) => l.reference === reference);
  expect(line, `a log line with reference ${reference}`).toBeDefined();
  expect(line!.level).toBe(50);
  for (const fragment of fragments) expect(line!.err?.message ?? '').toContain(fragment);
  expect(line!.err?.stack).toBeTruthy();
  return line!;
}

describe('a corrupt stored item is an internal fault (500), not a conflict', () => {
  it('GET /v1/subscriptions/{id}: 500, generic message and reference; table, key and content only in the log', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const marker = randomUUID().slice(0, 8);
    await corrupt(record, marker);
    const { deps, lines } = withLogger('api');
    const result = await createApiHandler(deps)(
      httpEvent('GET', { route: '/v1/subscriptions/{subscriptionId}', pathParameters: { subscriptionId: record.subscription_id } }),
    );
    const reference = expectInternalError(result);
    expectNoLeak(result, record, marker);
    const line = expectLogged(lines(), reference, app.db.tables.billingActivity, record.user_id, 'billing_status');
    expect(line.err?.type).toBe('CorruptItemError');
  });

  it('GET /v1/users/{userId}/subscriptions: the listing answers the same way', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    const marker = randomUUID().slice(0, 8);
    await corrupt(record, marker);
    const { deps, lines } = withLogger('api');
    const result = await createApiHandler(deps)(httpEvent('GET', { route: '/v1/users/{userId}/subscriptions', pathParameters: { userId: record.user_id } }));
    const reference = expectInternalError(result);
    expectNoLeak(result, record, marker);
    expectLogged(lines(), reference, app.db.tables.billingActivity);
  });

  it('every answer carries its own reference', async () => {
    const [record] = await seedRecords(app, billingRecord(app));
    await corrupt(record, randomUUID().slice(0, 8));
    const handler = createApiHandler(app.depsFor('api'));
    const event = () => httpEvent('GET', { route: '/v1/subscriptions/{subscriptionId}', pathParameters: { subscriptionId: record.subscription_id } });
    const first = expectInternalError(await handler(event()));
    const second = expectInternalError(await handler(event()));
    expect(first).not.toBe(second);
  });

  it('POST /webhooks/ach for a corrupt record: 500 with a reference (the sender retries), nothing leaked', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { billing_status: 'ACHSENT', payment_method: 'ach', transaction_id: `conf-${randomUUID()}` }));
    const marker = randomUUID().slice(0, 8);
    await corrupt(record, marker);
    const { deps, lines } = withLogger('ach-handler');
    const body = achEventBody(record, 'settled', record.transaction_id!, formatInstant(app.clock.now()));
    const result = await createAchHandler(deps)(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
    const reference = expectInternalError(result);
    expectNoLeak(result, record, marker);
    expectLogged(lines(), reference, app.db.tables.billingActivity);
  });

  it('POST /webhooks/stripe for a corrupt record: 500 with a reference, and the claim is released for the redelivery', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'card' }));
    const marker = randomUUID().slice(0, 8);
    await corrupt(record, marker);
    const { deps, lines } = withLogger('stripe-webhook');
    const event = stripeEvent('payment_intent.succeeded', paymentIntentObject(record, `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`), app.wallClock.now().getTime());
    const result = await createStripeWebhookHandler(deps)(stripeDelivery(event, { signedAtMs: app.wallClock.now().getTime() }));
    const reference = expectInternalError(result);
    expectNoLeak(result, record, marker);
    expectLogged(lines(), reference, app.db.tables.billingActivity);
    const claim = await app.deps.stripeEvents.get(event.id);
    expect(claim?.status).not.toBe('processed');
  });
});

/** Real SDK errors, from DynamoDB Local itself, for requests the store refuses outright. */
async function refusedByDynamo(): Promise<{ duplicateKey: unknown; wrongType: unknown }> {
  const table = app.db.tables.billingActivity;
  const key = { user_id: { S: `user-${randomUUID()}` }, billing_date: { S: '2026-12-01T00:00:00.000000000Z' } };
  const capture = async (send: () => Promise<unknown>) => {
    try {
      await send();
    } catch (error) {
      return error;
    }
    throw new Error('DynamoDB Local accepted a request it should refuse');
  };
  // One item twice in one transaction.
  const duplicateKey = await capture(() =>
    app.db.client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: table, Item: { ...key, tier: { S: 'a' } } } },
          { Put: { TableName: table, Item: { ...key, tier: { S: 'b' } } } },
        ],
      }),
    ),
  );
  await app.db.client.send(new UpdateItemCommand({ TableName: table, Key: key, UpdateExpression: 'SET tier = :s', ExpressionAttributeValues: { ':s': { S: 'text' } } }));
  // ADD a number to a string attribute inside a transaction.
  const wrongType = await capture(() =>
    app.db.client.send(
      new TransactWriteItemsCommand({
        TransactItems: [{ Update: { TableName: table, Key: key, UpdateExpression: 'ADD tier :n', ExpressionAttributeValues: { ':n': { N: '1' } } } }],
      }),
    ),
  );
  return { duplicateKey, wrongType };
}

describe('the mapping, by class', () => {
  it.each([
    ['LockedError', new LockedError('billing lock for user u-1 is held by api:x'), 'locked'],
    ['IllegalTransitionError', new IllegalTransitionError('billing', 'COMPLETED', 'WAIVE'), 'illegal_transition'],
    ['UnbilledPeriodError', new UnbilledPeriodError('subscription s-1 is due and unbilled; bill or waive it first'), 'unbilled_period'],
    ['ConcurrentModificationError', new ConcurrentModificationError('commit: billing-activity item (user_id=u-1, billing_date=d) changed since it was read'), 'concurrent_modification'],
    ['AlreadyExistsError', new AlreadyExistsError('commit: billing-activity item (user_id=u-1, billing_date=d) already exists'), 'already_exists'],
    ['a domain conflict the mapping does not list (IdempotencyKeyReusedError)', new IdempotencyKeyReusedError('the key made another payment'), 'idempotency_key_reused'],
  ])('%s answers 409 with its code', (_, error, code) => {
    const res = responseOf(errorResponse(error, capturingLogger().logger));
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe(code);
    expect(Object.keys(res.body)).toEqual(['error']);
  });

  it('store conflicts answer without the table or key their message names (those stay in the log)', () => {
    for (const error of [
      new ConcurrentModificationError('commit: billing-activity item (user_id=u-1, billing_date=d) changed since it was read'),
      new AlreadyExistsError('payments.create: payments item (PK=USER#u-1, SK=LOAN#l) already exists'),
    ]) {
      const { logger, lines } = capturingLogger();
      const result = errorResponse(error, logger);
      expect(result.body).not.toMatch(/billing-activity|payments item|user_id|u-1|PK=/);
      expect(JSON.stringify(lines())).toContain(error.message);
    }
  });

  it('domain conflicts written for the caller keep their message', () => {
    const res = responseOf(errorResponse(new IllegalTransitionError('billing', 'COMPLETED', 'WAIVE'), capturingLogger().logger));
    expect(res.body.error.message).toBe('billing: event WAIVE is not allowed from status COMPLETED');
  });

  it('client errors stay 4xx: not found 404, precondition and bad page token 400', () => {
    const logger = capturingLogger().logger;
    expect(responseOf(errorResponse(new NotFoundError('subscription s-1 not found'), logger))).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(responseOf(errorResponse(new PreconditionFailedError('billing_date_in_past', 'the new billing date must be in the future'), logger))).toMatchObject({
      status: 400,
      body: { error: { code: 'billing_date_in_past' } },
    });
    expect(responseOf(errorResponse(new InvalidPageRequestError('malformed page cursor'), logger))).toMatchObject({ status: 400, body: { error: { code: 'invalid_cursor' } } });
  });

  it('a transient fault answers 503 with Retry-After', () => {
    const res = responseOf(errorResponse(new TransientError('billing.get: transient DynamoDB failure'), capturingLogger().logger));
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.error.code).toBe('unavailable');
  });

  it('a processor error answers 502', () => {
    const res = responseOf(errorResponse(new ProcessorError('processor_error', 'stripe said 400'), capturingLogger().logger));
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('processor_error');
    expect(res.body.error.message).not.toContain('stripe said');
  });

  it.each([
    ['a corrupt item', () => new CorruptItemError('billing-activity item (user_id=u-1, billing_date=d) is corrupt: billing_status: Invalid option')],
    ['an invalid transaction', () => new InvalidTransactionError('commit: one item written twice (billing-activity item (user_id=u-1, billing_date=d))')],
    ['an interruption', () => new InterruptedError('the attempt was interrupted before submission')],
    ['a lost lock', () => new LockLostError('heartbeat failed for user u-1')],
    ['an error nobody mapped', () => new Error('billing-activity item (user_id=u-1) exploded')],
    ['a plain error whose text reads like a conflict', () => Object.assign(new Error('locked: illegal_transition unbilled_period'), { code: 'locked' })],
  ])('%s answers 500 with a generic message; the log has it in full under the reference', (_, make) => {
    const error = make();
    const { logger, lines } = capturingLogger();
    const result = errorResponse(error, logger);
    const reference = expectInternalError(result);
    expect(result.body).not.toMatch(/billing-activity|user_id|u-1|corrupt|locked|heartbeat|interrupted/);
    expectLogged(lines(), reference, error.message);
  });

  it('DynamoDB refusing a request (ValidationException) answers 500', async () => {
    const { duplicateKey, wrongType } = await refusedByDynamo();
    for (const error of [duplicateKey, wrongType]) {
      expect((error as Error).name).toBe('ValidationException');
      const { logger, lines } = capturingLogger();
      const result = errorResponse(toDomainError(error, { operation: 'commit' }), logger);
      const reference = expectInternalError(result);
      expect(result.body).not.toContain(app.db.tables.billingActivity);
      expectLogged(lines(), reference);
    }
  });

  it('a transaction cancelled for a reason other than a condition answers 500, not 409', () => {
    // AWS cancels a transaction whose update does not fit the stored item with a ValidationError
    // reason (DynamoDB Local answers ValidationException instead); the SDK's own class, as AWS sends it.
    const cancelled = new TransactionCanceledException({
      message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ValidationError]',
      $metadata: { httpStatusCode: 400 },
      CancellationReasons: [{ Code: 'None' }, { Code: 'ValidationError', Message: 'An operand in the update expression has an incorrect data type' }],
    });
    const mapped = toDomainError(cancelled, {
      operation: 'commit',
      transactionItems: [
        { onConditionFailed: 'concurrent', label: 'billing-activity item (user_id=u-1, billing_date=d)' },
        { onConditionFailed: 'exists', label: 'billing-activity item (user_id=u-1, billing_date=e)' },
      ],
    });
    const { logger, lines } = capturingLogger();
    const result = errorResponse(mapped, logger);
    const reference = expectInternalError(result);
    expectLogged(lines(), reference, 'ValidationError');
  });

  it('the internal-fault classes share one base, and none of the conflicts is one', () => {
    for (const fault of [new CorruptItemError('x'), new InvalidTransactionError('x'), new InterruptedError('x'), new LockLostError('x')]) {
      expect(fault).toBeInstanceOf(InternalFaultError);
      expect(fault).toBeInstanceOf(DomainError);
    }
    for (const conflict of [new LockedError('x'), new ConcurrentModificationError('x'), new AlreadyExistsError('x'), new UnbilledPeriodError('x'), new TransientError('x')]) {
      expect(conflict).not.toBeInstanceOf(InternalFaultError);
    }
  });
});
