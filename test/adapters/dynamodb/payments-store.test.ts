import { randomUUID } from 'node:crypto';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoPaymentsStore, paymentKeys } from '../../../src/adapters/dynamodb/payments-store.js';
import { InvalidPageRequestError } from '../../../src/adapters/dynamodb/errors.js';
import { shardOf } from '../../../src/adapters/dynamodb/sharding.js';
import { AlreadyExistsError, ConcurrentModificationError } from '../../../src/domain/errors.js';
import type { Page } from '../../../src/domain/ports/page.js';
import type { LoanPayment } from '../../../src/domain/loan-payments.js';
import { instantAt } from '../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';

const AUDIT = { actor: 'test:payments-store', reason: 'a test write' };

function makePayment(overrides: Partial<LoanPayment> = {}): LoanPayment {
  return {
    loc_user_id: `user-${randomUUID()}`,
    loc_loan_id: `loan-${randomUUID()}`,
    loc_payment_id: randomUUID(),
    loc_amount: 5000,
    loc_status: 'PENDING',
    loc_payment_method: 'ach',
    loc_process: 'MANUAL',
    loc_payment_attempts: 0,
    loc_created_date: instantAt(0),
    loc_last_updated: instantAt(0),
    version: 1,
    ...overrides,
  };
}

/** Every page of a stream (at most 100 pages). */
async function streamAll<T>(pages: AsyncIterable<readonly T[]>): Promise<T[]> {
  const items: T[] = [];
  let count = 0;
  for await (const page of pages) {
    items.push(...page);
    if (++count > 100) throw new Error('stream does not end');
  }
  return items;
}

async function collectAll<T>(fetch: (cursor: string | null) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 100; i++) {
    const page: Page<T> = await fetch(cursor);
    items.push(...page.items);
    cursor = page.next;
    if (!cursor) return items;
  }
  throw new Error('pagination does not end');
}

describe('DynamoPaymentsStore on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoPaymentsStore;
  beforeAll(async () => {
    db = await createTestDynamo('payments');
    store = new DynamoPaymentsStore({ client: db.client, tableName: db.tables.payments });
  });

  async function raw(p: LoanPayment) {
    const { PK, SK } = paymentKeys(p, 8);
    return (await db.client.send(new GetItemCommand({ TableName: db.tables.payments, Key: { PK: { S: PK }, SK: { S: SK } }, ConsistentRead: true }))).Item;
  }

  it('stores the seed 004 keys, the loc_* attributes and integer cents', async () => {
    const p = makePayment({
      loc_confirmation_id: 'conf-1',
      loc_applications: [{ payment_id: 'x', installment_id: 'inst-1', amount: 2500, payment_date: instantAt(0) }],
    });
    await store.create(p, AUDIT);
    const item = await raw(p);
    expect(item?.PK).toEqual({ S: `USER#${p.loc_user_id}` });
    expect(item?.SK).toEqual({ S: `LOAN#${p.loc_loan_id}#PAYMENT#${p.loc_payment_id}` });
    expect(item?.GSI1PK).toEqual({ S: `USER#${p.loc_user_id}` });
    expect(item?.GSI1SK).toEqual({ S: `LOAN#${p.loc_loan_id}#STATUS#PENDING#PAYMENT#${p.loc_payment_id}` });
    expect(item?.GSI2PK).toEqual({ S: `PAYMENT#${shardOf(p.loc_payment_id, 8)}` });
    expect(item?.GSI2SK).toEqual({ S: `STATUS#PENDING#PAYMENT#${p.loc_payment_id}` });
    expect(item?.GSI3PK).toEqual({ S: `USER#${p.loc_user_id}` });
    expect(item?.GSI3SK).toEqual({ S: 'CONFIRMATION#conf-1' });
    expect(item?.loc_amount).toEqual({ N: '5000' });
    expect(await store.get(p.loc_user_id, p.loc_loan_id, p.loc_payment_id)).toEqual(p);
  });

  it('writes no GSI3 keys without a confirmation id', async () => {
    const p = makePayment();
    await store.create(p, AUDIT);
    const item = await raw(p);
    expect(item?.GSI3PK).toBeUndefined();
    expect(item?.GSI3SK).toBeUndefined();
  });

  it('refuses a taken payment id with AlreadyExistsError', async () => {
    const p = makePayment();
    await store.create(p, AUDIT);
    await expect(store.create({ ...p, loc_amount: 1 }, AUDIT)).rejects.toBeInstanceOf(AlreadyExistsError);
    expect((await store.get(p.loc_user_id, p.loc_loan_id, p.loc_payment_id))?.loc_amount).toBe(5000);
  });

  it('fences updates on version and rewrites the GSI keys on a status change', async () => {
    const p = makePayment();
    await store.create(p, AUDIT);
    const sent = { ...p, loc_status: 'ACHSENT' as const, loc_confirmation_id: 'conf-sent', loc_payment_attempts: 1, version: 2 };
    await store.update(sent, 1, AUDIT);
    await expect(store.update({ ...p, loc_status: 'FAILED', version: 2 }, 1, AUDIT)).rejects.toBeInstanceOf(ConcurrentModificationError);
    const item = await raw(p);
    expect(item?.GSI1SK).toEqual({ S: `LOAN#${p.loc_loan_id}#STATUS#ACHSENT#PAYMENT#${p.loc_payment_id}` });
    expect(item?.GSI2SK).toEqual({ S: `STATUS#ACHSENT#PAYMENT#${p.loc_payment_id}` });
    expect(item?.GSI3SK).toEqual({ S: 'CONFIRMATION#conf-sent' });
    expect((await store.listByLoanAndStatus(p.loc_user_id, p.loc_loan_id, 'PENDING')).items).toEqual([]);
    expect((await store.listByLoanAndStatus(p.loc_user_id, p.loc_loan_id, 'ACHSENT')).items).toEqual([sent]);
    expect(await store.findByConfirmationId(p.loc_user_id, 'conf-sent')).toEqual(sent);
  });

  it('refuses an update of a payment that does not exist', async () => {
    const p = makePayment({ version: 2 });
    await expect(store.update(p, 1, AUDIT)).rejects.toBeInstanceOf(ConcurrentModificationError);
    expect(await raw(p)).toBeUndefined();
  });

  it('lists a loan\'s payments, and by loan and status, paged, without other loans', async () => {
    const user = `user-${randomUUID()}`;
    const loan = `loan-${randomUUID()}`;
    const mine = Array.from({ length: 7 }, (_, i) => makePayment({ loc_user_id: user, loc_loan_id: loan, loc_status: i % 2 ? 'COMPLETED' : 'RETRY' }));
    const otherLoan = makePayment({ loc_user_id: user, loc_loan_id: `${loan}-2`, loc_status: 'RETRY' });
    for (const p of [...mine, otherLoan]) await store.create(p, AUDIT);
    const all = await collectAll((cursor) => store.listByLoan(user, loan, { limit: 3, cursor }));
    expect(all.map((p) => p.loc_payment_id).sort()).toEqual(mine.map((p) => p.loc_payment_id).sort());
    const retry = await collectAll((cursor) => store.listByLoanAndStatus(user, loan, 'RETRY', { limit: 2, cursor }));
    expect(retry.map((p) => p.loc_payment_id).sort()).toEqual(mine.filter((p) => p.loc_status === 'RETRY').map((p) => p.loc_payment_id).sort());
    const page = await store.listByLoan(user, loan, { limit: 1 });
    await expect(store.listByLoan(`user-${randomUUID()}`, loan, { limit: 1, cursor: page.next })).rejects.toBeInstanceOf(InvalidPageRequestError);
  });

  it('lists one status across every GSI2 shard, across users, paged in payment id order', async () => {
    const returned = Array.from({ length: 30 }, () => makePayment({ loc_status: 'RETURNED' }));
    for (const p of returned) await store.create(p, AUDIT);
    expect(new Set(returned.map((p) => shardOf(p.loc_payment_id, 8))).size).toBeGreaterThan(4);
    const items = await collectAll((cursor) => store.listByStatus('RETURNED', { limit: 4, cursor }));
    const ids = items.map((p) => p.loc_payment_id);
    expect(ids).toEqual(returned.map((p) => p.loc_payment_id).sort());
  });

  it('finds a payment by confirmation id only for its user', async () => {
    const p = makePayment({ loc_confirmation_id: `conf-${randomUUID()}` });
    await store.create(p, AUDIT);
    expect(await store.findByConfirmationId(p.loc_user_id, p.loc_confirmation_id!)).toEqual(p);
    expect(await store.findByConfirmationId(`user-${randomUUID()}`, p.loc_confirmation_id!)).toBeUndefined();
  });

  it('refuses ids that would break the key layout', async () => {
    await expect(store.create(makePayment({ loc_loan_id: 'a#b' }), AUDIT)).rejects.toThrow(/must not contain/);
  });
  it('lists a loan\'s payments newest first by loc_created_date, paged, never its audit rows', async () => {
    const user = `user-${randomUUID()}`;
    const loan = `loan-${randomUUID()}`;
    // Created out of id order, two tied at one instant.
    const created = [5, 1, 9, 3, 3, 7].map((minutes) => makePayment({ loc_user_id: user, loc_loan_id: loan, loc_created_date: instantAt(minutes * 60_000) }));
    for (const p of created) await store.create(p, AUDIT);
    // Each update adds an audit row under the same PK: the list must still hold payments only.
    await store.update({ ...created[0]!, loc_status: 'ACHSENT', loc_payment_attempts: 1, version: 2 }, 1, AUDIT);
    const all = await collectAll((cursor) => store.listByLoan(user, loan, { limit: 2, cursor }));
    const expected = [...created].sort((a, b) => (a.loc_created_date === b.loc_created_date ? b.loc_payment_id.localeCompare(a.loc_payment_id) : b.loc_created_date.localeCompare(a.loc_created_date)));
    expect(all.map((p) => p.loc_payment_id)).toEqual(expected.map((p) => p.loc_payment_id));
    expect(all.map((p) => p.loc_created_date)).toEqual([...all.map((p) => p.loc_created_date)].sort().reverse());
  });

  it('writes an audit row with every create and update, in the same transaction, newest first', async () => {
    const p = makePayment();
    await store.create(p, { actor: 'auth0|user-1', reason: 'created by the user' });
    const sent = { ...p, loc_status: 'ACHSENT' as const, loc_payment_attempts: 1, loc_update_reason: 'ACH debit submitted', loc_last_updated: instantAt(1000), version: 2 };
    await store.update(sent, 1, { actor: 'system:batch-worker' });
    const rows = await collectAll((cursor) => store.listHistory(p.loc_user_id, p.loc_loan_id, p.loc_payment_id, { limit: 1, cursor }));
    expect(rows.map((r) => [r.version, r.loc_status, r.actor, r.reason])).toEqual([
      [2, 'ACHSENT', 'system:batch-worker', undefined],
      [1, 'PENDING', 'auth0|user-1', 'created by the user'],
    ]);
    expect(rows[0]!.loc_update_reason).toBe('ACH debit submitted');
    expect(rows[0]!.recorded_at).toBe(instantAt(1000));
    // A refused change writes neither the payment nor its audit row.
    await expect(store.update({ ...p, loc_status: 'FAILED', version: 2 }, 1, AUDIT)).rejects.toBeInstanceOf(ConcurrentModificationError);
    await expect(store.create({ ...p }, AUDIT)).rejects.toBeInstanceOf(AlreadyExistsError);
    expect((await store.listHistory(p.loc_user_id, p.loc_loan_id, p.loc_payment_id)).items).toHaveLength(2);
    // Audit rows carry no index keys: no status listing sees them.
    expect((await store.listByLoanAndStatus(p.loc_user_id, p.loc_loan_id, 'PENDING')).items).toEqual([]);
  });

  it('streams due RETRY payments across every GSI2 shard, oldest due first, with ties and resumed queries, never reading later ones', async () => {
    const bound = instantAt(10 * 60_000);
    const at = (minutes: number) => instantAt(minutes * 60_000);
    const due = [
      ...Array.from({ length: 12 }, () => makePayment({ loc_status: 'RETRY', loc_next_attempt_at: bound })), // tied at the bound
      ...Array.from({ length: 9 }, () => makePayment({ loc_status: 'RETRY', loc_next_attempt_at: at(3) })), // tied earlier
      makePayment({ loc_status: 'RETRY', loc_next_attempt_at: at(1) }),
    ];
    const later = Array.from({ length: 5 }, () => makePayment({ loc_status: 'RETRY', loc_next_attempt_at: at(11) }));
    const otherStatus = makePayment({ loc_status: 'PENDING' });
    // Isolated bound: other tests' RETRY payments sit at instantAt(0).
    for (const p of [...due, ...later, otherStatus]) await store.create({ ...p, loc_last_updated: at(0) }, AUDIT);
    expect(new Set(due.map((p) => shardOf(p.loc_payment_id, 8))).size).toBeGreaterThan(4);
    // Two items per query, three per page: shards resume inside the ties.
    const planned = await streamAll(store.streamDueRetries(bound, { pageSize: 3, queryLimit: 2 }));
    const mine = new Set(due.map((p) => p.loc_payment_id));
    const seen = planned.filter((d) => mine.has(d.payment_id) || later.some((l) => l.loc_payment_id === d.payment_id));
    expect(seen.map((d) => d.payment_id).sort()).toEqual([...mine].sort());
    expect(new Set(planned.map((d) => d.payment_id)).size).toBe(planned.length);
    const order = seen.map((d) => `${d.next_attempt_at}#${d.payment_id}`);
    expect(order).toEqual([...order].sort());
    expect(seen.find((d) => d.payment_id === due[0]!.loc_payment_id)).toEqual({
      user_id: due[0]!.loc_user_id,
      loan_id: due[0]!.loc_loan_id,
      payment_id: due[0]!.loc_payment_id,
      next_attempt_at: bound,
    });
    // A payment leaving RETRY leaves the plan.
    const paid = due[1]!;
    await store.update({ ...paid, loc_last_updated: at(0), loc_status: 'COMPLETED', loc_next_attempt_at: undefined, version: 2 }, 1, AUDIT);
    const again = await streamAll(store.streamDueRetries(bound, { pageSize: 50 }));
    expect(again.some((d) => d.payment_id === paid.loc_payment_id)).toBe(false);
    expect(again.filter((d) => mine.has(d.payment_id))).toHaveLength(due.length - 1);
  });
});
