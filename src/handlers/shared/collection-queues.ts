import { messageIdOf, processorOfMessage, type CollectionMessage } from '../../domain/collections.js';
import type { ProcessorId } from '../../domain/processor-budget.js';
import type { AppDeps, QueueMessage } from '../../runtime/deps.js';

/** SendMessageBatch takes at most ten entries. */
export const SQS_BATCH = 10;

export interface OutgoingCollection {
  readonly message: CollectionMessage;
  readonly delaySeconds?: number;
}

/**
 * Sends collection messages to their processors' queues (DESIGN 13), at most ten per call, one
 * processor's calls in order and the processors' concurrently.
 */
export async function sendToCollectionQueues(queues: AppDeps['collectionQueues'], outgoing: readonly OutgoingCollection[]): Promise<void> {
  const byProcessor = new Map<ProcessorId, QueueMessage[]>();
  for (const { message, delaySeconds } of outgoing) {
    const processor = processorOfMessage(message);
    const entry: QueueMessage = { id: messageIdOf(message), body: JSON.stringify(message), ...(delaySeconds !== undefined ? { delaySeconds } : {}) };
    byProcessor.set(processor, [...(byProcessor.get(processor) ?? []), entry]);
  }
  await Promise.all(
    [...byProcessor].map(async ([processor, messages]) => {
      for (let i = 0; i < messages.length; i += SQS_BATCH) await queues[processor].sendBatch(messages.slice(i, i + SQS_BATCH));
    }),
  );
}
