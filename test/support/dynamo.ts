import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoClient } from '../../src/adapters/dynamodb/client.js';
import { createDocumentClient } from '../../src/adapters/dynamodb/document-client.js';
import { createAllTables } from '../../src/adapters/dynamodb/create-tables.js';
import { tableNamesFor, type TableNames } from '../../src/adapters/dynamodb/table-definitions.js';

export interface TestDynamo {
  readonly endpoint: string;
  readonly client: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  readonly tables: TableNames;
}

/**
 * Fresh, isolated tables (unique prefix) on the run's shared DynamoDB Local. Call once per test file.
 * Without the history table's stream unless asked (`streams: true`, the events-publisher tests):
 * DynamoDB Local keeps every stream record written on it, across tables, and every later write
 * slows down as they pile up (createAllTables), so one run's files would slow each other down.
 */
export async function createTestDynamo(label = 't', options: { readonly streams?: boolean } = {}): Promise<TestDynamo> {
  const endpoint = inject('dynamoEndpoint');
  const client = createDynamoClient({ region: 'local', endpoint });
  const doc = createDocumentClient(client);
  const tables = tableNamesFor(`${label}-${randomUUID().slice(0, 8)}`);
  await createAllTables(client, tables, { streams: options.streams === true });
  return { endpoint, client, doc, tables };
}
