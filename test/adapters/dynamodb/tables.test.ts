import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { createAllTables, createTableInput } from '../../../src/adapters/dynamodb/create-tables.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { allTables } from '../../../src/adapters/dynamodb/table-definitions.js';
import { createTestDynamo, type TestDynamo } from '../../support/dynamo.js';

describe('table definitions on DynamoDB Local', () => {
  let db: TestDynamo;
  beforeAll(async () => {
    db = await createTestDynamo('tables');
  });

  it('creates every table with the defined keys and GSIs', async () => {
    for (const [id, def] of Object.entries(allTables)) {
      const { Table } = await db.client.send(new DescribeTableCommand({ TableName: db.tables[id as keyof typeof allTables] }));
      expect(Table?.KeySchema?.map((k) => k.AttributeName)).toEqual([def.partitionKey.name, ...(def.sortKey ? [def.sortKey.name] : [])]);
      expect((Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName).sort()).toEqual(
        def.globalSecondaryIndexes.map((g) => g.indexName).sort(),
      );
    }
  });

  it('enables TTL on the locks and stripe-events tables', async () => {
    for (const id of ['locks', 'stripeEvents'] as const) {
      const out = await db.client.send(new DescribeTimeToLiveCommand({ TableName: db.tables[id] }));
      expect(out.TimeToLiveDescription?.AttributeName).toBe('expires_at');
      expect(out.TimeToLiveDescription?.TimeToLiveStatus).toBe('ENABLED');
    }
  });
});

describe('tables kept from an earlier run', () => {
  it('get the indexes added to the definitions since they were created', async () => {
    const db = await createTestDynamo('tables-old');
    const old = createTableInput(allTables.billingActivity, `${db.tables.billingActivity}-old`);
    old.GlobalSecondaryIndexes = old.GlobalSecondaryIndexes!.filter((g) => g.IndexName !== 'failing-index');
    old.AttributeDefinitions = old.AttributeDefinitions!.filter((a) => a.AttributeName !== 'failing_shard' && a.AttributeName !== 'billing_failed_at');
    await db.client.send(new CreateTableCommand(old));
    await createAllTables(db.client, { ...db.tables, billingActivity: old.TableName! });
    const { Table } = await db.client.send(new DescribeTableCommand({ TableName: old.TableName }));
    expect((Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName).sort()).toEqual(allTables.billingActivity.globalSecondaryIndexes.map((g) => g.indexName).sort());
    expect((Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName)).toContain('failing-index');
  });
});
