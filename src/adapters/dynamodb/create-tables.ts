import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { allTables, type TableDefinition, type TableId, type TableNames } from './table-definitions.js';

/** The CreateTable input for a definition: on-demand, projection ALL, as the CDK stack provisions. */
export function createTableInput(def: TableDefinition, tableName: string): CreateTableCommandInput {
  const attributes = new Map<string, 'S' | 'N'>();
  const note = (k: { name: string; type: 'S' | 'N' } | undefined) => k && attributes.set(k.name, k.type);
  note(def.partitionKey);
  note(def.sortKey);
  for (const gsi of def.globalSecondaryIndexes) {
    note(gsi.partitionKey);
    note(gsi.sortKey);
  }
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
    KeySchema: [
      { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
      ...(def.sortKey ? [{ AttributeName: def.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    ...(def.globalSecondaryIndexes.length > 0
      ? {
          GlobalSecondaryIndexes: def.globalSecondaryIndexes.map((gsi) => ({
            IndexName: gsi.indexName,
            KeySchema: [
              { AttributeName: gsi.partitionKey.name, KeyType: 'HASH' as const },
              ...(gsi.sortKey ? [{ AttributeName: gsi.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: 'ALL' as const },
          })),
        }
      : {}),
    ...(def.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: def.stream } } : {}),
  };
}

/**
 * Creates every table (idempotent: an existing table is left as it is) and enables TTL where defined.
 * `streams: false` leaves the streams out: DynamoDB Local keeps every stream record it has ever
 * written, across tables (deleting the table does not free them), and its writes slow down as they
 * pile up (the bench measured 38 → 11 floor attempts/s over five 1,000-subscription runs; flat
 * without). Only for callers that never read a stream (the bench, and the tests that do not).
 */
export async function createAllTables(client: DynamoDBClient, names: TableNames, options: { streams?: boolean } = {}): Promise<void> {
  await Promise.all(
    (Object.entries(allTables) as [TableId, TableDefinition][]).map(async ([id, def]) => {
      const tableName = names[id];
      const { stream: _stream, ...withoutStream } = def;
      const input = createTableInput(options.streams === false ? withoutStream : def, tableName);
      try {
        await client.send(new CreateTableCommand(input));
      } catch (error) {
        if (!(error instanceof ResourceInUseException)) throw error;
        await addMissingIndexes(client, input);
        await enableMissingStream(client, input);
      }
      await waitForActive(client, tableName);
      if (def.timeToLiveAttribute) {
        try {
          await client.send(
            new UpdateTimeToLiveCommand({
              TableName: tableName,
              TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true },
            }),
          );
        } catch (error) {
          // Re-enabling TTL on a table that already has it is rejected; that is the state we want.
          if (!(error instanceof Error && /already enabled/i.test(error.message))) throw error;
        }
      }
    }),
  );
}

/**
 * A table kept from an earlier run (the local runtime's `.local/`) gets the indexes added since.
 * The backfill is not awaited: under load DynamoDB Local can keep a new index CREATING for long.
 */
async function addMissingIndexes(client: DynamoDBClient, input: CreateTableCommandInput): Promise<void> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: input.TableName }));
  const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
  for (const gsi of input.GlobalSecondaryIndexes ?? []) {
    if (present.has(gsi.IndexName)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: input.TableName,
        AttributeDefinitions: input.AttributeDefinitions,
        GlobalSecondaryIndexUpdates: [{ Create: { IndexName: gsi.IndexName, KeySchema: gsi.KeySchema, Projection: gsi.Projection } }],
      }),
    );
    await waitForActive(client, input.TableName!);
  }
}

/** A table kept from an earlier run gets the stream its definition has since gained. */
async function enableMissingStream(client: DynamoDBClient, input: CreateTableCommandInput): Promise<void> {
  if (!input.StreamSpecification) return;
  const { Table } = await client.send(new DescribeTableCommand({ TableName: input.TableName }));
  if (Table?.StreamSpecification?.StreamEnabled) return;
  await client.send(new UpdateTableCommand({ TableName: input.TableName, StreamSpecification: input.StreamSpecification }));
  await waitForActive(client, input.TableName!);
}

/** The ARN of a table's current stream (DynamoDB Local and AWS alike), or undefined when it has none. */
export async function latestStreamArn(client: DynamoDBClient, tableName: string): Promise<string | undefined> {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
  return Table?.StreamSpecification?.StreamEnabled ? Table.LatestStreamArn : undefined;
}

async function waitForActive(client: DynamoDBClient, tableName: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}
