import { join } from 'node:path';
import { PutRecordCommand } from '@aws-sdk/client-kinesis';
import type { TableId } from '../adapters/dynamodb/table-definitions.js';
import { createHandler, type TriggerHandlers } from '../functions/handler-factories.js';
import { eventSourceCap, IN_BATCH_PARALLELISM, PROCESSOR_P99_LATENCY_MS } from '../domain/billing-day.js';
import { PROCESSOR_IDS } from '../domain/processor-budget.js';
import { allFunctions, COLLECTION_QUEUES, queuesOf, type FunctionName, type QueueId, type StreamId, type Trigger } from '../manifest/index.js';
import type { Logger } from '../runtime/logger.js';
import type { ScheduledHandler } from './collections-run.js';
import { DynamoStreamEventSource, localDynamoStreamsClient } from './dynamodb-stream-event-source.js';
import type { LocalQueue } from './emulators.js';
import type { LocalFunctionDeps } from './function-deps.js';
import type { HttpHandler } from './gateway.js';
import { KinesisEventSource, type KinesisSettlement } from './kinesis-event-source.js';
import { waitUntil, type Cleanups } from './lifecycle.js';
import type { LocalSystemOptions } from './options.js';
import { SqsEventSource, type SqsEventSourceOptions } from './sqs-event-source.js';
import type { Emulators } from './start-emulators.js';

type SqsHooks = Pick<SqsEventSourceOptions, 'around' | 'onDelivered'>;

export interface EventSourcesInput {
  readonly options: LocalSystemOptions;
  /** The pollers' logger (their per-batch lines at debug). */
  readonly logger: Logger;
  readonly emulators: Emulators;
  readonly functions: LocalFunctionDeps;
  /** The gateway's handlers, by function name: filled here with every HTTP-triggered function. */
  readonly http: Partial<Record<FunctionName, HttpHandler>>;
  /** Extra hooks on the event source of a queue (a collections run watches its queue's consumer). */
  readonly sqsHooks: Partial<Record<QueueId, SqsHooks>>;
  readonly cleanups: Cleanups;
}

export interface LocalEventSources {
  /** The schedule-triggered functions, for the scheduler. */
  readonly scheduled: readonly { readonly name: FunctionName; readonly handler: ScheduledHandler }[];
  /** Puts one record on a stream; resolves once its consumer applied it or gave up on it (undefined after 60 s). */
  putOnStream(stream: StreamId, partitionKey: string, data: string): Promise<KinesisSettlement | undefined>;
}

/** Where a table's stream mapping sends what it gives up on, and where it keeps its positions across restarts. */
interface TableStreamSettings {
  readonly onFailure: (emulators: Emulators) => LocalQueue;
  readonly checkpointFile: string;
}
const TABLE_STREAMS: Partial<Record<TableId, TableStreamSettings>> = {
  billingActivityHistory: { onFailure: (e) => e.sqs.eventsFailures, checkpointFile: 'history-stream-checkpoints.json' },
};
/** The Kinesis mappings' on-failure queues, by stream (as the stateful stack declares them). */
const STREAM_FAILURES: Record<StreamId, (emulators: Emulators) => LocalQueue> = {
  memberships: (e) => e.sqs.membershipsFailures,
};

/**
 * Lambda's triggers, locally, from the manifest (src/manifest/functions.ts): each function's
 * handler is created from its deps and put where its trigger says (sqs, kinesis and
 * dynamodb-stream: a poller shaped like Lambda's event source mapping; http: the gateway's route
 * table; schedule: the scheduler). Resolves once every poller is ready and the table streams were
 * read to their ends (a restart's backlog publishes before the runtime says it is ready).
 */
export async function startEventSources(input: EventSourcesInput): Promise<LocalEventSources> {
  const { emulators, cleanups } = input;
  const streamsClient = localDynamoStreamsClient(emulators.dynamo.endpoint);
  cleanups.push(() => streamsClient.destroy());
  const scheduled: { name: FunctionName; handler: ScheduledHandler }[] = [];
  const sqs: SqsEventSource[] = [];
  const kinesis: { stream: StreamId; source: KinesisEventSource }[] = [];
  const tableStreams: DynamoStreamEventSource[] = [];
  for (const [name, manifest] of allFunctions()) {
    const trigger: Trigger = manifest.trigger;
    const handler = createHandler(name, input.functions.depsOf(name));
    if (trigger.kind === 'http') input.http[name] = handler as TriggerHandlers['http'];
    else if (trigger.kind === 'schedule') scheduled.push({ name, handler: handler as TriggerHandlers['schedule'] });
    else if (trigger.kind === 'sqs') sqs.push(...queuesOf(trigger).map((queue) => sqsSource(input, name, queue, trigger, handler as TriggerHandlers['sqs'])));
    else if (trigger.kind === 'kinesis') kinesis.push({ stream: trigger.stream, source: kinesisSource(input, name, trigger, handler as TriggerHandlers['kinesis']) });
    else tableStreams.push(tableStreamSource(input, streamsClient, name, trigger, handler as TriggerHandlers['dynamodb-stream']));
    // A queue consumed beside the trigger (the reconciliation-job's continuations).
    const extra = manifest.alsoConsumes;
    if (extra) sqs.push(...queuesOf(extra).map((queue) => sqsSource(input, name, queue, extra, handler as unknown as TriggerHandlers['sqs'])));
  }

  // Started (and stopped, in reverse) by kind: the queue pollers, then the streams.
  for (const source of sqs) {
    source.start();
    cleanups.push(() => source.stop());
  }
  for (const source of [...kinesis.map((k) => k.source), ...tableStreams]) {
    await source.start();
    cleanups.push(() => source.stop());
  }
  await waitUntil(() => sqs.every((s) => s.isReady) && kinesis.every((k) => k.source.isReady), 15_000, 'the event source pollers did not start');
  // A table stream may hold the seed's rows: they are read (and publish nothing) before the runtime says it is ready.
  await waitUntil(() => tableStreams.every((s) => s.isReady), 120_000, 'the history stream poller did not catch up');

  return {
    scheduled,
    putOnStream: async (stream, partitionKey, data) => {
      const consumer = kinesis.find((k) => k.stream === stream)?.source;
      if (!consumer) throw new Error(`no function consumes the ${stream} stream`);
      const { client, streamName } = emulators.kinesis;
      const put = await client.send(new PutRecordCommand({ StreamName: streamName, PartitionKey: partitionKey, Data: Buffer.from(data, 'utf8') }));
      return consumer.waitFor(put.SequenceNumber!, 60_000);
    },
  };
}

/** One queue's poller: a function whose trigger names several queues has one per queue, as Lambda has one event source mapping each. */
function sqsSource(input: EventSourcesInput, name: FunctionName, queue: QueueId, trigger: Extract<Trigger, { kind: 'sqs' }>, handler: TriggerHandlers['sqs']): SqsEventSource {
  const { client, queues } = input.emulators.sqs;
  const window = trigger.maxBatchingWindowSeconds ? { maxBatchingWindowMs: trigger.maxBatchingWindowSeconds * 1000 } : {};
  const concurrency = collectionsConcurrency(input.options.processorBudget, queue);
  return new SqsEventSource({ client, queue: queues[queue], functionName: name, handler, logger: input.logger, batchSize: trigger.batchSize, concurrency, ...window, ...input.sqsHooks[queue] });
}

/** With budgets set, a collections queue gets the stack's cap of pollers (DESIGN 13); otherwise one, as before. */
function collectionsConcurrency(budget: LocalSystemOptions['processorBudget'], queue: QueueId): number {
  const processor = PROCESSOR_IDS.find((p) => COLLECTION_QUEUES[p] === queue);
  if (!budget || !processor) return 1;
  return eventSourceCap(budget.perSecond[processor], PROCESSOR_P99_LATENCY_MS, IN_BATCH_PARALLELISM);
}

function kinesisSource(input: EventSourcesInput, name: FunctionName, trigger: Extract<Trigger, { kind: 'kinesis' }>, handler: TriggerHandlers['kinesis']): KinesisEventSource {
  const { emulators } = input;
  return new KinesisEventSource({
    client: emulators.kinesis.client,
    streamName: emulators.kinesis.streamName,
    streamArn: emulators.kinesis.streamArn,
    functionName: name,
    handler,
    logger: input.logger,
    onFailure: { client: emulators.sqs.client, queue: STREAM_FAILURES[trigger.stream](emulators) },
    batchSize: trigger.batchSize,
    retryAttempts: input.options.kinesisRetryAttempts,
  });
}

function tableStreamSource(
  input: EventSourcesInput,
  client: ReturnType<typeof localDynamoStreamsClient>,
  name: FunctionName,
  trigger: Extract<Trigger, { kind: 'dynamodb-stream' }>,
  handler: TriggerHandlers['dynamodb-stream'],
): DynamoStreamEventSource {
  const { emulators } = input;
  const settings = TABLE_STREAMS[trigger.table];
  const streamArn = emulators.tableStreams[trigger.table];
  if (!settings || !streamArn) throw new Error(`no local stream mapping for the ${trigger.table} table`);
  return new DynamoStreamEventSource({
    client,
    streamArn,
    functionName: name,
    handler,
    logger: input.logger,
    onFailure: { client: emulators.sqs.client, queue: settings.onFailure(emulators) },
    batchSize: trigger.batchSize,
    retryAttempts: input.options.kinesisRetryAttempts,
    // Kept across restarts, as the event source mapping keeps its position across deploys.
    checkpointFile: join(input.options.dataDir, settings.checkpointFile),
  });
}
