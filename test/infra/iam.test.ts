import { describe, expect, it } from 'vitest';
import type { CfnResource } from 'aws-cdk-lib';
import { HANDLER_NAMES, type HandlerName } from '../../lib/handlers.js';
import type { TableId } from '../../src/adapters/dynamodb/table-definitions.js';
import { actionsOf, permissionsOf, referencedIds, synthBilling } from './support.js';

const prod = synthBilling({ stage: 'prod' });
const logicalId = (resource: { node: { defaultChild?: unknown } }) =>
  prod.stateful.getLogicalId(resource.node.defaultChild as CfnResource);

const tableIds = Object.fromEntries(
  Object.entries(prod.stateful.tables).map(([id, table]) => [id, logicalId(table)]),
) as Record<TableId, string>;
const queueIds = {
  collections: logicalId(prod.stateful.collections.queue),
  balanceEvents: logicalId(prod.stateful.balanceEvents.queue),
  membershipsFailures: logicalId(prod.stateful.membershipsFailures),
};
const secretIds = Object.fromEntries(
  Object.entries(prod.stateful.secrets).map(([id, secret]) => [id, logicalId(secret)]),
) as Record<string, string>;

const READ = ['dynamodb:GetItem', 'dynamodb:Query'];
const WRITE = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'];
const READ_WRITE = [...READ, ...WRITE];
const APPEND = ['dynamodb:PutItem'];

interface Expected {
  tables: Partial<Record<TableId, { actions: string[]; indexes?: string[] }>>;
  sendsTo: (keyof typeof queueIds)[];
  secrets: string[];
}

/** Restated from the brief on purpose, not imported from lib/, so the test checks the stack. */
const EXPECTED: Record<HandlerName, Expected> = {
  'collections-job': {
    tables: { billingActivity: { actions: READ, indexes: ['status-index'] }, payments: { actions: READ, indexes: ['GSI2'] } },
    sendsTo: ['collections'],
    secrets: [],
  },
  'batch-worker': {
    tables: {
      billingActivity: { actions: READ_WRITE },
      billingActivityHistory: { actions: APPEND },
      locks: { actions: READ_WRITE },
      payments: { actions: READ_WRITE, indexes: ['GSI4'] },
    },
    sendsTo: [],
    secrets: ['stripeApiKey'],
  },
  'webhook-balance-worker': {
    tables: { billingActivity: { actions: READ_WRITE }, billingActivityHistory: { actions: APPEND }, locks: { actions: READ_WRITE } },
    sendsTo: [],
    secrets: ['stripeApiKey'],
  },
  'ach-handler': {
    tables: {
      billingActivity: { actions: READ_WRITE },
      billingActivityHistory: { actions: APPEND },
      payments: { actions: READ_WRITE },
    },
    sendsTo: [],
    secrets: ['achWebhook'],
  },
  'memberships-consumer': {
    tables: { billingActivity: { actions: READ_WRITE }, billingActivityHistory: { actions: APPEND }, locks: { actions: READ_WRITE } },
    sendsTo: ['membershipsFailures'],
    secrets: ['stripeApiKey'],
  },
  'stripe-webhook': {
    tables: {
      stripeEvents: { actions: READ_WRITE },
      billingActivity: { actions: READ_WRITE },
      billingActivityHistory: { actions: APPEND },
      locks: { actions: READ_WRITE },
    },
    sendsTo: [],
    secrets: ['stripeWebhook', 'stripeApiKey'],
  },
  'api': {
    tables: {
      billingActivity: { actions: READ_WRITE, indexes: ['subscription_id-index', 'status-index', 'failing-index', 'exceptions-index'] },
      billingActivityHistory: { actions: [...READ, ...APPEND], indexes: ['subscription_id-index'] },
      locks: { actions: READ_WRITE },
      payments: { actions: READ_WRITE, indexes: ['GSI1', 'GSI2', 'GSI3', 'GSI4'] },
    },
    sendsTo: ['balanceEvents'],
    secrets: ['stripeApiKey', 'balanceWebhook'],
  },
};

describe.each(HANDLER_NAMES)('%s execution role', (name) => {
  const { role, statements } = permissionsOf(prod.statelessTemplate, `prod-billing-${name}`);
  const expected = EXPECTED[name];

  it('has no AWS managed policy and no inline policy outside its own', () => {
    expect(role.Properties?.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties?.Policies).toBeUndefined();
  });

  it('allows no wildcard action and no wildcard resource', () => {
    for (const statement of statements) {
      expect(statement.Effect).toBe('Allow');
      for (const action of actionsOf(statement)) expect(action).not.toContain('*');
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      for (const resource of resources) {
        if (typeof resource === 'string') expect(resource).not.toContain('*');
      }
    }
  });

  it('reaches exactly the tables and indexes it uses, with exactly the expected actions', () => {
    const actual: Record<string, { actions: Set<string>; indexes: Set<string> }> = {};
    for (const statement of statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')))) {
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
      Object.entries(actual).map(([id, { actions, indexes }]) => [
        id,
        { actions: [...actions].sort(), indexes: [...indexes].sort() },
      ]),
    );
    expect(normalized).toEqual(
      Object.fromEntries(
        Object.entries(expected.tables).map(([id, access]) => [id, { actions: [...access.actions].sort(), indexes: [...(access.indexes ?? [])].sort() }]),
      ),
    );
  });

  it('sends only to the queues it feeds', () => {
    const sendsTo = statements
      .filter((s) => actionsOf(s).includes('sqs:SendMessage'))
      .flatMap((s) => referencedIds(s, queueIds));
    expect(sendsTo.sort()).toEqual([...expected.sendsTo].sort());
  });

  it('reads only its own secrets, and only their values', () => {
    const secretStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('secretsmanager:')));
    for (const statement of secretStatements) expect(actionsOf(statement)).toEqual(['secretsmanager:GetSecretValue']);
    expect(secretStatements.flatMap((s) => referencedIds(s, secretIds)).sort()).toEqual([...expected.secrets].sort());
  });

  it(name === 'memberships-consumer' ? 'reads the memberships stream' : 'cannot read the memberships stream', () => {
    const kinesis = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('kinesis:')));
    expect(kinesis.length > 0).toBe(name === 'memberships-consumer');
    for (const statement of kinesis) {
      expect(actionsOf(statement).every((a) => !/Put|Create|Delete|Update/.test(a))).toBe(true);
    }
  });

  it('may write only to its own log group', () => {
    const logStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
    expect(logStatements).toHaveLength(1);
    expect(actionsOf(logStatements[0]!).sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
    expect(JSON.stringify(logStatements[0]!.Resource)).toMatch(/"Fn::GetAtt":\["\w+LogGroup\w+","Arn"\]/);
  });
});
