import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { allTables, type TableDefinition } from '../../src/adapters/dynamodb/table-definitions.js';
import { resourcesOfType, synthBilling } from './support.js';

const prod = synthBilling({ stage: 'prod' });
const dev = synthBilling({ stage: 'dev' });

type CfnTable = {
  Properties: {
    TableName: string;
    KeySchema: { AttributeName: string; KeyType: string }[];
    AttributeDefinitions: { AttributeName: string; AttributeType: string }[];
    GlobalSecondaryIndexes?: {
      IndexName: string;
      KeySchema: { AttributeName: string; KeyType: string }[];
      Projection: { ProjectionType: string };
    }[];
    TimeToLiveSpecification?: { AttributeName: string; Enabled: boolean };
    [key: string]: unknown;
  };
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};

function tableNamed(template: typeof prod.statefulTemplate, name: string): CfnTable {
  const table = Object.values(resourcesOfType(template, 'AWS::DynamoDB::Table')).find(
    (t) => t.Properties?.TableName === name,
  );
  if (!table) throw new Error(`no table ${name}`);
  return table as unknown as CfnTable;
}

function keySchemaOf(partitionKey: { name: string }, sortKey?: { name: string }) {
  return [
    { AttributeName: partitionKey.name, KeyType: 'HASH' },
    ...(sortKey ? [{ AttributeName: sortKey.name, KeyType: 'RANGE' }] : []),
  ];
}

function attributeTypesOf(definition: TableDefinition): Record<string, string> {
  const types: Record<string, string> = {};
  for (const key of [definition.partitionKey, definition.sortKey, ...definition.globalSecondaryIndexes.flatMap((i) => [i.partitionKey, i.sortKey])]) {
    if (key) types[key.name] = key.type;
  }
  return types;
}

describe('DynamoDB tables', () => {
  it('creates exactly the five tables of table-definitions, named {stage}-{baseName}', () => {
    const names = Object.values(resourcesOfType(prod.statefulTemplate, 'AWS::DynamoDB::Table')).map((t) => t.Properties?.TableName);
    expect(names.sort()).toEqual(Object.values(allTables).map((d) => `prod-${d.baseName}`).sort());
  });

  describe.each(Object.values(allTables).map((d) => [d.baseName, d] as const))('%s', (baseName, definition) => {
    const table = tableNamed(prod.statefulTemplate, `prod-${baseName}`);

    it('has the key schema of its definition', () => {
      expect(table.Properties.KeySchema).toEqual(keySchemaOf(definition.partitionKey, definition.sortKey));
    });

    it('declares each key attribute with the type of its definition', () => {
      const declared = Object.fromEntries(table.Properties.AttributeDefinitions.map((a) => [a.AttributeName, a.AttributeType]));
      expect(declared).toEqual(attributeTypesOf(definition));
    });

    it('has exactly the GSIs of its definition, projecting ALL', () => {
      const indexes = (table.Properties.GlobalSecondaryIndexes ?? []).map((index) => ({
        name: index.IndexName,
        keys: index.KeySchema,
        projection: index.Projection.ProjectionType,
      }));
      expect(indexes).toEqual(
        definition.globalSecondaryIndexes.map((index) => ({
          name: index.indexName,
          keys: keySchemaOf(index.partitionKey, index.sortKey),
          projection: 'ALL',
        })),
      );
    });

    it(definition.timeToLiveAttribute ? `expires items on ${definition.timeToLiveAttribute}` : 'has no TTL', () => {
      expect(table.Properties.TimeToLiveSpecification).toEqual(
        definition.timeToLiveAttribute ? { AttributeName: definition.timeToLiveAttribute, Enabled: true } : undefined,
      );
    });

    // SSEEnabled without a key id is KMS with the AWS managed key, aws/dynamodb.
    it('is on-demand, point-in-time recoverable and encrypted with the AWS managed KMS key', () => {
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
      });
    });

    it('is deletion-protected and retained outside dev', () => {
      expect(table.Properties.DeletionProtectionEnabled).toBe(true);
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.UpdateReplacePolicy).toBe('Retain');
    });

    it('may be destroyed in dev', () => {
      const devTable = tableNamed(dev.statefulTemplate, `dev-${baseName}`);
      expect(devTable.Properties.DeletionProtectionEnabled).toBe(false);
      expect(devTable.DeletionPolicy).toBe('Delete');
    });
  });
});

describe('memberships stream', () => {
  it('is named for the stage, encrypted with the AWS managed key and retained outside dev', () => {
    prod.statefulTemplate.hasResource('AWS::Kinesis::Stream', {
      Properties: Match.objectLike({
        Name: 'prod-memberships',
        StreamEncryption: { EncryptionType: 'KMS', KeyId: 'alias/aws/kinesis' },
        StreamModeDetails: { StreamMode: 'ON_DEMAND' },
      }),
      DeletionPolicy: 'Retain',
    });
  });
});

describe('queues', () => {
  const queues = Object.values(resourcesOfType(prod.statefulTemplate, 'AWS::SQS::Queue'));
  const queueNamed = (name: string) => queues.find((q) => q.Properties?.QueueName === name)!;

  it('are the five work queues, their DLQs and the two stream failure queues (Kinesis, history stream), all stage-named', () => {
    expect(queues.map((q) => q.Properties?.QueueName).sort()).toEqual(
      ['prod-balance-events', 'prod-balance-events-dlq', 'prod-collections-stripe', 'prod-collections-stripe-dlq', 'prod-collections-payments', 'prod-collections-payments-dlq', 'prod-retry-runs', 'prod-retry-runs-dlq', 'prod-reconciliation', 'prod-reconciliation-dlq', 'prod-memberships-failures', 'prod-billing-events-failures'].sort(),
    );
  });

  it('are all encrypted with SSE-SQS and refuse requests without TLS', () => {
    for (const queue of queues) expect(queue.Properties?.SqsManagedSseEnabled).toBe(true);
    const policies = Object.values(resourcesOfType(prod.statefulTemplate, 'AWS::SQS::QueuePolicy'));
    expect(policies).toHaveLength(queues.length);
    for (const policy of policies) {
      expect(JSON.stringify(policy.Properties)).toContain('"aws:SecureTransport":"false"');
    }
  });

  it.each(['prod-collections-stripe', 'prod-collections-payments', 'prod-balance-events', 'prod-retry-runs', 'prod-reconciliation'])('%s redrives to its DLQ after 5 receives', (name) => {
    const redrive = queueNamed(name).Properties?.RedrivePolicy as { deadLetterTargetArn: unknown; maxReceiveCount: number };
    expect(redrive.maxReceiveCount).toBe(5);
    const dlqLogicalId = Object.entries(resourcesOfType(prod.statefulTemplate, 'AWS::SQS::Queue')).find(
      ([, q]) => q.Properties?.QueueName === `${name}-dlq`,
    )![0];
    expect(redrive.deadLetterTargetArn).toEqual({ 'Fn::GetAtt': [dlqLogicalId, 'Arn'] });
  });
});

describe('secrets', () => {
  it('creates the six secrets under billing/{stage}/ and retains them outside dev', () => {
    const secrets = Object.values(resourcesOfType(prod.statefulTemplate, 'AWS::SecretsManager::Secret'));
    expect(secrets.map((s) => s.Properties?.Name).sort()).toEqual(
      [
        'billing/prod/ach-webhook-secret',
        'billing/prod/balance-webhook-secret',
        'billing/prod/services-client-credentials',
        'billing/prod/stripe-api-key',
        'billing/prod/stripe-read-key',
        'billing/prod/stripe-webhook-secret',
      ],
    );
    for (const secret of secrets) {
      expect(secret.Properties?.SecretString).toBeUndefined();
      expect((secret as { DeletionPolicy?: string }).DeletionPolicy).toBe('Retain');
    }
  });
});
