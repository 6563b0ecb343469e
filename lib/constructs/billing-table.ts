import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { KeyAttribute, TableDefinition } from '../../src/adapters/dynamodb/table-definitions.js';

export interface BillingTableProps {
  readonly definition: TableDefinition;
  readonly tableName: string;
  /** Deletion protection and RETAIN; off only for disposable stages. */
  readonly retain: boolean;
}

/** One DynamoDB table built from its TableDefinition: keys, GSIs and TTL are never restated here. */
export function createBillingTable(scope: Construct, id: string, props: BillingTableProps): dynamodb.Table {
  const { definition, tableName, retain } = props;
  const table = new dynamodb.Table(scope, id, {
    tableName,
    partitionKey: toAttribute(definition.partitionKey),
    ...(definition.sortKey ? { sortKey: toAttribute(definition.sortKey) } : {}),
    ...(definition.timeToLiveAttribute ? { timeToLiveAttribute: definition.timeToLiveAttribute } : {}),
    ...(definition.stream ? { stream: STREAM_VIEW_TYPES[definition.stream] } : {}),
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    // The AWS managed key (aws/dynamodb): encrypted at rest, key use visible in CloudTrail,
    // and no key policy to grant to each function.
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    deletionProtection: retain,
    removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
  for (const index of definition.globalSecondaryIndexes) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: toAttribute(index.partitionKey),
      ...(index.sortKey ? { sortKey: toAttribute(index.sortKey) } : {}),
      projectionType: dynamodb.ProjectionType.ALL,
    });
  }
  return table;
}

const STREAM_VIEW_TYPES: Record<NonNullable<TableDefinition['stream']>, dynamodb.StreamViewType> = {
  NEW_IMAGE: dynamodb.StreamViewType.NEW_IMAGE,
};

function toAttribute(key: KeyAttribute): dynamodb.Attribute {
  return {
    name: key.name,
    type: key.type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER,
  };
}
