import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as kinesis from 'aws-cdk-lib/aws-kinesis';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

/**
 * What Lambda's poller calls on a Kinesis stream read with a standard iterator (no enhanced
 * fan-out consumer): CDK's `grantRead` adds SubscribeToShard and DescribeStreamConsumer (fan-out
 * only) and ListStreams (an account-wide list the poller of a mapping by ARN never makes).
 */
export const KINESIS_POLL_ACTIONS = ['kinesis:DescribeStream', 'kinesis:DescribeStreamSummary', 'kinesis:GetRecords', 'kinesis:GetShardIterator', 'kinesis:ListShards'] as const;

/**
 * A stream mapping's on-failure queue, granted only `sqs:SendMessage`: all Lambda needs to send a
 * failed batch's metadata there (CDK's SqsDlq adds GetQueueAttributes and GetQueueUrl).
 */
export class SendOnlyQueueDestination implements lambda.IEventSourceDlq {
  constructor(private readonly queue: sqs.IQueue) {}

  bind(_target: lambda.IEventSourceMapping, targetHandler: lambda.IFunction): lambda.DlqDestinationConfig {
    targetHandler.addToRolePolicy(new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }));
    return { destination: this.queue.queueArn };
  }
}

export interface KinesisMappingOptions extends Omit<lambda.EventSourceMappingOptions, 'eventSourceArn' | 'onFailure'> {
  readonly onFailure: sqs.IQueue;
}

/** A Kinesis event source mapping whose role may only poll that stream and send to that queue. */
export function addKinesisMapping(scope: Construct, fn: lambda.IFunction, stream: kinesis.IStream, options: KinesisMappingOptions): lambda.EventSourceMapping {
  fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'PollStream', actions: [...KINESIS_POLL_ACTIONS], resources: [stream.streamArn] }));
  const { onFailure, ...rest } = options;
  const mapping = new lambda.EventSourceMapping(scope, 'KinesisEventSource', { ...rest, target: fn, eventSourceArn: stream.streamArn, onFailure: new SendOnlyQueueDestination(onFailure) });
  // Lambda checks the role can read the stream when it creates the mapping.
  if (fn.role) mapping.node.addDependency(fn.role);
  return mapping;
}
