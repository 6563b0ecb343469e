import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

export interface DynamoConnection {
  readonly region: string;
  /** Set for DynamoDB Local; absent in AWS. */
  readonly endpoint?: string;
}

export function createDynamoClient(connection: DynamoConnection, extra: DynamoDBClientConfig = {}): DynamoDBClient {
  return new DynamoDBClient({
    region: connection.region,
    maxAttempts: 3,
    ...(connection.endpoint
      ? { endpoint: connection.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    ...extra,
  });
}
