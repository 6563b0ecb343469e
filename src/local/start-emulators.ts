import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../adapters/dynamodb/client.js';
import { createAllTables, latestStreamArn } from '../adapters/dynamodb/create-tables.js';
import { DynamoLocalStartError, startDynamoLocal, type DynamoLocalServer } from '../adapters/dynamodb/local-server.js';
import { tableNamesFor, type TableId, type TableNames } from '../adapters/dynamodb/table-definitions.js';
import { createEventBridgeClient } from '../adapters/eventbridge/event-bus.js';
import { allFunctions } from '../manifest/index.js';
import type { Logger } from '../runtime/logger.js';
import { LOCAL_PREFIX, LOCAL_REGION, startLocalKinesis, startLocalSqs, type LocalKinesis, type LocalSqs } from './emulators.js';
import { LocalEventBus } from './event-bus.js';
import type { Cleanups, StartupProgress } from './lifecycle.js';
import type { LocalSystemOptions } from './options.js';
import { LocalStartupError } from './runtime-errors.js';

/** The emulated AWS services every function reaches through its real SDK clients. */
export interface Emulators {
  readonly dynamo: DynamoLocalServer;
  readonly dynamoClient: DynamoDBClient;
  readonly tables: TableNames;
  /** The stream of each table a function's manifest trigger reads. */
  readonly tableStreams: Partial<Record<TableId, string>>;
  readonly sqs: LocalSqs;
  readonly kinesis: LocalKinesis;
  readonly eventBus: LocalEventBus;
  readonly eventBridge: ReturnType<typeof createEventBridgeClient>;
}

/**
 * Starts DynamoDB Local, fauxqs and kinesalite side by side, creates the stack's tables, then the
 * local bus (before anything writes a history row). Each started emulator is registered for
 * cleanup at once, so a failure of another stops it again.
 */
export async function startEmulators(options: LocalSystemOptions, logger: Logger, cleanups: Cleanups, progress: StartupProgress): Promise<Emulators> {
  const { dynamo, sqs, kinesis } = await startServers(options, cleanups);
  progress.mark('emulators');
  progress.up('dynamodb', 'sqs', 'kinesis');

  const dynamoClient = createDynamoClient({ region: LOCAL_REGION, endpoint: dynamo.endpoint });
  cleanups.push(() => dynamoClient.destroy());
  const tables = tableNamesFor(LOCAL_PREFIX);
  await createAllTables(dynamoClient, tables);
  const tableStreams = await streamsReadByFunctions(dynamoClient, tables);
  progress.up('tables');
  progress.mark('tables');

  const eventBus = new LocalEventBus({ busName: `billing-${LOCAL_PREFIX}`, logger: logger.child({ part: 'event-bus' }), webhookUrl: options.eventsWebhookUrl });
  await eventBus.start();
  cleanups.push(() => eventBus.stop());
  const eventBridge = createEventBridgeClient({ region: LOCAL_REGION, endpoint: eventBus.endpoint });
  cleanups.push(() => eventBridge.destroy());
  progress.up('events');
  return { dynamo, dynamoClient, tables, tableStreams, sqs, kinesis, eventBus, eventBridge };
}

async function startServers(options: LocalSystemOptions, cleanups: Cleanups): Promise<{ dynamo: DynamoLocalServer; sqs: LocalSqs; kinesis: LocalKinesis }> {
  const dynamoDir = join(options.dataDir, 'dynamodb');
  const started = await Promise.allSettled([
    startDynamoLocal({ ...(options.dynamoPort ? { port: options.dynamoPort } : {}), path: dynamoDir }),
    startLocalSqs({ prefix: LOCAL_PREFIX, visibilityTimeoutS: options.sqsVisibilityTimeoutS, maxReceiveCount: options.sqsMaxReceiveCount }),
    startLocalKinesis({ streamName: `${LOCAL_PREFIX}-memberships`, shardCount: options.kinesisShardCount }),
  ] as const);
  started.forEach((one, i) => {
    if (one.status !== 'fulfilled') return;
    if (i === 0) cleanups.pushFinal(() => one.value.stop());
    else cleanups.push(() => one.value.stop());
  });
  const failed = started.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failed) {
    const error: unknown = failed.reason;
    if (error instanceof DynamoLocalStartError) {
      throw new LocalStartupError(
        `${error.message.trim()} Check that "java -version" works, that no other DynamoDB Local uses ${dynamoDir}, or start over with: npm start -- --fresh`,
      );
    }
    throw error;
  }
  const [dynamo, sqs, kinesis] = started.map((e) => (e as PromiseFulfilledResult<unknown>).value) as [DynamoLocalServer, LocalSqs, LocalKinesis];
  return { dynamo, sqs, kinesis };
}

/** A table whose stream a function reads must have one (a data directory from before streams has not). */
async function streamsReadByFunctions(client: DynamoDBClient, tables: TableNames): Promise<Partial<Record<TableId, string>>> {
  const streams: Partial<Record<TableId, string>> = {};
  for (const [, manifest] of allFunctions()) {
    const trigger = manifest.trigger;
    if (trigger.kind !== 'dynamodb-stream' || streams[trigger.table]) continue;
    const arn = await latestStreamArn(client, tables[trigger.table]);
    if (!arn) throw new LocalStartupError(`${tables[trigger.table]} has no stream; start over with: npm start -- --fresh`);
    streams[trigger.table] = arn;
  }
  return streams;
}
