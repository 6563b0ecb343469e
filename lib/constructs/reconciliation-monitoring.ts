import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { METRICS_NAMESPACE, RECONCILIATION_GROSS_DRIFT_METRIC, RECONCILIATION_OPEN_EXCEPTIONS_METRIC, RECONCILIATION_OVERDUE_EXCEPTIONS_METRIC } from '../../src/adapters/metrics/emf.js';
import { RAILS_RECONCILED } from '../../src/domain/reconciliation/request.js';
import { type AlarmTarget, notify } from './alarms.js';

export interface ReconciliationMonitoringProps extends AlarmTarget {
  readonly stage: string;
  readonly dashboard: cloudwatch.Dashboard;
  /** RECONCILIATION_EXCEPTION_MAX_AGE_HOURS, named in the overdue alarm's description. */
  readonly maxAgeHours: number;
}

export interface ReconciliationAlarms {
  /** Per rail: a day whose money does not balance (gross drift not 0). */
  readonly grossDrift: Record<string, cloudwatch.Alarm>;
  /** Per rail: a new exception unresolved past the setting. */
  readonly overdueExceptions: Record<string, cloudwatch.Alarm>;
}

// The job emits once a day (and on demand): a datapoint per day, none in between.
const PERIOD = Duration.days(1);

const gauge = (metricName: string, rail: string) =>
  new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName, dimensionsMap: { rail }, period: PERIOD, statistic: cloudwatch.Stats.MAXIMUM });

/** The reconciliation gauges' alarms (DESIGN 14) and their dashboard widgets; the runbook has an entry per exception code. */
export function addReconciliationMonitoring(scope: Construct, props: ReconciliationMonitoringProps): ReconciliationAlarms {
  const alarms: ReconciliationAlarms = { grossDrift: {}, overdueExceptions: {} };
  for (const rail of RAILS_RECONCILED) {
    alarms.grossDrift[rail] = notify(
      new cloudwatch.Alarm(scope, `ReconciliationGrossDrift-${rail}`, {
        alarmName: `${props.stage}-billing-reconciliation-drift-${rail}`,
        alarmDescription: `A ${rail} day's money does not balance: the processor and our records differ (gross drift in cents). See the run's exceptions (GET /v1/reconciliation/runs) and docs/runbook.md#reconciliation.`,
        metric: gauge(RECONCILIATION_GROSS_DRIFT_METRIC, rail),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      props,
    );
    alarms.overdueExceptions[rail] = notify(
      new cloudwatch.Alarm(scope, `ReconciliationOverdue-${rail}`, {
        alarmName: `${props.stage}-billing-reconciliation-overdue-${rail}`,
        alarmDescription: `A ${rail} reconciliation exception is unresolved after RECONCILIATION_EXCEPTION_MAX_AGE_HOURS (${props.maxAgeHours} h). Resolve it with a reason (docs/runbook.md#reconciliation).`,
        metric: gauge(RECONCILIATION_OVERDUE_EXCEPTIONS_METRIC, rail),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      props,
    );
  }
  props.dashboard.addWidgets(
    new cloudwatch.GraphWidget({ title: 'Reconciliation: gross drift by rail (cents)', left: RAILS_RECONCILED.map((rail) => gauge(RECONCILIATION_GROSS_DRIFT_METRIC, rail).with({ label: rail })), width: 12 }),
    new cloudwatch.GraphWidget({ title: 'Reconciliation: open exceptions by rail', left: RAILS_RECONCILED.map((rail) => gauge(RECONCILIATION_OPEN_EXCEPTIONS_METRIC, rail).with({ label: rail })), width: 12 }),
  );
  return alarms;
}
