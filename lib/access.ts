import * as iam from 'aws-cdk-lib/aws-iam';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { TableGrant } from '../src/manifest/index.js';

const READ_ACTIONS = { get: 'dynamodb:GetItem', query: 'dynamodb:Query' } as const;
const WRITE_ACTIONS = { put: 'dynamodb:PutItem', update: 'dynamodb:UpdateItem' } as const;

/**
 * The DynamoDB actions on a table's own items for a manifest grant, as explicit actions (no
 * wildcards). TransactWriteItems and TransactGetItems are not IAM actions: a transaction needs
 * the per-item action for each of its items, which is how the manifest writes them.
 */
export function tableActions(grant: TableGrant): string[] {
  return [
    ...(grant.read ?? []).map((action) => READ_ACTIONS[action]),
    ...(grant.write ?? []).map((action) => WRITE_ACTIONS[action]),
    ...(grant.delete ? ['dynamodb:DeleteItem'] : []),
  ];
}

export function tableStatements(sid: string, table: dynamodb.ITable, grant: TableGrant): iam.PolicyStatement[] {
  const statements: iam.PolicyStatement[] = [];
  const partitions = grant.queryPartitions;
  const actions = tableActions(grant).filter((action) => !(partitions && action === READ_ACTIONS.query));
  if (actions.length > 0) statements.push(new iam.PolicyStatement({ sid, actions, resources: [table.tableArn] }));
  if (partitions && (grant.read ?? []).includes('query')) {
    statements.push(
      new iam.PolicyStatement({
        sid: `${sid}Partitions`,
        actions: [READ_ACTIONS.query],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [...partitions] } },
      }),
    );
  }
  if (grant.indexes && grant.indexes.length > 0) {
    statements.push(
      new iam.PolicyStatement({
        sid: `${sid}Indexes`,
        actions: ['dynamodb:Query'],
        resources: grant.indexes.map((index) => `${table.tableArn}/index/${index}`),
      }),
    );
  }
  return statements;
}

export function sendMessageStatement(sid: string, queueArn: string, options: { readonly readsDepth?: boolean } = {}): iam.PolicyStatement {
  // sqs:SendMessage also authorizes SendMessageBatch; GetQueueAttributes reads the queue's depth (the paced planner's).
  return new iam.PolicyStatement({ sid, actions: options.readsDepth ? ['sqs:SendMessage', 'sqs:GetQueueAttributes'] : ['sqs:SendMessage'], resources: [queueArn] });
}

export function readSecretStatement(sid: string, secretArns: readonly string[]): iam.PolicyStatement {
  return new iam.PolicyStatement({ sid, actions: ['secretsmanager:GetSecretValue'], resources: [...secretArns] });
}
