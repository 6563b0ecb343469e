import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ACH_RETURN_RATE_METRIC, FAILING_SUBSCRIPTIONS_METRIC as METRIC_NAME, METRICS_NAMESPACE, PROCESSOR_CIRCUITS_OPEN_METRIC } from '../../src/adapters/metrics/emf.js';
import { RETURN_RATE_WARNING_PERCENT } from '../../src/domain/ach-return-rates.js';
import { NACHA_RETURN_RATE_THRESHOLDS_PERCENT, RETURN_RATE_CLASSES, type ReturnRateClass } from '../../src/domain/nacha.js';
import type { HandlerName } from '../handlers.js';
import { type AlarmTarget, notify } from './alarms.js';
import { addBillingDayMonitoring } from './billing-day-monitoring.js';
import { addReconciliationMonitoring, type ReconciliationAlarms } from './reconciliation-monitoring.js';
import { DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS } from '../../src/domain/use-cases/reconciliation-gauges.js';

/** The gauge the collections-job emits as EMF (docs/design.md, retry ladder), named where the emitter names it. */
export const FAILING_SUBSCRIPTIONS_METRIC = { namespace: METRICS_NAMESPACE, metricName: METRIC_NAME } as const;

export interface BillingMonitoringProps extends AlarmTarget {
  readonly stage: string;
  readonly functions: Record<HandlerName, lambda.IFunction>;
  readonly membershipsConsumer: lambda.IFunction;
  /** The history stream's consumer (docs/design.md section 11). */
  readonly eventsPublisher: lambda.IFunction;
  readonly collectionsRateMinutes: number;
  readonly queues: Readonly<Record<string, sqs.IQueue>>;
  /** Hours of backlog ETA past which the billing-day alarm fires (default DEFAULT_BACKLOG_ETA_ALARM_HOURS). */
  readonly backlogEtaAlarmHours?: number;
  /** RECONCILIATION_EXCEPTION_MAX_AGE_HOURS as the reconciliation-job is given it (default 72). */
  readonly reconciliationExceptionMaxAgeHours?: number;
}

/** Error alarms per function, Kinesis iterator age, parked subscriptions, ACH return rates, and the billing dashboard. */
export class BillingMonitoring extends Construct {
  readonly functionErrorAlarms: Partial<Record<HandlerName, cloudwatch.Alarm>> = {};
  readonly iteratorAgeAlarm: cloudwatch.Alarm;
  readonly eventsIteratorAgeAlarm: cloudwatch.Alarm;
  readonly parkedAlarm: cloudwatch.Alarm;
  readonly backlogEtaAlarm: cloudwatch.Alarm;
  readonly reconciliationAlarms: ReconciliationAlarms;
  readonly returnRateAlarms = {} as Record<ReturnRateClass, cloudwatch.Alarm>;
  /** A processor refused our credentials: its circuit is open and collection on its rails waits (DESIGN 15). */
  readonly processorOutageAlarm: cloudwatch.Alarm;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: BillingMonitoringProps) {
    super(scope, id);
    const { stage } = props;

    for (const [name, fn] of Object.entries(props.functions) as [HandlerName, lambda.IFunction][]) {
      this.functionErrorAlarms[name] = notify(
        new cloudwatch.Alarm(this, `${name}-errors`, {
          alarmName: `${stage}-billing-${name}-errors`,
          alarmDescription: `${stage}-billing-${name} raised an unhandled error (partial batch failures are not counted here).`,
          metric: fn.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
        props,
      );
    }

    this.iteratorAgeAlarm = notify(
      new cloudwatch.Alarm(this, 'MembershipsIteratorAge', {
        alarmName: `${stage}-memberships-iterator-age`,
        alarmDescription: 'The memberships consumer is falling behind its Kinesis stream (oldest record > 10 minutes).',
        metric: props.membershipsConsumer.metric('IteratorAge', {
          period: Duration.minutes(5),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: Duration.minutes(10).toMilliseconds(),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      props,
    );

    this.eventsIteratorAgeAlarm = notify(
      new cloudwatch.Alarm(this, 'EventsIteratorAge', {
        alarmName: `${stage}-billing-events-iterator-age`,
        alarmDescription: 'The events-publisher is falling behind the history table stream (oldest audit row not yet published > 10 minutes; the stream keeps 24 hours).',
        metric: props.eventsPublisher.metric('IteratorAge', { period: Duration.minutes(5), statistic: cloudwatch.Stats.MAXIMUM }),
        threshold: Duration.minutes(10).toMilliseconds(),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      props,
    );

    const gaugePeriod = Duration.minutes(Math.max(props.collectionsRateMinutes, 1));
    // Dimensions are exactly the EMF dimension set the collections-job emits, [["state"]]: a
    // CloudWatch metric is identified by its full dimension set, so adding Stage here would match
    // no data. Deploy each stage to its own account (or region) to keep their gauges apart.
    const failingGauge = (state: 'retrying' | 'parked', label?: string) =>
      new cloudwatch.Metric({
        ...FAILING_SUBSCRIPTIONS_METRIC,
        dimensionsMap: { state },
        statistic: cloudwatch.Stats.MAXIMUM,
        period: gaugePeriod,
        ...(label ? { label } : {}),
      });

    this.parkedAlarm = notify(
      new cloudwatch.Alarm(this, 'ParkedSubscriptions', {
        alarmName: `${stage}-billing-parked-subscriptions`,
        alarmDescription:
          'At least one subscription is parked on the billing-failure ladder and needs an operator (POST /v1/subscriptions/{id}/retry-billing).',
        metric: failingGauge('parked'),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      props,
    );

    // Emitted by the collections-job every run while a circuit is open, and by a worker when it opens one.
    this.processorOutageAlarm = notify(
      new cloudwatch.Alarm(this, 'ProcessorOutage', {
        alarmName: `${stage}-billing-processor-outage`,
        alarmDescription:
          'A payment processor (Stripe, the payments or accounts service) refused our credentials: its circuit is open and no member is ' +
          'billed on its rails until it closes. Nothing is counted against members. docs/runbook.md, "Processor outage".',
        metric: new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName: PROCESSOR_CIRCUITS_OPEN_METRIC, statistic: cloudwatch.Stats.MAXIMUM, period: gaugePeriod }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      props,
    );

    // NACHA return rates over the trailing 60 days (docs/design.md 4.1): each alarm fires at the
    // warning level, 80 % of NACHA's threshold, so there is time to act before the bank must.
    // A label would turn the alarm's metric into a metric-math expression: dashboards only.
    const returnRate = (cls: ReturnRateClass, label?: string) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: ACH_RETURN_RATE_METRIC,
        dimensionsMap: { class: cls },
        statistic: cloudwatch.Stats.MAXIMUM,
        period: gaugePeriod,
        ...(label ? { label } : {}),
      });
    for (const cls of RETURN_RATE_CLASSES) {
      this.returnRateAlarms[cls] = notify(
        new cloudwatch.Alarm(this, `AchReturnRate-${cls}`, {
          alarmName: `${stage}-billing-ach-return-rate-${cls}`,
          alarmDescription:
            `The ${cls} ACH return rate of the trailing 60 days reached ${RETURN_RATE_WARNING_PERCENT[cls]} % of the debits originated ` +
            `(NACHA threshold ${NACHA_RETURN_RATE_THRESHOLDS_PERCENT[cls]} %). See the returns by code before the bank asks.`,
          metric: returnRate(cls),
          threshold: RETURN_RATE_WARNING_PERCENT[cls],
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 1,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }),
        props,
      );
    }

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `${stage}-billing`,
      defaultInterval: Duration.days(1),
    });
    this.dashboard.addWidgets(
      new cloudwatch.SingleValueWidget({
        title: 'Failing subscriptions now',
        metrics: [failingGauge('retrying', 'retrying'), failingGauge('parked', 'parked')],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Failing subscriptions (retrying, parked)',
        left: [failingGauge('retrying', 'retrying'), failingGauge('parked', 'parked')],
        leftAnnotations: [{ value: 0, label: 'parked alarm above', color: cloudwatch.Color.RED }],
        width: 16,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Function errors',
        left: Object.entries(props.functions).map(([name, fn]) =>
          fn.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM, label: name }),
        ),
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead-letter and failure queues (visible messages)',
        left: Object.entries(props.queues).map(([label, queue]) =>
          queue.metricApproximateNumberOfMessagesVisible({ statistic: cloudwatch.Stats.MAXIMUM, label }),
        ),
        right: [
          props.membershipsConsumer.metric('IteratorAge', { statistic: cloudwatch.Stats.MAXIMUM, label: 'memberships iterator age (ms)' }),
          props.eventsPublisher.metric('IteratorAge', { statistic: cloudwatch.Stats.MAXIMUM, label: 'history stream iterator age (ms)' }),
        ],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      ...RETURN_RATE_CLASSES.map(
        (cls) =>
          new cloudwatch.GraphWidget({
            title: `ACH ${cls} return rate, trailing 60 days (%)`,
            left: [returnRate(cls, `${cls} (%)`)],
            leftAnnotations: [
              { value: RETURN_RATE_WARNING_PERCENT[cls], label: 'warning (alarm)', color: cloudwatch.Color.ORANGE },
              { value: NACHA_RETURN_RATE_THRESHOLDS_PERCENT[cls], label: 'NACHA threshold', color: cloudwatch.Color.RED },
            ],
            width: 8,
          }),
      ),
    );
    this.backlogEtaAlarm = addBillingDayMonitoring(this, {
      stage,
      alarmTopic: props.alarmTopic,
      dashboard: this.dashboard,
      period: gaugePeriod,
      ...(props.backlogEtaAlarmHours !== undefined ? { etaAlarmHours: props.backlogEtaAlarmHours } : {}),
    });
    this.reconciliationAlarms = addReconciliationMonitoring(this, {
      stage,
      alarmTopic: props.alarmTopic,
      dashboard: this.dashboard,
      maxAgeHours: props.reconciliationExceptionMaxAgeHours ?? DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS,
    });
  }
}
