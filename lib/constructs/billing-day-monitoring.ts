import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { BACKLOG_ETA_METRIC, DUE_BACKLOG_METRIC, METRICS_NAMESPACE } from '../../src/adapters/metrics/emf.js';
import { PROCESSOR_IDS } from '../../src/domain/processor-budget.js';
import { type AlarmTarget, notify } from './alarms.js';

/** The backlog ETA past which someone must raise the budget or accept a longer billing day (DESIGN 13; docs/capacity.md). */
export const DEFAULT_BACKLOG_ETA_ALARM_HOURS = 48;

export interface BillingDayMonitoringProps extends AlarmTarget {
  readonly stage: string;
  readonly dashboard: cloudwatch.Dashboard;
  /** The gauges' period: one collections run. */
  readonly period: Duration;
  readonly etaAlarmHours?: number;
}

/** The billing-day gauges' alarm (ETA past the setting) and their dashboard widget. */
export function addBillingDayMonitoring(scope: Construct, props: BillingDayMonitoringProps): cloudwatch.Alarm {
  const eta = new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName: BACKLOG_ETA_METRIC, period: props.period, statistic: cloudwatch.Stats.MAXIMUM });
  const hours = props.etaAlarmHours ?? DEFAULT_BACKLOG_ETA_ALARM_HOURS;
  const alarm = notify(
    new cloudwatch.Alarm(scope, 'BacklogEta', {
      alarmName: `${props.stage}-billing-backlog-eta`,
      alarmDescription: `The due backlog needs more than ${hours} h at the processor budget: raise STRIPE_BUDGET_PER_SECOND / PAYMENTS_BUDGET_PER_SECOND if the processor allows (docs/capacity.md).`,
      metric: eta,
      threshold: hours * 60,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    props,
  );
  props.dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Billing day: due backlog by processor, and its ETA (minutes)',
      left: PROCESSOR_IDS.map(
        (processor) =>
          new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName: DUE_BACKLOG_METRIC, dimensionsMap: { processor }, period: props.period, statistic: cloudwatch.Stats.MAXIMUM, label: `${processor} backlog` }),
      ),
      right: [eta.with({ label: 'ETA (minutes)' })],
      rightAnnotations: [{ value: hours * 60, label: 'alarm', color: cloudwatch.Color.RED }],
      width: 24,
    }),
  );
  return alarm;
}
