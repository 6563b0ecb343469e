import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export interface AlarmTarget {
  readonly alarmTopic: sns.ITopic;
}

/** Any message in a dead-letter (or on-failure) queue is work that was given up on: page someone. */
export function createQueueDepthAlarm(
  scope: Construct,
  id: string,
  props: AlarmTarget & { queue: sqs.IQueue; alarmName: string; description: string },
): cloudwatch.Alarm {
  const alarm = new cloudwatch.Alarm(scope, id, {
    alarmName: props.alarmName,
    alarmDescription: props.description,
    metric: props.queue.metricApproximateNumberOfMessagesVisible({
      period: Duration.minutes(5),
      statistic: cloudwatch.Stats.MAXIMUM,
    }),
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  alarm.addAlarmAction(new cloudwatchActions.SnsAction(props.alarmTopic));
  return alarm;
}

export function notify(alarm: cloudwatch.Alarm, target: AlarmTarget): cloudwatch.Alarm {
  alarm.addAlarmAction(new cloudwatchActions.SnsAction(target.alarmTopic));
  return alarm;
}
