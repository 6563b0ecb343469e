import type { CfnResource } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { FUNCTIONS } from '../../src/manifest/index.js';
import { DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS } from '../../src/runtime/config.js';
import { actionsOf, permissionsOf, referencedIds, resourcesOfType, synthBilling } from './support.js';

/**
 * DESIGN 15, least in each place: the unauthenticated balance webhook runs in a function of its
 * own, with a role that reaches only its claims, its queue and its secret, and a reserve that caps
 * what a flood can take; the api (the broadest role) no longer serves it.
 */

const prod = synthBilling({ stage: 'prod' });
const logicalId = (resource: { node: { defaultChild?: unknown } }) => prod.stateful.getLogicalId(resource.node.defaultChild as CfnResource);
const tableIds = Object.fromEntries(Object.entries(prod.stateful.tables).map(([id, table]) => [id, logicalId(table)]));
const secretIds = Object.fromEntries(Object.entries(prod.stateful.secrets).map(([id, secret]) => [id, logicalId(secret)]));
const queueIds = {
  collectionsStripe: logicalId(prod.stateful.collectionsStripe.queue),
  collectionsPayments: logicalId(prod.stateful.collectionsPayments.queue),
  balanceEvents: logicalId(prod.stateful.balanceEvents.queue),
  retryRuns: logicalId(prod.stateful.retryRuns.queue),
};
const fn = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === 'prod-billing-balance-webhook');

describe('balance-webhook function', () => {
  it('exists, with a reserved concurrency from its manifest', () => {
    expect(fn).toBeDefined();
    expect(fn!.Properties?.ReservedConcurrentExecutions).toBe(FUNCTIONS['balance-webhook'].reservedConcurrency);
    expect(FUNCTIONS['balance-webhook'].reservedConcurrency).toBeGreaterThan(0);
  });

  it('serves POST /webhooks/balance, and the api serves no webhook', () => {
    const routes = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::ApiGatewayV2::Route')).map((r) => r.Properties as { RouteKey: string; Target: unknown });
    const integrations = resourcesOfType(prod.statelessTemplate, 'AWS::ApiGatewayV2::Integration');
    const behind = (key: string) => {
      const target = JSON.stringify(routes.find((r) => r.RouteKey === key)!.Target);
      return JSON.stringify(integrations[/"Ref":"(\w+)"/.exec(target)![1]!]!.Properties?.IntegrationUri);
    };
    const functionIds = Object.entries(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function'));
    const idOf = (name: string) => functionIds.find(([, f]) => f.Properties?.FunctionName === name)![0];
    expect(behind('POST /webhooks/balance')).toContain(`"${idOf('prod-billing-balance-webhook')}"`);
    for (const key of routes.map((r) => r.RouteKey).filter((k) => k.startsWith('POST /webhooks/'))) {
      expect(behind(key)).not.toContain(`"${idOf('prod-billing-api')}"`);
    }
  });

  it('has a narrow role: its claims in stripe-events, the balance-events queue, its own secret; nothing else', () => {
    const { statements } = permissionsOf(prod.statelessTemplate, 'prod-billing-balance-webhook');
    const dynamo = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    expect(dynamo.flatMap((s) => referencedIds(s, tableIds))).toEqual(['stripeEvents']);
    expect(dynamo.flatMap(actionsOf).sort()).toEqual(['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    const sends = statements.filter((s) => actionsOf(s).includes('sqs:SendMessage'));
    expect(sends.flatMap((s) => referencedIds(s, queueIds))).toEqual(['balanceEvents']);
    const secrets = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('secretsmanager:')));
    expect(secrets.flatMap((s) => referencedIds(s, secretIds))).toEqual(['balanceWebhook']);
    expect(statements.flatMap(actionsOf).filter((a) => !/^(dynamodb|sqs|secretsmanager|logs):/.test(a))).toEqual([]);
  });

  it('leaves the api role neither the balance webhook secret nor the balance-events queue', () => {
    const { statements } = permissionsOf(prod.statelessTemplate, 'prod-billing-api');
    expect(statements.flatMap((s) => referencedIds(s, { balanceWebhook: secretIds.balanceWebhook! }))).toEqual([]);
    expect(statements.filter((s) => actionsOf(s).includes('sqs:SendMessage')).flatMap((s) => referencedIds(s, queueIds))).not.toContain('balanceEvents');
  });
});

describe('daily cap setting', () => {
  it('gives PERSON_DAILY_DEBIT_LIMIT_CENTS (the default) to the api and the retry-run-worker, the paths people start, and no other function', () => {
    const functions = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function'));
    const withCap = functions.filter((f) => (f.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.PERSON_DAILY_DEBIT_LIMIT_CENTS !== undefined);
    expect(withCap.map((f) => f.Properties?.FunctionName).sort()).toEqual(['prod-billing-api', 'prod-billing-retry-run-worker']);
    for (const f of withCap) expect((f.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.PERSON_DAILY_DEBIT_LIMIT_CENTS).toBe(String(DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS));
  });
});
