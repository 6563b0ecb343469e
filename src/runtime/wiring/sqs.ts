import { lazily, type SqsWiring } from './types.js';

/** SendMessageBatch senders; the SQS client is loaded and built on the first send. */
export const sqs: SqsWiring = (options) => {
  const client = lazily(async () => {
    const { createSqsClient } = await import('../../adapters/sqs/queue.js');
    return createSqsClient(options);
  });
  return (queueUrl) => {
    const queue = lazily(async () => {
      const { SqsQueue } = await import('../../adapters/sqs/queue.js');
      return new SqsQueue(await client(), queueUrl);
    });
    return { sendBatch: async (messages) => (await queue()).sendBatch(messages), depth: async () => (await queue()).depth() };
  };
};
