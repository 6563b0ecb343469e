import { randomUUID } from 'node:crypto';
import { TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { instrumentsTransactItem } from '../../../src/adapters/dynamodb/instruments/item.js';
import { defaultInstruments } from '../../../src/adapters/processor/simulator.js';
import { loanRetryMessage } from '../../../src/domain/collections.js';
import { ConcurrentModificationError } from '../../../src/domain/errors.js';
import { currentInstrument } from '../../../src/domain/instruments/gate.js';
import { entryIdOf, type InstrumentsItem } from '../../../src/domain/instruments/instrument.js';
import { loanPresentmentWrite } from '../../../src/domain/instruments/loans.js';
import type { LoanPayment } from '../../../src/domain/loan-payments.js';
import type { PaymentRequest } from '../../../src/domain/ports/processor.js';
import { retryLoanPayment } from '../../../src/domain/use-cases/retry-loan-payment.js';
import { createApiHandler } from '../../../src/handlers/api.js';
import { loanPaymentId } from '../../../src/handlers/api/loans.js';
import { createBatchWorkerHandler } from '../../../src/handlers/batch-worker.js';
import { dynamoStores } from '../../../src/runtime/compose.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { sqsEvent, sqsRecord } from '../../support/aws-events.js';
import { httpEvent, operatorAuth, responseOf } from '../../support/http-events.js';
import { loanPayment, retryingLoanPayment, seedLoanPayment } from '../../support/loan-fixtures.js';
import { clientWithTransactionConflicts } from '../../support/transaction-conflicts.js';

/**
 * Issue 31: the loan payment and loan retry paths read the user's instruments item with the payment
 * in one TransactGetItems and write the presentment in the payment's own transaction (DESIGN 3.2),
 * as the scheduled path does. Requests are counted by an SDK middleware on the real handlers against
 * DynamoDB Local; circuit reads (a GetItem on the locks table, per container) and lock heartbeats
 * (a slow machine renews the lease) are counted apart.
 */

interface Sent {
  readonly command: string;
  /** The tables a transaction writes or reads: the instruments table must be in the payment's. */
  readonly tables: readonly string[];
  readonly circuit: boolean;
  readonly heartbeat: boolean;
}

let app: TestApp;
const sent: Sent[] = [];

beforeAll(async () => {
  app = await createTestApp({ label: 'loan-requests' });
  app.db.client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; ConditionExpression?: string; TransactItems?: Record<string, { TableName?: string }>[] };
      const command = String(context.commandName ?? '?').replace(/Command$/, '');
      const tables = input.TableName ? [input.TableName] : (input.TransactItems ?? []).flatMap((item) => Object.values(item).map((t) => t.TableName ?? '?'));
      const locks = input.TableName === app.db.tables.locks;
      const heartbeat = command === 'PutItem' && locks && /record_version_number = :previous/.test(input.ConditionExpression ?? '');
      sent.push({ command, tables, circuit: command === 'GetItem' && locks, heartbeat });
      return next(args);
    },
    { step: 'initialize', name: 'countLoanRequests' },
  );
});

async function counted(work: () => Promise<unknown>): Promise<{ requests: string[]; transactions: (readonly string[])[] }> {
  sent.length = 0;
  await work();
  const requests = sent.filter((s) => !s.circuit && !s.heartbeat);
  return { requests: requests.map((s) => s.command), transactions: requests.filter((s) => s.command === 'TransactWriteItems').map((s) => s.tables) };
}

const instrumentsOf = (userId: string) => app.deps.instruments.get(userId);
const presentmentsOf = (item: InstrumentsItem, payment: Pick<LoanPayment, 'loc_payment_id'>) =>
  Object.values(item.presentments).flat().filter((p) => p.reference === entryIdOf({ kind: 'loan_payment', payment_id: payment.loc_payment_id }));

async function customerPayment(rail: LoanPayment['loc_payment_method']): Promise<{ requests: string[]; transactions: (readonly string[])[]; payment: LoanPayment }> {
  const userId = `user-${randomUUID()}`;
  const loanId = `loan-${randomUUID().slice(0, 8)}`;
  const key = randomUUID();
  const api = createApiHandler(app.depsFor('api'));
  const body = { amount_cents: 4200, payment_method: rail, ...(rail === 'ach' ? { account_last_four: '6789' } : {}) };
  const { requests, transactions } = await counted(async () => {
    const res = responseOf(await api(httpEvent('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId, loanId }, headers: { 'idempotency-key': key }, body, auth: operatorAuth })));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
  const payment = await app.deps.payments.get(userId, loanId, loanPaymentId(userId, loanId, key));
  return { requests, transactions, payment: payment! };
}

async function automaticRetry(rail: LoanPayment['loc_payment_method']): Promise<{ requests: string[]; transactions: (readonly string[])[]; payment: LoanPayment }> {
  const seeded = await seedLoanPayment(app, retryingLoanPayment(app, { loc_payment_method: rail, loc_account_last_four: rail === 'ach' ? '6789' : '4242' }));
  const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
  const { requests, transactions } = await counted(async () => {
    const answer = await worker(sqsEvent([sqsRecord(loanRetryMessage({ user_id: seeded.loc_user_id, loan_id: seeded.loc_loan_id, payment_id: seeded.loc_payment_id }, app.clock.now()))]));
    expect(answer.batchItemFailures).toEqual([]);
  });
  const payment = await app.deps.payments.get(seeded.loc_user_id, seeded.loc_loan_id, seeded.loc_payment_id);
  return { requests, transactions, payment: payment! };
}

describe('DynamoDB requests per loan payment', () => {
  it('loan payment, pinless (api): 4 — the payment with the instruments item (one TransactGetItems), the daily debit reservation, the create, the outcome with its presentment', async () => {
    const { requests, transactions, payment } = await customerPayment('pinless');
    expect(payment.loc_status).toBe('COMPLETED');
    expect(requests).toEqual(['TransactGetItems', 'UpdateItem', 'TransactWriteItems', 'TransactWriteItems']);
    expect(transactions[1]).toContain(app.db.tables.instruments);
    expect(presentmentsOf(await instrumentsOf(payment.loc_user_id), payment)).toEqual([expect.objectContaining({ initiated: 'customer' })]);
  });

  it('loan payment, ach (api): 5 — the same, and the loan\'s recent payments (Query) for holds recorded before instruments', async () => {
    const { requests, transactions, payment } = await customerPayment('ach');
    expect(payment.loc_status).toBe('ACHSENT');
    expect(requests).toEqual(['TransactGetItems', 'Query', 'UpdateItem', 'TransactWriteItems', 'TransactWriteItems']);
    expect(transactions[1]).toContain(app.db.tables.instruments);
    const item = await instrumentsOf(payment.loc_user_id);
    expect(presentmentsOf(item, payment)).toHaveLength(1);
    expect(item.entries[entryIdOf({ kind: 'loan_payment', payment_id: payment.loc_payment_id })]).toMatchObject({ instrument_id: payment.loc_instrument_id, represented: 0 });
  });

  it('loan retry, pinless (batch-worker): 4 — lock, the payment with the instruments item, the outcome with its presentment, lock release', async () => {
    const { requests, transactions, payment } = await automaticRetry('pinless');
    expect(payment).toMatchObject({ loc_status: 'COMPLETED', loc_process: 'RETRY', loc_payment_attempts: 2 });
    expect(requests).toEqual(['PutItem', 'TransactGetItems', 'TransactWriteItems', 'DeleteItem']);
    expect(transactions[0]).toContain(app.db.tables.instruments);
    expect(presentmentsOf(await instrumentsOf(payment.loc_user_id), payment)).toEqual([expect.objectContaining({ initiated: 'merchant' })]);
  });

  it('loan retry, ach (batch-worker): 5 — the same, and the loan\'s recent payments (Query)', async () => {
    const { requests, transactions, payment } = await automaticRetry('ach');
    expect(payment).toMatchObject({ loc_status: 'ACHSENT', loc_process: 'RETRY', loc_payment_attempts: 2 });
    expect(requests).toEqual(['PutItem', 'TransactGetItems', 'Query', 'TransactWriteItems', 'DeleteItem']);
    expect(transactions[0]).toContain(app.db.tables.instruments);
    expect(presentmentsOf(await instrumentsOf(payment.loc_user_id), payment)).toHaveLength(1);
  });

  it('a repeat of an answered Idempotency-Key is answered from the one read', async () => {
    const userId = `user-${randomUUID()}`;
    const api = createApiHandler(app.depsFor('api'));
    const event = () => httpEvent('POST', { route: '/v1/users/{userId}/loans/{loanId}/payments', pathParameters: { userId, loanId: 'loan-r' }, headers: { 'idempotency-key': 'k' }, body: { amount_cents: 900, payment_method: 'pinless' }, auth: operatorAuth });
    expect(responseOf(await api(event())).status).toBe(201);
    const { requests } = await counted(async () => expect(responseOf(await api(event())).status).toBe(200));
    expect(requests).toEqual(['TransactGetItems']);
  });
});

describe('the presentment commits with the payment, or not at all', () => {
  /** An ACH re-presentment after an R01: its write adds the entry's count and a presentment. */
  async function representing(): Promise<{ read: LoanPayment; presented: NonNullable<ReturnType<typeof loanPresentmentWrite>> }> {
    const read = await seedLoanPayment(app, loanPayment(app, { loc_status: 'RETRY', loc_process: 'RETRY', loc_ach_represented: 1, loc_ach_original_entry_date: '2026-11-20T12:00:00.000Z', loc_account_last_four: '6789' }));
    const instrument = currentInstrument({ instruments: defaultInstruments(read.loc_user_id) }, 'ach');
    const presented = loanPresentmentWrite(read, instrument, app.clock.now(), 'merchant', { item: await instrumentsOf(read.loc_user_id) });
    return { read, presented: presented! };
  }
  const sentPayment = (read: LoanPayment): LoanPayment => ({ ...read, loc_status: 'ACHSENT', loc_payment_attempts: read.loc_payment_attempts + 1, loc_confirmation_id: `conf-${randomUUID()}`, version: read.version + 1 });

  it('a payment write cancelled by its version condition leaves the instruments item untouched; the same write at the right version lands both', async () => {
    const { read, presented } = await representing();
    const entry = entryIdOf({ kind: 'loan_payment', payment_id: read.loc_payment_id });
    const stale = { ...sentPayment(read), version: read.version + 2 };
    await expect(app.deps.payments.update(stale, read.version + 1, { actor: 'test' }, undefined, [], presented)).rejects.toBeInstanceOf(ConcurrentModificationError);
    const untouched = await instrumentsOf(read.loc_user_id);
    expect(presentmentsOf(untouched, read)).toEqual([]);
    expect(untouched.entries[entry]).toBeUndefined();
    expect((await app.deps.payments.get(read.loc_user_id, read.loc_loan_id, read.loc_payment_id))?.version).toBe(read.version);

    await app.deps.payments.update(sentPayment(read), read.version, { actor: 'test' }, undefined, [], presented);
    const landed = await instrumentsOf(read.loc_user_id);
    expect(presentmentsOf(landed, read)).toHaveLength(1);
    expect(landed.entries[entry]).toMatchObject({ represented: 1, first_entry_at: '2026-11-20T12:00:00.000Z' });
    expect((await app.deps.payments.get(read.loc_user_id, read.loc_loan_id, read.loc_payment_id))?.loc_status).toBe('ACHSENT');
  });

  it('a loan retry whose payment another writer moves while the processor answers writes neither its outcome nor its presentment', async () => {
    const seeded = await seedLoanPayment(app, retryingLoanPayment(app));
    const racing = {
      submit: async (request: PaymentRequest) => {
        const current = (await app.deps.payments.get(seeded.loc_user_id, seeded.loc_loan_id, seeded.loc_payment_id))!;
        await app.deps.payments.update({ ...current, loc_update_reason: 'moved by another writer', version: current.version + 1 }, current.version, { actor: 'test:other' });
        return app.simulator.submit(request);
      },
    };
    const outcome = await retryLoanPayment({ ...app.deps, processor: racing }, { user_id: seeded.loc_user_id, loan_id: seeded.loc_loan_id, payment_id: seeded.loc_payment_id, owner: 'test' });
    expect(outcome).toEqual({ kind: 'raced' });
    const stored = await app.deps.payments.get(seeded.loc_user_id, seeded.loc_loan_id, seeded.loc_payment_id);
    expect(stored).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 1, loc_update_reason: 'moved by another writer' });
    expect(presentmentsOf(await instrumentsOf(seeded.loc_user_id), seeded)).toEqual([]);
  });

  it('a transaction conflict on the instruments item cancels the whole write, and the identical write lands both once', async () => {
    // The emulated window (100 ms) is shorter than the store's five waits after a conflict (at least 155 ms).
    const conflicting = clientWithTransactionConflicts(app.db.endpoint, 100);
    const payments = dynamoStores({ client: conflicting.client, tables: app.db.tables }).payments;
    const { read, presented } = await representing();
    // Another transaction (a return's hold, another attempt) is on the user's instruments item at the same moment.
    const other = conflicting.client.send(new TransactWriteItemsCommand({ TransactItems: [instrumentsTransactItem(app.db.tables.instruments, { user_id: read.loc_user_id, seen: presented.seen ?? [] })] }));
    await Promise.all([other, payments.update(sentPayment(read), read.version, { actor: 'test' }, undefined, [], presented)]);
    expect(conflicting.conflicts()).toBeGreaterThan(0);
    const item = await instrumentsOf(read.loc_user_id);
    expect(presentmentsOf(item, read)).toHaveLength(1);
    expect(item.entries[entryIdOf({ kind: 'loan_payment', payment_id: read.loc_payment_id })]?.represented).toBe(1);
    expect((await app.deps.payments.get(read.loc_user_id, read.loc_loan_id, read.loc_payment_id))?.version).toBe(read.version + 1);
  });
});
