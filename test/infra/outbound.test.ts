import { AwsSolutionsChecks } from 'cdk-nag';
import type { CfnResource } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../lib/handlers.js';
import { FUNCTIONS, type FunctionManifest } from '../../src/manifest/index.js';
import { actionsOf, newBillingApp, permissionsOf, referencedIds, resourcesOfType, synthBilling, TEST_SERVICE_CONTEXT } from './support.js';

/**
 * Outbound calls (docs/security.md): who reads which credential, where the functions that call our
 * own services run, and how narrow the stream consumers' roles are.
 */

process.env.CDK_VALIDATION = 'false';

const SUBNETS = ['subnet-0a1b2c3d4e5f60718', 'subnet-0f1e2d3c4b5a69788'];
const GROUPS = ['sg-0123456789abcdef0'];
const callsOwnServices = (manifest: FunctionManifest) => (manifest.services ?? []).some((id) => id === 'payments' || id === 'accounts');

const prod = synthBilling({ stage: 'prod' });
const logicalId = (resource: { node: { defaultChild?: unknown } }) => prod.stateful.getLogicalId(resource.node.defaultChild as CfnResource);
const secretIds = Object.fromEntries(Object.entries(prod.stateful.secrets).map(([id, secret]) => [id, logicalId(secret)])) as Record<string, string>;

function secretsReadBy(name: string): string[] {
  const { statements } = permissionsOf(prod.statelessTemplate, `prod-billing-${name}`);
  return statements.filter((s) => actionsOf(s).includes('secretsmanager:GetSecretValue')).flatMap((s) => referencedIds(s, secretIds)).sort();
}

function environmentOf(template: typeof prod.statelessTemplate, name: string): Record<string, unknown> {
  const fn = Object.values(resourcesOfType(template, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === `prod-billing-${name}`)!;
  return (fn.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
}

describe('credentials on the calls to the payments and accounts services', () => {
  it.each(HANDLER_NAMES)('%s gets the token endpoint and the client credentials exactly when it calls them', (name) => {
    const calls = callsOwnServices(FUNCTIONS[name]);
    const env = environmentOf(prod.statelessTemplate, name);
    expect(env.SERVICES_TOKEN_URL).toBe(calls ? TEST_SERVICE_CONTEXT.servicesTokenUrl : undefined);
    expect(env.SERVICES_CLIENT_CREDENTIALS_ARN !== undefined).toBe(calls);
    expect(secretsReadBy(name).includes('servicesClient')).toBe(calls);
    // Only the ARN travels in the environment, never a value.
    expect(JSON.stringify(env)).not.toMatch(/client_secret/);
  });
});

describe('restricted Stripe keys per need', () => {
  it('stripe-webhook, which only reads from Stripe, cannot read the charging key; it reads the read-only key', () => {
    expect(secretsReadBy('stripe-webhook')).toContain('stripeReadKey');
    expect(secretsReadBy('stripe-webhook')).not.toContain('stripeApiKey');
    expect(environmentOf(prod.statelessTemplate, 'stripe-webhook').STRIPE_API_KEY_ARN).toBeUndefined();
  });

  it('the collectors read the charging key and not the read-only one; reconciliation reads only the read-only one', () => {
    for (const name of ['batch-worker', 'webhook-balance-worker', 'memberships-consumer', 'api', 'retry-run-worker'] as const) {
      expect(secretsReadBy(name), name).toContain('stripeApiKey');
      expect(secretsReadBy(name), name).not.toContain('stripeReadKey');
    }
    expect(secretsReadBy('reconciliation-job')).toContain('stripeReadKey');
    expect(secretsReadBy('reconciliation-job')).not.toContain('stripeApiKey');
  });

  it('no function can read both Stripe keys, and a function that calls no Stripe reads neither', () => {
    for (const name of HANDLER_NAMES) {
      const read = secretsReadBy(name).filter((id) => id === 'stripeApiKey' || id === 'stripeReadKey');
      expect(read.length, name).toBe((FUNCTIONS[name] as FunctionManifest).services?.includes('stripe') ? 1 : 0);
    }
  });
});

describe('an optional VPC for private services', () => {
  const vpcFunctions = (template: typeof prod.statelessTemplate) =>
    Object.values(resourcesOfType(template, 'AWS::Lambda::Function'))
      .filter((f) => f.Properties?.VpcConfig !== undefined)
      .map((f) => String(f.Properties!.FunctionName).replace('prod-billing-', ''))
      .sort();

  it('without the setting, no function is in a VPC and no role may create network interfaces', () => {
    expect(vpcFunctions(prod.statelessTemplate)).toEqual([]);
    for (const name of HANDLER_NAMES) {
      expect(permissionsOf(prod.statelessTemplate, `prod-billing-${name}`).statements.flatMap(actionsOf).filter((a) => a.startsWith('ec2:'))).toEqual([]);
    }
  });

  it('with subnets and security groups, exactly the functions that call the services run there, with network-interface rights bound to them', () => {
    const inVpc = synthBilling({ stage: 'prod', vpcSubnetIds: SUBNETS.join(','), vpcSecurityGroupIds: GROUPS });
    expect(vpcFunctions(inVpc.statelessTemplate)).toEqual(HANDLER_NAMES.filter((name) => callsOwnServices(FUNCTIONS[name])).sort());
    inVpc.statelessTemplate.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'prod-billing-batch-worker', VpcConfig: { SubnetIds: SUBNETS, SecurityGroupIds: GROUPS } });
    for (const name of HANDLER_NAMES) {
      const { statements } = permissionsOf(inVpc.statelessTemplate, `prod-billing-${name}`);
      const ec2 = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('ec2:')));
      if (!callsOwnServices(FUNCTIONS[name])) {
        expect(ec2, name).toEqual([]);
        continue;
      }
      const create = ec2.find((s) => actionsOf(s).includes('ec2:CreateNetworkInterface'))!;
      const resources = JSON.stringify(create.Resource);
      for (const id of [...SUBNETS, ...GROUPS]) expect(resources).toContain(id);
      expect(resources).not.toMatch(/subnet\/\*|security-group\/\*/);
      const wildcard = ec2.filter((s) => JSON.stringify(s.Resource) === '"*"').flatMap(actionsOf).sort();
      expect(wildcard).toEqual(['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets']);
    }
  });

  it('stays clean under cdk-nag in a VPC, every acknowledgement with its reason', () => {
    const { app } = newBillingApp({ stage: 'prod', vpcSubnetIds: SUBNETS, vpcSecurityGroupIds: GROUPS });
    const report = new AwsSolutionsChecks(app).validateScope(app);
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('refuses half a setting or a malformed id at synth', () => {
    expect(() => newBillingApp({ stage: 'dev', vpcSubnetIds: SUBNETS.join(',') })).toThrow(/both vpcSubnetIds and vpcSecurityGroupIds, or neither/);
    expect(() => newBillingApp({ stage: 'dev', vpcSecurityGroupIds: GROUPS.join(',') })).toThrow(/both vpcSubnetIds and vpcSecurityGroupIds, or neither/);
    expect(() => newBillingApp({ stage: 'dev', vpcSubnetIds: 'subnet-1,vpc-123', vpcSecurityGroupIds: GROUPS.join(',') })).toThrow(/vpcSubnetIds/);
  });
});

describe('stream consumers narrower than CDK defaults', () => {
  it('memberships-consumer polls its stream with the standard-iterator actions only, and only sends to its on-failure queue', () => {
    const { statements } = permissionsOf(prod.statelessTemplate, 'prod-billing-memberships-consumer');
    const kinesis = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('kinesis:')));
    expect(kinesis).toHaveLength(1);
    expect(actionsOf(kinesis[0]!).sort()).toEqual(['kinesis:DescribeStream', 'kinesis:DescribeStreamSummary', 'kinesis:GetRecords', 'kinesis:GetShardIterator', 'kinesis:ListShards']);
    expect(JSON.stringify(kinesis[0]!.Resource)).toContain(logicalId(prod.stateful.membershipsStream));
    const sqs = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:')));
    expect(sqs.map((s) => actionsOf(s))).toEqual([['sqs:SendMessage']]);
    expect(statements.filter((s) => JSON.stringify(s.Resource) === '"*"')).toEqual([]);
  });

  it('events-publisher: its only * is dynamodb:ListStreams; it only puts on its bus and sends to its on-failure queue', () => {
    const { statements } = permissionsOf(prod.statelessTemplate, 'prod-billing-events-publisher');
    expect(statements.filter((s) => JSON.stringify(s.Resource) === '"*"').flatMap(actionsOf)).toEqual(['dynamodb:ListStreams']);
    expect(statements.filter((s) => actionsOf(s).some((a) => a.startsWith('sqs:'))).map((s) => actionsOf(s))).toEqual([['sqs:SendMessage']]);
    expect(statements.filter((s) => actionsOf(s).some((a) => a.startsWith('events:'))).map((s) => actionsOf(s))).toEqual([['events:PutEvents']]);
  });

  it('the Kinesis mapping is created after the role that lets it read the stream', () => {
    const mapping = Object.values(prod.statelessTemplate.findResources('AWS::Lambda::EventSourceMapping')).find((m) =>
      JSON.stringify(m.Properties?.EventSourceArn).includes(logicalId(prod.stateful.membershipsStream)),
    ) as { DependsOn?: string[] };
    expect(mapping.DependsOn?.some((id) => /MembershipsConsumerFunctionRoleDefaultPolicy/.test(id))).toBe(true);
  });
});
