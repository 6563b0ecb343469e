import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueSendError, SqsQueue } from '../../src/adapters/sqs/queue.js';
import { SimulatedClock } from '../../src/local/clock.js';
import { controlRoutes, type LocalControl } from '../../src/local/control-routes.js';
import { startLocalSqs, type LocalSqs } from '../../src/local/emulators.js';
import { QueueSends } from '../../src/local/queue-stats.js';
import type { QueuePort } from '../../src/runtime/deps.js';

/** GET /local/queues: what the functions sent to each queue, and what fauxqs holds now (a billing day's messages per period). */
describe('local queue stats', () => {
  let sqs: LocalSqs;
  beforeAll(async () => {
    sqs = await startLocalSqs({ prefix: `qs${Date.now()}`, visibilityTimeoutS: 30, maxReceiveCount: 5 });
  });
  afterAll(async () => {
    await sqs?.stop();
  });

  it('counts the messages sent through each queue, beside its visible, delayed and dead-lettered counts', async () => {
    const sends = new QueueSends();
    const stripe = sends.wrap('collectionsStripe', new SqsQueue(sqs.client, sqs.queues.collectionsStripe.url));
    await stripe.sendBatch(Array.from({ length: 12 }, (_, i) => ({ id: `m${i}`, body: `b${i}`, ...(i >= 10 ? { delaySeconds: 60 } : {}) })));
    expect(await stripe.depth!()).toBe(12);
    await sqs.client.send(new SendMessageCommand({ QueueUrl: sqs.queues.collectionsStripe.deadLetter.url, MessageBody: 'dead' }));

    const stats = await sends.stats(sqs);
    expect(stats.collectionsStripe).toEqual({ name: sqs.queues.collectionsStripe.name, sent: 12, visible: 10, delayed: 2, in_flight: 0, dead_letters: 1 });
    expect(stats.collectionsPayments).toMatchObject({ sent: 0, visible: 0, dead_letters: 0 });
  });

  it('counts only what SQS took when a send fails in part', async () => {
    const sends = new QueueSends();
    const halfSent: QueuePort = {
      sendBatch: async (messages) => {
        throw new QueueSendError('2 of 5 messages could not be sent', messages.slice(0, 2).map((m) => ({ id: m.id, code: 'InternalError' })));
      },
    };
    const queue = sends.wrap('retryRuns', halfSent);
    await expect(queue.sendBatch(Array.from({ length: 5 }, (_, i) => ({ id: `m${i}`, body: 'x' })))).rejects.toBeInstanceOf(QueueSendError);
    expect(sends.sentTo('retryRuns')).toBe(3);
  });

  it('serves them on GET /local/queues', async () => {
    const queueStats = async () => ({ collectionsStripe: { name: 'q', sent: 3, visible: 1, delayed: 1, in_flight: 1, dead_letters: 0 } });
    const control = { clock: new SimulatedClock(new Date('2027-03-01T00:00:00Z')), logger: pino({ level: 'silent' }), health: () => ({ ready: true, parts: {} }), queueStats } as unknown as LocalControl;
    const answer = await controlRoutes(control)({ method: 'GET', url: '/local/queues', headers: {}, body: '' }, '/local/queues');
    expect(answer!.status).toBe(200);
    expect(JSON.parse(answer!.body)).toEqual({ queues: await queueStats() });
  });
});
