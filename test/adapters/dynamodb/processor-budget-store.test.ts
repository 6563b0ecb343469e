import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { budgetKeyOf, DynamoProcessorBudgetStore } from '../../../src/adapters/dynamodb/processor-budget-store.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';

describe('DynamoProcessorBudgetStore on DynamoDB Local', () => {
  let db: TestDynamo;
  let store: DynamoProcessorBudgetStore;
  let second = 1_900_000_000;
  beforeAll(async () => {
    db = await createTestDynamo('budget');
    store = new DynamoProcessorBudgetStore(db.client, db.tables.locks);
  });

  async function used(key: string): Promise<number | undefined> {
    const item = (await db.client.send(new GetItemCommand({ TableName: db.tables.locks, Key: { PartitionKey: { S: key } }, ConsistentRead: true }))).Item;
    return item?.used?.N === undefined ? undefined : Number(item.used.N);
  }

  it('leases a block of tokens in one item per processor and second, with a TTL', async () => {
    const s = ++second;
    expect(await store.lease('stripe', s, 10, 18)).toBe(10);
    expect(await used(budgetKeyOf('stripe', s))).toBe(10);
    expect(await used(budgetKeyOf('payments', s))).toBeUndefined();
    const item = (await db.client.send(new GetItemCommand({ TableName: db.tables.locks, Key: { PartitionKey: { S: budgetKeyOf('stripe', s) } } }))).Item;
    expect(Number(item?.expires_at?.N)).toBeGreaterThan(s);
  });

  it('grants what is left of the second when a block does not fit, and nothing once it is spent', async () => {
    const s = ++second;
    expect(await store.lease('payments', s, 10, 18)).toBe(10);
    expect(await store.lease('payments', s, 10, 18)).toBe(8);
    expect(await store.lease('payments', s, 1, 18)).toBe(0);
    expect(await used(budgetKeyOf('payments', s))).toBe(18);
    // The next second is a fresh item.
    expect(await store.lease('payments', s + 1, 5, 18)).toBe(5);
  });

  it('reserves the person share: a scheduled cap leaves it, a person cap may take it', async () => {
    const s = ++second;
    expect(await store.lease('stripe', s, 20, 18)).toBe(18);
    expect(await store.lease('stripe', s, 1, 18)).toBe(0);
    expect(await store.lease('stripe', s, 1, 20)).toBe(1);
    expect(await store.lease('stripe', s, 5, 20)).toBe(1);
    expect(await store.lease('stripe', s, 1, 20)).toBe(0);
  });

  it('never passes the cap under concurrent leases from many callers', async () => {
    const s = ++second;
    const grants = await Promise.all(Array.from({ length: 30 }, () => store.lease('stripe', s, 3, 18)));
    const total = grants.reduce((a, b) => a + b, 0);
    expect(total).toBeLessThanOrEqual(18);
    expect(await used(budgetKeyOf('stripe', s))).toBe(total);
  });

  it('adds throttled reports and answers their cumulative total', async () => {
    const before = await store.throttledTotal('payments');
    await store.reportThrottled('payments', 3);
    await store.reportThrottled('payments', 4);
    await store.reportThrottled('payments', 0);
    expect(await store.throttledTotal('payments')).toBe(before + 7);
  });
});
