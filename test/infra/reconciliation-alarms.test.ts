import { describe, expect, it } from 'vitest';
import { RECONCILIATION_GROSS_DRIFT_METRIC, RECONCILIATION_OPEN_EXCEPTIONS_METRIC, RECONCILIATION_OVERDUE_EXCEPTIONS_METRIC } from '../../src/adapters/metrics/emf.js';
import { reconciliationSettings } from '../../src/runtime/config.js';
import { resourcesOfType, synthBilling } from './support.js';

/** The reconciliation gauges' alarms (DESIGN 14): drift not 0, or an exception open past the setting, per rail. */

const prod = synthBilling({ stage: 'prod', reconciliationExceptionMaxAgeHours: 48 });
const alarms = () => Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties as Record<string, unknown>);
const envOf = (name: string) =>
  (Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === name)?.Properties as { Environment: { Variables: Record<string, unknown> } })
    .Environment.Variables;

describe('reconciliation alarms in the stacks', () => {
  for (const rail of ['card', 'ach', 'pinless']) {
    it(`${rail}: alarms when a day's gross drift is above 0, and when an exception is open past the setting, to the alarm topic`, () => {
      const drift = alarms().find((a) => a.AlarmName === `prod-billing-reconciliation-drift-${rail}`);
      expect(drift).toMatchObject({ MetricName: RECONCILIATION_GROSS_DRIFT_METRIC, Namespace: 'Billing', Dimensions: [{ Name: 'rail', Value: rail }], Threshold: 0, ComparisonOperator: 'GreaterThanThreshold', Period: 86_400, Statistic: 'Maximum', TreatMissingData: 'notBreaching' });
      const overdue = alarms().find((a) => a.AlarmName === `prod-billing-reconciliation-overdue-${rail}`);
      expect(overdue).toMatchObject({ MetricName: RECONCILIATION_OVERDUE_EXCEPTIONS_METRIC, Dimensions: [{ Name: 'rail', Value: rail }], Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
      expect(String(overdue?.AlarmDescription)).toContain('RECONCILIATION_EXCEPTION_MAX_AGE_HOURS (48 h)');
      for (const alarm of [drift, overdue]) expect(JSON.stringify(alarm?.AlarmActions)).toMatch(/AlarmTopic/);
    });
  }

  it('gives the reconciliation-job the setting from the context (default 72), and no other function', () => {
    expect(envOf('prod-billing-reconciliation-job').RECONCILIATION_EXCEPTION_MAX_AGE_HOURS).toBe('48');
    expect(envOf('prod-billing-api').RECONCILIATION_EXCEPTION_MAX_AGE_HOURS).toBeUndefined();
    const plain = synthBilling({ stage: 'qa' });
    const job = Object.values(resourcesOfType(plain.statelessTemplate, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === 'qa-billing-reconciliation-job');
    expect((job?.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables.RECONCILIATION_EXCEPTION_MAX_AGE_HOURS).toBe('72');
  });

  it('refuses a setting that is not whole hours from 1 to 2880, in the context and at cold start', () => {
    for (const bad of ['0', '2881', '1.5', 'soon']) {
      expect(() => synthBilling({ stage: 'qa', reconciliationExceptionMaxAgeHours: bad }), bad).toThrow(/reconciliationExceptionMaxAgeHours/);
      expect(() => reconciliationSettings({ RECONCILIATION_EXCEPTION_MAX_AGE_HOURS: bad }), bad).toThrow(/RECONCILIATION_EXCEPTION_MAX_AGE_HOURS/);
    }
    expect(reconciliationSettings({})).toEqual({});
  });

  it('shows the drift and open-exception gauges by rail on the dashboard', () => {
    const dashboard = JSON.stringify(Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::CloudWatch::Dashboard')).map((d) => d.Properties));
    expect(dashboard).toContain(RECONCILIATION_GROSS_DRIFT_METRIC);
    expect(dashboard).toContain(RECONCILIATION_OPEN_EXCEPTIONS_METRIC);
  });
});
