/** A message for a queue (SQS in AWS). */
export interface QueueMessage {
  readonly id: string;
  readonly body: string;
  /** Seconds before the message can be received (SQS DelaySeconds, 0-900): how the planner paces work. */
  readonly delaySeconds?: number;
}

/** Sends messages, 10 per call, retrying unprocessed entries; throws if some could not be sent. */
export interface QueuePort {
  sendBatch(messages: readonly QueueMessage[]): Promise<void>;
  /** Messages still queued: visible, delayed and in flight (approximate, as SQS counts them). */
  depth?(): Promise<number>;
}
