import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type AlarmTarget, createQueueDepthAlarm } from './alarms.js';

/** Deliveries before a message is parked in the DLQ. */
export const MAX_RECEIVE_COUNT = 5;

export interface WorkQueueProps extends AlarmTarget {
  readonly queueName: string;
  readonly visibilityTimeout: Duration;
  readonly retain: boolean;
}

/** An encrypted, TLS-only SQS queue with its dead-letter queue and a DLQ-depth alarm. */
export class WorkQueue extends Construct {
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
  readonly deadLetterAlarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    const removalPolicy = props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.deadLetterQueue = createSecureQueue(this, 'DeadLetterQueue', {
      queueName: `${props.queueName}-dlq`,
      retentionPeriod: Duration.days(14),
      removalPolicy,
    });
    this.queue = createSecureQueue(this, 'Queue', {
      queueName: props.queueName,
      visibilityTimeout: props.visibilityTimeout,
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: MAX_RECEIVE_COUNT },
      removalPolicy,
    });
    this.deadLetterAlarm = createQueueDepthAlarm(this, 'DeadLetterAlarm', {
      alarmTopic: props.alarmTopic,
      queue: this.deadLetterQueue,
      alarmName: `${props.queueName}-dlq-not-empty`,
      description: `Messages from ${props.queueName} failed ${MAX_RECEIVE_COUNT} deliveries and were parked in ${props.queueName}-dlq.`,
    });
  }
}

/** SSE-SQS (no key policy to manage) and a queue policy that refuses non-TLS requests. */
export function createSecureQueue(scope: Construct, id: string, props: sqs.QueueProps): sqs.Queue {
  return new sqs.Queue(scope, id, {
    ...props,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
  });
}
