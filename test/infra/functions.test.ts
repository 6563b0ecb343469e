import { App } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { parseRateMinutes, readBillingAppConfig } from '../../lib/config.js';
import { HANDLER_NAMES } from '../../lib/handlers.js';
import { allTables } from '../../src/adapters/dynamodb/table-definitions.js';
import { DEFAULT_MAX_PAYMENT_CENTS } from '../../src/runtime/config.js';
import { environmentOf, FUNCTIONS, type FunctionManifest, tablesOf } from '../../src/manifest/index.js';
import { newBillingApp, resourcesOfType, synthBilling } from './support.js';

const prod = synthBilling({ stage: 'prod', paymentsApiUrl: 'https://payments.test', accountsApiUrl: 'https://accounts.test' });
// The billing handlers; CDK's BucketDeployment provider (it uploads the operator console at deploy time) is not one.
const functions = Object.entries(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function')).filter(([id]) => !id.startsWith('CustomCDKBucketDeployment'));
const functionNamed = (name: string) => {
  const found = functions.find(([, f]) => f.Properties?.FunctionName === name);
  if (!found) throw new Error(`no function ${name}`);
  return { logicalId: found[0], props: found[1].Properties as Record<string, any> };
};
const statefulQueue = (name: string) =>
  Object.entries(resourcesOfType(prod.statefulTemplate, 'AWS::SQS::Queue')).find(([, q]) => q.Properties?.QueueName === name)!;

describe('Lambda functions', () => {
  it('are the handlers of the manifest, named {stage}-billing-{handler}', () => {
    expect(functions.map(([, f]) => f.Properties?.FunctionName).sort()).toEqual(HANDLER_NAMES.map((n) => `prod-billing-${n}`).sort());
  });

  describe.each(HANDLER_NAMES)('%s', (name) => {
    const fn = functionNamed(`prod-billing-${name}`);

    it('runs the newest Node.js runtime on arm64 with a bounded timeout', () => {
      expect(fn.props.Runtime).toBe('nodejs24.x');
      expect(fn.props.Architectures).toEqual(['arm64']);
      expect(fn.props.Handler).toBe('index.handler');
      expect(fn.props.Timeout).toBeGreaterThan(3);
      expect(fn.props.Timeout).toBeLessThanOrEqual(300);
    });

    it('logs to its own log group with a retention', () => {
      const logGroupId = fn.props.LoggingConfig.LogGroup.Ref as string;
      const logGroup = prod.statelessTemplate.toJSON().Resources[logGroupId];
      expect(logGroup.Properties).toMatchObject({ LogGroupName: `/aws/lambda/prod-billing-${name}`, RetentionInDays: 90 });
    });

    it('gets exactly the configuration its manifest names: base settings, its tables, the queues it sends to, its services and secret ARNs', () => {
      const env = fn.props.Environment.Variables as Record<string, unknown>;
      const manifest: FunctionManifest = FUNCTIONS[name];
      expect(env).toMatchObject({ STAGE: 'prod', DYNAMO_REGION: { Ref: 'AWS::Region' }, STATUS_SHARD_COUNT: '16', PAYMENT_SHARD_COUNT: '8' });
      const { variables, secrets } = environmentOf(manifest);
      const expected = ['STAGE', 'DYNAMO_REGION', 'STATUS_SHARD_COUNT', 'PAYMENT_SHARD_COUNT', 'NODE_OPTIONS', ...variables, ...secrets.map((s) => `${s}_ARN`)];
      expect(Object.keys(env).sort()).toEqual([...new Set(expected)].sort());
      for (const id of tablesOf(manifest)) expect(env[allTables[id].envVar]).toBeDefined();
      if (manifest.services?.includes('payments')) expect(env.PAYMENTS_API_URL).toBe('https://payments.test');
      if (manifest.services?.includes('accounts')) expect(env.ACCOUNTS_API_URL).toBe('https://accounts.test');
      // The payment maximum, on exactly the functions that create payments from outside input.
      expect(env.MAX_PAYMENT_CENTS).toBe(manifest.settings?.includes('MAX_PAYMENT_CENTS') ? String(DEFAULT_MAX_PAYMENT_CENTS) : undefined);
      // STRIPE_API_KEY_ARN is the name src/runtime/secrets.ts reads; a reference to the secret resource, never a literal value.
      for (const secretVar of secrets.map((s) => `${s}_ARN`)) expect(JSON.stringify(env[secretVar])).toMatch(/Fn::ImportValue.*Secret/);
    });
  });

  it('turns source maps on at run time', () => {
    for (const [, f] of functions) {
      expect((f.Properties as any).Environment.Variables.NODE_OPTIONS).toBe('--enable-source-maps');
    }
  });
});

describe('SQS event sources', () => {
  it.each([
    ['batch-worker', 'prod-collections-stripe'],
    ['batch-worker', 'prod-collections-payments'],
    ['webhook-balance-worker', 'prod-balance-events'],
    ['retry-run-worker', 'prod-retry-runs'],
  ])('%s consumes %s with partial batch failures, and the queue outlasts six function timeouts', (handler, queueName) => {
    const fn = functionNamed(`prod-billing-${handler}`);
    const [queueLogicalId, queue] = statefulQueue(queueName);
    prod.statelessTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fn.logicalId },
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp(queueLogicalId) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
    });
    expect(queue.Properties?.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.props.Timeout);
  });

  it('reconciliation-job consumes its continuations one message at a time, beside its daily schedule, and may send to that queue', () => {
    const fn = functionNamed('prod-billing-reconciliation-job');
    const [queueLogicalId, queue] = statefulQueue('prod-reconciliation');
    prod.statelessTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fn.logicalId },
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp(queueLogicalId) },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 1,
    });
    expect(queue.Properties?.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.props.Timeout);
    prod.statelessTemplate.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'cron(0 6 * * ? *)' });
    expect(fn.props.Environment.Variables.RECONCILIATION_QUEUE_URL).toBeDefined();
  });
});

describe('Kinesis event source', () => {
  it('feeds memberships-consumer from TRIM_HORIZON, bisecting, bounded, with an SQS on-failure destination', () => {
    const fn = functionNamed('prod-billing-memberships-consumer');
    const [failuresLogicalId] = statefulQueue('prod-memberships-failures');
    const mappings = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::EventSourceMapping')).filter(
      (m) => JSON.stringify(m.Properties?.FunctionName) === JSON.stringify({ Ref: fn.logicalId }),
    );
    expect(mappings).toHaveLength(1);
    const props = mappings[0]!.Properties as Record<string, any>;
    expect(JSON.stringify(props.EventSourceArn)).toContain('MembershipsStream');
    expect(props).toMatchObject({
      StartingPosition: 'TRIM_HORIZON',
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BisectBatchOnFunctionError: true,
    });
    expect(props.MaximumRetryAttempts).toBeGreaterThan(0);
    expect(props.MaximumRetryAttempts).toBeLessThanOrEqual(20);
    expect(props.MaximumRecordAgeInSeconds).toBeGreaterThan(0);
    expect(props.MaximumRecordAgeInSeconds).toBeLessThanOrEqual(7 * 24 * 3600);
    expect(JSON.stringify(props.DestinationConfig.OnFailure.Destination)).toContain(failuresLogicalId);
  });
});

describe('collections schedule', () => {
  it('runs collections-job every 15 minutes by default', () => {
    const fn = functionNamed('prod-billing-collections-job');
    prod.statelessTemplate.hasResourceProperties('AWS::Events::Rule', {
      Name: 'prod-collections-schedule',
      ScheduleExpression: 'rate(15 minutes)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fn.logicalId, 'Arn'] } })],
    });
  });

  it('takes its rate from the collectionsRate context', () => {
    const custom = synthBilling({ stage: 'qa', collectionsRate: '10 minutes' });
    custom.statelessTemplate.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(10 minutes)' });
  });

  it('bounds the interval at synth to [the planner timeout + margin, 900 s] (DESIGN 13)', () => {
    expect(() => synthBilling({ stage: 'qa', collectionsRate: '1 hour' })).toThrow(/at most 900 s/);
    expect(() => synthBilling({ stage: 'qa', collectionsRate: '5 minutes' })).toThrow(/timeout plus/);
  });
});

describe('app configuration', () => {
  it('defaults the stage to dev and the rate to 15 minutes', () => {
    const { config } = newBillingApp();
    expect(config).toMatchObject({ stage: 'dev', collectionsRateMinutes: 15 });
  });

  it.each([
    [5, 5],
    ['30', 30],
    ['10 minutes', 10],
    ['2 hours', 120],
  ])('reads collectionsRate %j as %i minutes', (value, minutes) => {
    expect(parseRateMinutes(value)).toBe(minutes);
  });

  it.each(['0', 'soon', '1.5', -3])('refuses collectionsRate %j', (value) => {
    expect(() => parseRateMinutes(value)).toThrow(/collectionsRate/);
  });

  it('refuses a stage name that cannot prefix resource names', () => {
    const app = new App({ context: { stage: 'Prod_EU' } });
    expect(() => readBillingAppConfig(app.node)).toThrow(/stage/);
  });
});
