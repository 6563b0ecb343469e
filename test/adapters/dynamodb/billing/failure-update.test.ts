import { GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoBillingStore } from '../../../../src/adapters/dynamodb/billing/store.js';
import { dueKey, nextFailure, type BillingFailureFields } from '../../../../src/domain/ladder.js';
import type { BillingRecord } from '../../../../src/domain/records.js';
import { formatInstant } from '../../../../src/domain/time.js';
import { freshStamp, historyOf, makeRecord, nextVersion } from '../../../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../../../support/dynamo.js';
import { BILLING_RETRY_WAITS_MS } from '../../../support/time.js';

/** The ladder's first wait: where a first counted failure saves its next attempt. */
const FIRST_WAIT = BILLING_RETRY_WAITS_MS[0]!;

const NOW = new Date(Date.UTC(2026, 10, 2, 12));

describe('DynamoBillingStore.recordBillingFailure on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoBillingStore;
  beforeAll(async () => {
    db = await createTestDynamo('billing-f');
    store = new DynamoBillingStore({ client: db.client, tableName: db.tables.billingActivity, historyTableName: db.tables.billingActivityHistory });
  });

  async function created(overrides: Partial<BillingRecord> = {}): Promise<BillingRecord> {
    const record = makeRecord(overrides);
    await store.commit({ writes: [{ kind: 'create', record }], history: [historyOf(record)] });
    return record;
  }

  /** What the attempt writes after one more counted failure of `read`. */
  function failed(read: BillingRecord, fields?: Partial<BillingFailureFields>): BillingRecord & BillingFailureFields {
    return { ...nextVersion(read), ...nextFailure(read, NOW, 'The payment processor is unavailable.', (d) => formatInstant(d)), ...fields };
  }

  async function historyCount(userId: string) {
    const out = await db.client.send(
      new QueryCommand({
        TableName: db.tables.billingActivityHistory,
        KeyConditionExpression: 'user_id = :u',
        ExpressionAttributeValues: { ':u': { S: userId } },
        ConsistentRead: true,
      }),
    );
    return out.Count ?? 0;
  }

  it('saves a first failure with its audit row and touches nothing else', async () => {
    const read = await created({ payment_error: 'keep me', billing_status: 'FAILED', payment_attempts: 2 });
    const after = failed(read, { payment_error: 'must not be written', amount_cents: 1 } as Partial<BillingFailureFields>);
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(true);
    const stored = (await store.get(read))!;
    expect(stored).toMatchObject({
      billing_failed_for: dueKey(read),
      billing_failure_count: 1,
      billing_failed_at: formatInstant(NOW),
      billing_next_attempt_at: formatInstant(new Date(NOW.getTime() + FIRST_WAIT)),
      billing_last_error: 'The payment processor is unavailable.',
      last_run_date: after.last_run_date,
      version: read.version + 1,
      payment_error: 'keep me',
      amount_cents: read.amount_cents,
      billing_status: 'FAILED',
    });
    expect(await historyCount(read.user_id)).toBe(2);
  });

  it('counts on from a live failure when the count proof holds', async () => {
    const read0 = await created();
    const first = failed(read0);
    await store.recordBillingFailure(read0, first, historyOf(first));
    const read1 = (await store.get(read0))!;
    const second = failed(read1);
    expect(second.billing_failure_count).toBe(2);
    expect(await store.recordBillingFailure(read1, second, historyOf(second))).toBe(true);
    expect((await store.get(read0))?.billing_failure_count).toBe(2);
  });

  it('refuses a stale version (the failure does not land, no audit row)', async () => {
    const read = await created();
    const moved = nextVersion(read, { payment_error: 'someone else wrote' });
    await store.commit({ writes: [{ kind: 'update', read, record: moved }], history: [historyOf(moved)] });
    const after = failed(read);
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(false);
    const stored = (await store.get(read))!;
    expect(stored.billing_failed_for).toBeUndefined();
    expect(stored.version).toBe(moved.version);
    expect(await historyCount(read.user_id)).toBe(2);
  });

  it('refuses a stale due key even at the same version (payment_attempts moved on)', async () => {
    const stored = await created({ payment_attempts: 1 });
    const staleRead = { ...stored, payment_attempts: 0 };
    const after = failed(staleRead);
    expect(await store.recordBillingFailure(staleRead, after, historyOf(after))).toBe(false);
    expect((await store.get(stored))?.billing_failed_for).toBeUndefined();
  });

  it('refuses when the record left PENDING/FAILED, even at the same version', async () => {
    const stored = await created({ billing_status: 'ACHSENT' });
    const staleRead = { ...stored, billing_status: 'PENDING' as const };
    const after = failed(staleRead);
    expect(await store.recordBillingFailure(staleRead, after, historyOf(after))).toBe(false);
  });

  it('refuses a stale count: the read saw count 1, the item holds count 2 for the same key', async () => {
    const base = makeRecord();
    const stored = await created({ billing_failed_for: dueKey(base), billing_failure_count: 2, billing_failed_at: formatInstant(NOW), billing_last_error: 'x', billing_next_attempt_at: formatInstant(NOW) });
    const staleRead = { ...stored, billing_failure_count: 1 };
    const after = failed(staleRead);
    expect(after.billing_failure_count).toBe(2);
    expect(await store.recordBillingFailure(staleRead, after, historyOf(after))).toBe(false);
    expect((await store.get(stored))?.billing_failure_count).toBe(2);
  });

  it('refuses a first failure when a live failure for that key appeared since the read', async () => {
    const stored = await created({ billing_failed_for: dueKey(makeRecord()), billing_failure_count: 1, billing_failed_at: formatInstant(NOW), billing_last_error: 'x' });
    const staleRead: BillingRecord = { ...stored, billing_failed_for: undefined, billing_failure_count: undefined };
    const after = failed(staleRead);
    expect(await store.recordBillingFailure(staleRead, after, historyOf(after))).toBe(false);
  });

  it('starts a new count when the saved failure is for older work (voided key)', async () => {
    const read = await created({ payment_attempts: 1, billing_failed_for: `${makeRecord().billing_date}#0`, billing_failure_count: 5, billing_failed_at: formatInstant(NOW), billing_last_error: 'old' });
    const after = failed(read);
    expect(after.billing_failure_count).toBe(1);
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(true);
    expect((await store.get(read))?.billing_failure_count).toBe(1);
  });

  it('removes billing_next_attempt_at when the failure parks', async () => {
    const read = await created({
      billing_failed_for: dueKey(makeRecord()),
      billing_failure_count: 7,
      billing_failed_at: formatInstant(NOW),
      billing_next_attempt_at: formatInstant(NOW),
      billing_last_error: 'x',
    });
    const after = failed(read);
    expect(after.billing_failure_count).toBe(8);
    expect(after.billing_next_attempt_at).toBeUndefined();
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(true);
    const raw = await db.client.send(
      new GetItemCommand({
        TableName: db.tables.billingActivity,
        Key: { user_id: { S: read.user_id }, billing_date: { S: read.billing_date } },
        ConsistentRead: true,
      }),
    );
    expect(raw.Item?.billing_next_attempt_at).toBeUndefined();
    expect(raw.Item?.billing_failure_count).toEqual({ N: '8' });
  });

  it('does not land when its audit row collides with an existing one', async () => {
    const read = await created();
    const after = { ...failed(read), last_run_date: read.last_run_date };
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(false);
    expect((await store.get(read))?.version).toBe(read.version);
  });

  it('never creates a record that does not exist', async () => {
    const read = makeRecord();
    const after = failed(read);
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(false);
    expect(await store.get(read)).toBeUndefined();
  });

  it('refuses a failure keyed to other work than the read', async () => {
    const read = await created();
    const after = failed(read, { billing_failed_for: 'other#1' });
    await expect(store.recordBillingFailure(read, after, historyOf({ ...after, last_run_date: freshStamp() }))).rejects.toThrow(/keyed/);
  });

  it('keeps the sparse failing index equal to the live predicate: in on a saved failure, out when the due work moves on', async () => {
    const listed = async () => {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await store.listFailing({ limit: 2, cursor });
        ids.push(...page.items.map((r) => r.subscription_id));
        cursor = page.next;
      } while (cursor);
      return ids;
    };
    const read = await created({ billing_status: 'PENDING', payment_attempts: 0 });
    expect(await listed()).not.toContain(read.subscription_id);
    const after = failed(read);
    expect(await store.recordBillingFailure(read, after, historyOf(after))).toBe(true);
    const raw = await db.client.send(new GetItemCommand({ TableName: db.tables.billingActivity, Key: { user_id: { S: read.user_id }, billing_date: { S: read.billing_date } } }));
    expect(raw.Item?.failing_shard?.S).toMatch(/^FAILING#\d+$/);
    expect(await listed()).toContain(read.subscription_id);

    // A write that carries the live failure forward keeps it listed.
    const stamped = nextVersion(after, { membership_event_id: 'evt-1' });
    await store.commit({ writes: [{ kind: 'update', read: after, record: stamped }], history: [historyOf(stamped)] });
    expect(await listed()).toContain(read.subscription_id);

    // A decline changes the due key: the stale failure fields stay, the index entry goes.
    const declined = nextVersion(stamped, { billing_status: 'FAILED', payment_attempts: 1 });
    await store.commit({ writes: [{ kind: 'update', read: stamped, record: declined }], history: [historyOf(declined)] });
    expect((await store.get(read))?.billing_failed_for).toBe(dueKey(read));
    expect(await listed()).not.toContain(read.subscription_id);
  });
});
