import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateStreamCommand, DescribeStreamCommand, KinesisClient } from '@aws-sdk/client-kinesis';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { buildApp } from 'fauxqs';
import { QUEUES, type QueueId } from '../manifest/index.js';

export const LOCAL_REGION = 'us-east-1';
/** The stage name of every local resource (`local-collections`, `local-billing-activity`, ...). */
export const LOCAL_PREFIX = 'local';
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

export interface LocalQueue {
  readonly name: string;
  readonly url: string;
  readonly arn: string;
}

export interface LocalWorkQueue extends LocalQueue {
  readonly deadLetter: LocalQueue;
}

export interface LocalSqs {
  readonly endpoint: string;
  readonly client: SQSClient;
  /** The work queues of src/manifest/resources.ts, each with its DLQ. */
  readonly queues: Readonly<Record<QueueId, LocalWorkQueue>>;
  /** The memberships event source mapping's on-failure destination. */
  readonly membershipsFailures: LocalQueue;
  /** The events-publisher's (history stream) on-failure destination. */
  readonly eventsFailures: LocalQueue;
  stop(): Promise<void>;
}

/** An SQS client for the emulator: an explicit endpoint, because its queue URLs name a host that does not resolve. */
export function localSqsClient(endpoint: string): SQSClient {
  return new SQSClient({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS, maxAttempts: 3 });
}

/**
 * fauxqs with the queues of the stateful stack: a work queue with its DLQ (RedrivePolicy) for each
 * queue the manifest's resources name (`balanceEvents` is `<prefix>-balance-events`), and the two
 * stream mappings' on-failure queues.
 */
export async function startLocalSqs(options: { prefix: string; visibilityTimeoutS: number; maxReceiveCount: number }): Promise<LocalSqs> {
  // fauxqs's startFauxqs listens on 0.0.0.0 whatever host it is given; its app, listened on here, binds loopback only.
  const server = buildApp({ logger: false, host: '127.0.0.1' });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const { port } = server.server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localSqsClient(endpoint);
  const create = async (name: string, attributes: Record<string, string> = {}): Promise<LocalQueue> => {
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
    return { name, url: QueueUrl!, arn: Attributes!.QueueArn! };
  };
  const workQueue = async (name: string): Promise<LocalWorkQueue> => {
    const deadLetter = await create(`${name}-dlq`, { MessageRetentionPeriod: String(14 * 24 * 3600) });
    const queue = await create(name, {
      VisibilityTimeout: String(options.visibilityTimeoutS),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetter.arn, maxReceiveCount: options.maxReceiveCount }),
    });
    return { ...queue, deadLetter };
  };
  const queueIds = Object.keys(QUEUES) as QueueId[];
  const [workQueues, membershipsFailures, eventsFailures] = await Promise.all([
    Promise.all(queueIds.map((id) => workQueue(`${options.prefix}-${kebabCase(id)}`))),
    create(`${options.prefix}-memberships-failures`),
    create(`${options.prefix}-billing-events-failures`),
  ]);
  return {
    endpoint,
    client,
    queues: Object.fromEntries(queueIds.map((id, i) => [id, workQueues[i]!])) as Record<QueueId, LocalWorkQueue>,
    membershipsFailures,
    eventsFailures,
    stop: async () => {
      client.destroy();
      await server.close();
    },
  };
}

export interface LocalKinesis {
  readonly endpoint: string;
  readonly client: KinesisClient;
  readonly streamName: string;
  readonly streamArn: string;
  stop(): Promise<void>;
}

/** The v3 client speaks HTTP/2 by default, which the emulator refuses. */
export function localKinesisClient(endpoint: string): KinesisClient {
  return new KinesisClient({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS, requestHandler: new NodeHttpHandler(), maxAttempts: 3 });
}

type KinesaliteFactory = (options: { createStreamMs?: number; deleteStreamMs?: number; updateStreamMs?: number; path?: string }) => Server;

/** kinesalite in this process with the memberships stream. */
export async function startLocalKinesis(options: { streamName: string; shardCount: number }): Promise<LocalKinesis> {
  const kinesalite = createRequire(import.meta.url)('kinesalite') as KinesaliteFactory;
  const server = kinesalite({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = localKinesisClient(endpoint);
  await client.send(new CreateStreamCommand({ StreamName: options.streamName, ShardCount: options.shardCount }));
  let streamArn = '';
  for (let i = 0; ; i++) {
    const { StreamDescription } = await client.send(new DescribeStreamCommand({ StreamName: options.streamName }));
    if (StreamDescription?.StreamStatus === 'ACTIVE') {
      streamArn = StreamDescription.StreamARN ?? `arn:aws:kinesis:${LOCAL_REGION}:000000000000:stream/${options.streamName}`;
      break;
    }
    if (i > 200) throw new Error(`stream ${options.streamName} did not become ACTIVE`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    endpoint,
    client,
    streamName: options.streamName,
    streamArn,
    stop: async () => {
      client.destroy();
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function kebabCase(id: string): string {
  return id.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
