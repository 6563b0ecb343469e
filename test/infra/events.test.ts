import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { allTables } from '../../src/adapters/dynamodb/table-definitions.js';
import { resourcesOfType, synthBilling } from './support.js';

/** Events out (docs/design.md section 11): the history stream, the bus and its archive, the publisher's mapping and its failure queue. */

const prod = synthBilling({ stage: 'prod' });
const dev = synthBilling({ stage: 'dev' });
const statefulId = (resource: { node: { defaultChild?: unknown } }) => prod.stateful.getLogicalId(resource.node.defaultChild as never);

describe('the history table stream', () => {
  it('is on billing-activity-history only, with new images', () => {
    const tables = Object.values(resourcesOfType(prod.statefulTemplate, 'AWS::DynamoDB::Table')).map((t) => t.Properties as Record<string, any>);
    const streams = Object.fromEntries(tables.map((t) => [t.TableName, t.StreamSpecification]));
    expect(streams).toEqual({
      'prod-billing-activity': undefined,
      'prod-billing-activity-history': { StreamViewType: 'NEW_IMAGE' },
      'prod-locks': undefined,
      'prod-payments': undefined,
      'prod-stripe-events': undefined,
    });
    expect(Object.values(allTables).filter((d) => d.stream).map((d) => d.baseName)).toEqual(['billing-activity-history']);
  });
});

describe('the billing bus', () => {
  it('is billing-<stage>, with an archive of every billing event (a year outside dev, 30 days in dev)', () => {
    prod.statefulTemplate.hasResourceProperties('AWS::Events::EventBus', { Name: 'billing-prod' });
    prod.statefulTemplate.hasResourceProperties('AWS::Events::Archive', {
      ArchiveName: 'billing-prod-archive',
      EventPattern: { source: ['billing'] },
      RetentionDays: 365,
      SourceArn: { 'Fn::GetAtt': [statefulId(prod.stateful.eventBus), 'Arn'] },
    });
    dev.statefulTemplate.hasResourceProperties('AWS::Events::Archive', { ArchiveName: 'billing-dev-archive', RetentionDays: 30 });
    expect(Object.keys(resourcesOfType(prod.statefulTemplate, 'AWS::Events::EventBus'))).toHaveLength(1);
  });

  it('is named by EVENT_BUS_NAME to the events-publisher and the reconciliation-job (its own events), and to no other function', () => {
    const functions = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function')).map((f) => f.Properties as Record<string, any>);
    const withBus = functions.filter((f) => f.Environment?.Variables?.EVENT_BUS_NAME !== undefined);
    expect(withBus.map((f) => f.FunctionName)).toEqual(['prod-billing-events-publisher', 'prod-billing-reconciliation-job']);
    expect(JSON.stringify(withBus[0]!.Environment.Variables.EVENT_BUS_NAME)).toContain(statefulId(prod.stateful.eventBus));
  });
});

describe('the events-publisher mapping', () => {
  it('reads the history stream from its oldest record, 100 at a time, bisecting, reporting batch item failures, 10 retries within a day, then the failure queue', () => {
    const fn = Object.entries(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function')).find(([, f]) => f.Properties?.FunctionName === 'prod-billing-events-publisher')!;
    prod.statelessTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fn[0] },
      EventSourceArn: { 'Fn::ImportValue': Match.stringLikeRegexp(`${statefulId(prod.stateful.tables.billingActivityHistory)}StreamArn`) },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 86_400,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::ImportValue': Match.stringLikeRegexp(statefulId(prod.stateful.eventsFailures)) } } },
    });
  });

  it('sends what it gives up on to an encrypted, TLS-only queue kept 14 days, whose depth is alarmed', () => {
    prod.statefulTemplate.hasResourceProperties('AWS::SQS::Queue', { QueueName: 'prod-billing-events-failures', MessageRetentionPeriod: 14 * 86_400, SqsManagedSseEnabled: true });
    prod.statefulTemplate.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'prod-billing-events-failures-not-empty',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });
});
