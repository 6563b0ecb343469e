import { describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../lib/handlers.js';
import { RETURN_RATE_CLASSES } from '../../src/domain/nacha.js';
import { resourcesOfType, synthBilling } from './support.js';

const prod = synthBilling({ stage: 'prod' });
type Alarm = { AlarmName: string; MetricName: string; Namespace: string; Dimensions?: { Name: string; Value: unknown }[]; Threshold: number; ComparisonOperator: string; AlarmActions?: unknown[]; Statistic: string };
const alarms = [
  ...Object.values(resourcesOfType(prod.statefulTemplate, 'AWS::CloudWatch::Alarm')),
  ...Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::CloudWatch::Alarm')),
].map((a) => a.Properties as unknown as Alarm);
const alarmNamed = (name: string) => {
  const alarm = alarms.find((a) => a.AlarmName === name);
  if (!alarm) throw new Error(`no alarm ${name}`);
  return alarm;
};

describe('alarms', () => {
  it('all notify the stage alarm topic', () => {
    for (const alarm of alarms) expect(JSON.stringify(alarm.AlarmActions)).toMatch(/AlarmTopic/);
  });

  it.each(['prod-collections-stripe-dlq', 'prod-collections-payments-dlq', 'prod-balance-events-dlq', 'prod-memberships-failures', 'prod-billing-events-failures'])('fires on any message in %s', (queue) => {
    const alarm = alarmNamed(`${queue}-not-empty`);
    expect(alarm).toMatchObject({ Namespace: 'AWS/SQS', MetricName: 'ApproximateNumberOfMessagesVisible', Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    expect(JSON.stringify(alarm.Dimensions)).toContain('QueueName');
  });

  it.each(HANDLER_NAMES)('fires on errors of %s', (name) => {
    const alarm = alarmNamed(`prod-billing-${name}-errors`);
    expect(alarm).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Errors', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    expect(alarm.Dimensions).toEqual([{ Name: 'FunctionName', Value: { Ref: expect.stringMatching(/Function/) } }]);
  });

  it('fires when the memberships consumer falls behind its stream', () => {
    expect(alarmNamed('prod-memberships-iterator-age')).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'IteratorAge', Statistic: 'Maximum' });
  });

  it('fires when the events-publisher falls behind the history stream', () => {
    const alarm = alarmNamed('prod-billing-events-iterator-age');
    expect(alarm).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'IteratorAge', Statistic: 'Maximum', Threshold: 600_000 });
    expect(JSON.stringify(alarm.Dimensions)).toContain('EventsPublisherFunction');
  });

  it('fires on any parked subscription, on exactly the dimensions the collections-job emits', () => {
    expect(alarmNamed('prod-billing-parked-subscriptions')).toMatchObject({
      Namespace: 'Billing',
      MetricName: 'billing_failing_subscriptions',
      Dimensions: [{ Name: 'state', Value: 'parked' }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      Statistic: 'Maximum',
    });
  });
});

describe('processor outage alarm (DESIGN 15)', () => {
  it('fires while any processor circuit is open, on the dimension-less gauge the collections-job and the workers emit', () => {
    const alarm = alarmNamed('prod-billing-processor-outage');
    expect(alarm).toMatchObject({
      Namespace: 'Billing',
      MetricName: 'billing_processor_circuits_open',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Statistic: 'Maximum',
    });
    expect(alarm.Dimensions ?? []).toEqual([]);
    expect(JSON.stringify(alarm)).toMatch(/runbook/);
  });
});

describe('ACH return-rate alarms (NACHA, trailing 60 days)', () => {
  it.each([
    ['unauthorized', 0.4, 0.5],
    ['administrative', 2.4, 3],
    ['overall', 12, 15],
  ] as const)('%s fires at %s %, below the NACHA threshold of %s %, on exactly the dimensions the collections-job emits', (cls, warning, nacha) => {
    const alarm = alarmNamed(`prod-billing-ach-return-rate-${cls}`);
    expect(alarm).toMatchObject({
      Namespace: 'Billing',
      MetricName: 'billing_ach_return_rate',
      Dimensions: [{ Name: 'class', Value: cls }],
      Threshold: warning,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Statistic: 'Maximum',
    });
    expect(alarm.Threshold).toBeLessThan(nacha);
    expect(JSON.stringify(alarm.AlarmActions)).toMatch(/AlarmTopic/);
  });
});

describe('dashboard', () => {
  it('shows the retrying and parked gauges', () => {
    const dashboards = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    expect(dashboards[0]!.Properties?.DashboardName).toBe('prod-billing');
    const body = JSON.stringify(dashboards[0]!.Properties?.DashboardBody);
    expect(body).toContain('billing_failing_subscriptions');
    expect(body).toMatch(/\\"state\\",\\"retrying\\"/);
    expect(body).toMatch(/\\"state\\",\\"parked\\"/);
    expect(body).toContain('billing_ach_return_rate');
    for (const cls of RETURN_RATE_CLASSES) expect(body).toContain(`\\"class\\",\\"${cls}\\"`);
  });
});
