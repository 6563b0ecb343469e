import { ReceiveMessageCommand, type SendMessageBatchCommand, type SendMessageBatchCommandOutput, type SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqsClient, QueueSendError, SEND_CONCURRENCY, SqsQueue } from '../../../src/adapters/sqs/queue.js';

type Server = Awaited<ReturnType<typeof startFauxqs>>;

async function drain(client: SQSClient, queueUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const out = await client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    if (!out.Messages || out.Messages.length === 0) return bodies;
    bodies.push(...out.Messages.map((m) => m.Body ?? ''));
  }
}

describe('SqsQueue against the fauxqs emulator', () => {
  let server: Server;
  let client: SQSClient;
  beforeAll(async () => {
    server = await startFauxqs({ port: 0, logger: false });
    client = createSqsClient({ region: 'us-east-1', endpoint: server.address });
  });
  afterAll(async () => {
    client?.destroy();
    await server?.stop();
  });

  it('sends every message, ten per SendMessageBatch call', async () => {
    const { queueUrl } = server.createQueue(`collections-${Date.now()}`);
    const calls: number[] = [];
    const counting = { send: async (command: SendMessageBatchCommand) => { calls.push(command.input.Entries?.length ?? 0); return client.send(command); } } as unknown as SQSClient;
    const messages = Array.from({ length: 23 }, (_, i) => ({ id: `sub-${i}:weird/id`, body: JSON.stringify({ n: i }) }));

    await new SqsQueue(counting, queueUrl).sendBatch(messages);

    expect(calls).toEqual([10, 10, 3]);
    const bodies = await drain(client, queueUrl);
    expect(bodies.map((b) => (JSON.parse(b) as { n: number }).n).sort((a, b) => a - b)).toEqual(messages.map((_, i) => i));
  });

  it('holds a message back for its DelaySeconds and counts it in the depth meanwhile (the paced planner)', async () => {
    const { queueUrl } = server.createQueue(`paced-${Date.now()}`);
    const queue = new SqsQueue(client, queueUrl);
    await queue.sendBatch([
      { id: 'now', body: 'now' },
      { id: 'later', body: 'later', delaySeconds: 600 },
    ]);
    expect(await drain(client, queueUrl)).toEqual(['now']);
    // The received one is in flight, the delayed one waits: both are still the queue's.
    expect(await queue.depth()).toBe(2);
  });

  it('keeps a few SendMessageBatch calls in flight, never more than SEND_CONCURRENCY', async () => {
    const { queueUrl } = server.createQueue(`parallel-${Date.now()}`);
    let inFlight = 0;
    let most = 0;
    const tracking = {
      send: async (command: SendMessageBatchCommand) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        try {
          await new Promise((resolve) => setTimeout(resolve, 5));
          return await client.send(command);
        } finally {
          inFlight -= 1;
        }
      },
    } as unknown as SQSClient;
    const messages = Array.from({ length: 250 }, (_, i) => ({ id: `m-${i}`, body: JSON.stringify({ n: i }) }));

    await new SqsQueue(tracking, queueUrl).sendBatch(messages);

    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(SEND_CONCURRENCY);
    const bodies = await drain(client, queueUrl);
    expect(bodies.map((b) => (JSON.parse(b) as { n: number }).n).sort((a, b) => a - b)).toEqual(messages.map((_, i) => i));
  });

  it('does nothing for an empty batch', async () => {
    const { queueUrl } = server.createQueue(`empty-${Date.now()}`);
    await new SqsQueue(client, queueUrl).sendBatch([]);
    expect(await drain(client, queueUrl)).toEqual([]);
  });

  it('refuses two messages with one id in a single send', async () => {
    const { queueUrl } = server.createQueue(`dupes-${Date.now()}`);
    await expect(new SqsQueue(client, queueUrl).sendBatch([{ id: 'a', body: '1' }, { id: 'a', body: '2' }])).rejects.toBeInstanceOf(QueueSendError);
  });
});

describe('SqsQueue retries', () => {
  /** A client whose SendMessageBatch fails the given entry ids on the first `times` calls. */
  function flakyClient(failures: { times: number; senderFault?: boolean }) {
    const calls: string[][] = [];
    const client = {
      send: async (command: SendMessageBatchCommand): Promise<Partial<SendMessageBatchCommandOutput>> => {
        const ids = (command.input.Entries ?? []).map((e) => e.Id!);
        calls.push(ids);
        const failing = calls.length <= failures.times ? ids.slice(0, 1) : [];
        return {
          Successful: ids.filter((id) => !failing.includes(id)).map((Id) => ({ Id, MessageId: Id, MD5OfMessageBody: '' })),
          Failed: failing.map((Id) => ({ Id, Code: failures.senderFault ? 'InvalidParameterValue' : 'InternalError', SenderFault: failures.senderFault ?? false })),
        };
      },
    } as unknown as SQSClient;
    return { client, calls };
  }
  const noSleep = async () => undefined;
  const messages = [{ id: 'x', body: '1' }, { id: 'y', body: '2' }];

  it('resends only the entries SQS could not take', async () => {
    const { client, calls } = flakyClient({ times: 2 });
    await new SqsQueue(client, 'http://q', { sleep: noSleep }).sendBatch(messages);
    expect(calls).toEqual([['m0', 'm1'], ['m0'], ['m0']]);
  });

  it('throws naming what is still unsent after the last attempt', async () => {
    const { client, calls } = flakyClient({ times: 10 });
    const error = await new SqsQueue(client, 'http://q', { sleep: noSleep, maxAttempts: 3 }).sendBatch(messages).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueueSendError);
    expect((error as QueueSendError).unsent).toEqual([{ id: 'x', code: 'InternalError' }]);
    expect(calls).toHaveLength(3);
  });

  it('does not resend an entry refused as a sender fault', async () => {
    const { client, calls } = flakyClient({ times: 10, senderFault: true });
    const error = await new SqsQueue(client, 'http://q', { sleep: noSleep }).sendBatch(messages).catch((e: unknown) => e);
    expect((error as QueueSendError).unsent).toEqual([{ id: 'x', code: 'InvalidParameterValue' }]);
    expect(calls).toHaveLength(1);
  });
});
