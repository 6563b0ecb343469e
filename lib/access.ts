import * as iam from 'aws-cdk-lib/aws-iam';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';

/**
 * DynamoDB access levels, as explicit actions (no wildcards). TransactWriteItems and
 * TransactGetItems are not IAM actions: a transaction needs the per-item action for each of
 * its items (Put, Update, Delete, ConditionCheck; Get for reads).
 */
export const DYNAMODB_ACTIONS = {
  read: ['dynamodb:GetItem', 'dynamodb:Query'],
  /** Append-only audit rows: a conditional put, never an update or delete. */
  append: ['dynamodb:PutItem'],
  /** The audit table read back (history endpoint) and appended to. */
  readAppend: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem'],
  readWrite: [
    'dynamodb:GetItem',
    'dynamodb:Query',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
    'dynamodb:ConditionCheckItem',
  ],
} as const;

export type TableAccessLevel = keyof typeof DYNAMODB_ACTIONS;

export interface TableAccess {
  readonly level: TableAccessLevel;
  /** GSIs the function queries; each is granted by its own ARN, never `index/*`. */
  readonly indexes?: readonly string[];
}

export function tableStatements(sid: string, table: dynamodb.ITable, access: TableAccess): iam.PolicyStatement[] {
  const statements = [
    new iam.PolicyStatement({
      sid,
      actions: [...DYNAMODB_ACTIONS[access.level]],
      resources: [table.tableArn],
    }),
  ];
  if (access.indexes && access.indexes.length > 0) {
    statements.push(
      new iam.PolicyStatement({
        sid: `${sid}Indexes`,
        actions: ['dynamodb:Query'],
        resources: access.indexes.map((index) => `${table.tableArn}/index/${index}`),
      }),
    );
  }
  return statements;
}

export function sendMessageStatement(sid: string, queueArn: string): iam.PolicyStatement {
  // sqs:SendMessage also authorizes SendMessageBatch.
  return new iam.PolicyStatement({ sid, actions: ['sqs:SendMessage'], resources: [queueArn] });
}

export function readSecretStatement(sid: string, secretArns: readonly string[]): iam.PolicyStatement {
  return new iam.PolicyStatement({ sid, actions: ['secretsmanager:GetSecretValue'], resources: [...secretArns] });
}
