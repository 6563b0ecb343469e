import { describe, expect, it } from 'vitest';
import type { CfnResource } from 'aws-cdk-lib';
import { HANDLER_NAMES } from '../../lib/handlers.js';
import type { TableId } from '../../src/adapters/dynamodb/table-definitions.js';
import { FUNCTIONS, queuesOf, type FunctionManifest, type TableGrant } from '../../src/manifest/index.js';
import { actionsOf, permissionsOf, referencedIds, synthBilling } from './support.js';

/**
 * Each execution role is exactly what the function's manifest grants (src/manifest/functions.ts):
 * every statement of the role is accounted for by one manifest entry (a table grant, a queue it
 * sends to, its secrets, its trigger's event source, its log group) and every grant has its
 * statement. The grant → IAM action mapping is restated here, not imported from lib/access.ts.
 */

const prod = synthBilling({ stage: 'prod' });
const logicalId = (resource: { node: { defaultChild?: unknown } }) =>
  prod.stateful.getLogicalId(resource.node.defaultChild as CfnResource);

const tableIds = Object.fromEntries(
  Object.entries(prod.stateful.tables).map(([id, table]) => [id, logicalId(table)]),
) as Record<TableId, string>;
const queueIds = {
  collectionsStripe: logicalId(prod.stateful.collectionsStripe.queue),
  collectionsPayments: logicalId(prod.stateful.collectionsPayments.queue),
  balanceEvents: logicalId(prod.stateful.balanceEvents.queue),
  retryRuns: logicalId(prod.stateful.retryRuns.queue),
  reconciliation: logicalId(prod.stateful.reconciliation.queue),
  membershipsFailures: logicalId(prod.stateful.membershipsFailures),
  eventsFailures: logicalId(prod.stateful.eventsFailures),
};
const busIds = { billing: logicalId(prod.stateful.eventBus) };
/** The on-failure destination of each stream trigger's mapping. */
const ON_FAILURE = { kinesis: 'membershipsFailures', 'dynamodb-stream': 'eventsFailures' } as const;
/** What Lambda's DynamoDB stream event source needs (CDK's grantStreamRead); ListStreams takes no resource narrower than *. */
const STREAM_READ = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'];
const isStreamStatement = (s: { Action: string | string[]; Resource: unknown }) =>
  JSON.stringify(s.Resource).includes('StreamArn') || (actionsOf(s as never).length === 1 && actionsOf(s as never)[0] === 'dynamodb:ListStreams');
const secretIds = Object.fromEntries(
  Object.entries(prod.stateful.secrets).map(([id, secret]) => [id, logicalId(secret)]),
) as Record<string, string>;
const streamId = logicalId(prod.stateful.membershipsStream);

const IAM_READ = { get: 'dynamodb:GetItem', query: 'dynamodb:Query' } as const;
const IAM_WRITE = { put: 'dynamodb:PutItem', update: 'dynamodb:UpdateItem' } as const;
/** What Lambda's SQS event source needs on the queue it polls (CDK grants it with the mapping). */
const SQS_CONSUME = ['sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:ReceiveMessage'];

function expectedTableAccess(grant: TableGrant): { actions: string[]; indexes: string[] } {
  return {
    actions: [...(grant.read ?? []).map((a) => IAM_READ[a]), ...(grant.write ?? []).map((a) => IAM_WRITE[a]), ...(grant.delete ? ['dynamodb:DeleteItem'] : [])].sort(),
    indexes: [...(grant.indexes ?? [])].sort(),
  };
}

describe.each(HANDLER_NAMES)('%s execution role', (name) => {
  const { role, statements } = permissionsOf(prod.statelessTemplate, `prod-billing-${name}`);
  const manifest: FunctionManifest = FUNCTIONS[name];

  it('has no AWS managed policy and no inline policy outside its own', () => {
    expect(role.Properties?.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties?.Policies).toBeUndefined();
  });

  it('allows no wildcard action and no wildcard resource (but ListStreams, which has no other, for a DynamoDB stream consumer)', () => {
    for (const statement of statements) {
      expect(statement.Effect).toBe('Allow');
      for (const action of actionsOf(statement)) expect(action).not.toContain('*');
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      for (const resource of resources) {
        if (typeof resource !== 'string' || !resource.includes('*')) continue;
        expect(manifest.trigger.kind).toBe('dynamodb-stream');
        expect([resource, ...actionsOf(statement)]).toEqual(['*', 'dynamodb:ListStreams']);
      }
    }
  });

  it('reaches exactly the tables and indexes its manifest grants, with exactly the granted actions', () => {
    const actual: Record<string, { actions: Set<string>; indexes: Set<string> }> = {};
    for (const statement of statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')) && !isStreamStatement(s))) {
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      for (const resource of resources) {
        const [tableId] = referencedIds({ ...statement, Resource: resource }, tableIds);
        expect(tableId, `statement ${statement.Sid} names a known table`).toBeDefined();
        const entry = (actual[tableId!] ??= { actions: new Set(), indexes: new Set() });
        const index = /\/index\/([^"]+)"/.exec(JSON.stringify(resource))?.[1];
        if (index) {
          expect(actionsOf(statement)).toEqual(['dynamodb:Query']);
          entry.indexes.add(index);
        } else {
          for (const action of actionsOf(statement)) entry.actions.add(action);
        }
      }
    }
    const normalized = Object.fromEntries(
      Object.entries(actual).map(([id, { actions, indexes }]) => [id, { actions: [...actions].sort(), indexes: [...indexes].sort() }]),
    );
    expect(normalized).toEqual(
      Object.fromEntries(Object.entries(manifest.tables).map(([id, grant]) => [id, expectedTableAccess(grant as TableGrant)])),
    );
  });

  it('queries a base table whose grant names partitions only under a dynamodb:LeadingKeys condition on exactly them', () => {
    for (const [tableId, grant] of Object.entries(manifest.tables) as [TableId, TableGrant][]) {
      const onTable = statements.filter((s) => !isStreamStatement(s) && actionsOf(s).includes('dynamodb:Query') && referencedIds(s, tableIds).includes(tableId) && !/\/index\//.test(JSON.stringify(s.Resource)));
      if (!grant.queryPartitions) {
        for (const statement of onTable) expect((statement as { Condition?: unknown }).Condition).toBeUndefined();
        continue;
      }
      expect(onTable).toHaveLength(1);
      expect((onTable[0] as { Condition?: unknown }).Condition).toEqual({ 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [...grant.queryPartitions] } });
      expect(actionsOf(onTable[0]!)).toEqual(['dynamodb:Query']);
    }
  });

  it('sends only to the queues its manifest names (and, for a Kinesis consumer, its on-failure queue)', () => {
    const sends = statements.filter((s) => actionsOf(s).includes('sqs:SendMessage'));
    const expected: string[] = [...(manifest.sendsTo ?? [])];
    const trigger = manifest.trigger;
    if (trigger.kind === 'kinesis' || trigger.kind === 'dynamodb-stream') expected.push(ON_FAILURE[trigger.kind]);
    expect(sends.flatMap((s) => referencedIds(s, queueIds)).sort()).toEqual(expected.sort());
    for (const statement of sends) {
      // The on-failure destination too: Lambda only sends to it (no attribute reads, as CDK's SqsDlq would grant).
      // A queue whose depth the function reads (the paced planner's) adds GetQueueAttributes, on that queue only.
      const readsDepth = referencedIds(statement, queueIds).every((id) => (manifest.readsDepthOf ?? []).includes(id as never));
      expect(actionsOf(statement).sort()).toEqual(readsDepth ? ['sqs:GetQueueAttributes', 'sqs:SendMessage'] : ['sqs:SendMessage']);
    }
  });

  it('consumes only the queues its trigger names (and the one it also consumes)', () => {
    const consumes = statements.filter((s) => actionsOf(s).includes('sqs:ReceiveMessage'));
    const expected = [...queuesOf(manifest.trigger), ...(manifest.alsoConsumes ? queuesOf(manifest.alsoConsumes) : [])];
    expect(consumes.flatMap((s) => referencedIds(s, queueIds)).sort()).toEqual(expected.sort());
    for (const statement of consumes) expect(actionsOf(statement).sort()).toEqual(SQS_CONSUME);
  });

  it('reads only its manifest secrets, and only their values', () => {
    const secretStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('secretsmanager:')));
    for (const statement of secretStatements) expect(actionsOf(statement)).toEqual(['secretsmanager:GetSecretValue']);
    expect(secretStatements.flatMap((s) => referencedIds(s, secretIds)).sort()).toEqual([...(manifest.secrets ?? [])].sort());
  });

  it(manifest.trigger.kind === 'kinesis' ? 'reads the stream its trigger names, read-only' : 'cannot read any stream', () => {
    const kinesis = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('kinesis:')));
    expect(kinesis.length > 0).toBe(manifest.trigger.kind === 'kinesis');
    for (const statement of kinesis) {
      expect(JSON.stringify(statement.Resource)).toContain(streamId);
      expect(actionsOf(statement).every((a) => !/Put|Create|Delete|Update|Merge|Split|Tag|Register/.test(a))).toBe(true);
    }
  });

  it(manifest.trigger.kind === 'dynamodb-stream' ? "reads its trigger table's stream, read-only, and not the table" : 'cannot read any DynamoDB stream', () => {
    const stream = statements.filter(isStreamStatement);
    const trigger = manifest.trigger;
    if (trigger.kind !== 'dynamodb-stream') {
      expect(stream).toEqual([]);
      return;
    }
    expect(stream.flatMap(actionsOf).sort()).toEqual([...STREAM_READ, 'dynamodb:ListStreams'].sort());
    for (const statement of stream.filter((s) => actionsOf(s).includes('dynamodb:GetRecords'))) {
      expect(referencedIds(statement, tableIds)).toEqual([trigger.table]);
      expect(JSON.stringify(statement.Resource)).toContain('StreamArn');
    }
  });

  it('puts events only on the buses its manifest names', () => {
    const puts = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('events:')));
    for (const statement of puts) expect(actionsOf(statement)).toEqual(['events:PutEvents']);
    expect(puts.flatMap((s) => referencedIds(s, busIds)).sort()).toEqual([...(manifest.putsEventsOn ?? [])].sort());
  });

  it('may write only to its own log group', () => {
    const logStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
    expect(logStatements).toHaveLength(1);
    expect(actionsOf(logStatements[0]!).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
    expect(JSON.stringify(logStatements[0]!.Resource)).toMatch(/"Fn::GetAtt":\["\w+LogGroup\w+","Arn"\]/);
  });

  it('has no statement the manifest does not account for', () => {
    const unaccounted = statements.filter(
      (s) => !actionsOf(s).some((a) => /^(dynamodb|secretsmanager|kinesis|logs):/.test(a) || a === 'sqs:SendMessage' || a === 'sqs:ReceiveMessage' || a === 'events:PutEvents'),
    );
    expect(unaccounted).toEqual([]);
  });
});
