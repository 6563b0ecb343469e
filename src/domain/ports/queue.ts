/** A message for a queue (SQS in AWS). */
export interface QueueMessage {
  readonly id: string;
  readonly body: string;
}

/** Sends messages, 10 per call, retrying unprocessed entries; throws if some could not be sent. */
export interface QueuePort {
  sendBatch(messages: readonly QueueMessage[]): Promise<void>;
}
