import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { allTables } from '../adapters/dynamodb/table-definitions.js';
import { BUSES, FUNCTIONS } from '../manifest/index.js';
import { createEventBridgeClient, EventBridgePublisher } from '../adapters/eventbridge/event-bus.js';
import { eventIdOf } from '../adapters/eventbridge/event-id.js';
import type { EventsPublisherDeps } from '../handlers/events-publisher.js';
import { loadBaseConfig, loadRequired } from './config.js';
import { builtOnce } from './entry.js';
import { createLogger } from './logger.js';
import { assertWiring } from './wiring/check.js';
import type { Wiring } from './wiring/types.js';

/**
 * The events-publisher's cold start (its manifest: no table, no secret, no service, one bus): the
 * entry's wiring is checked against the manifest like every function's (it names no adapter), and
 * only the bus client is built (`EVENT_BUS_NAME`, required; `EVENTBRIDGE_ENDPOINT` for a local bus).
 */
export function eventsPublisherDeps(wiring: Wiring = {}, env: NodeJS.ProcessEnv = process.env): EventsPublisherDeps {
  assertWiring('events-publisher', FUNCTIONS['events-publisher'], wiring);
  const base = loadBaseConfig(env);
  const busName = loadRequired(env, [BUSES.billing.nameEnv] as const)[BUSES.billing.nameEnv];
  const client = createEventBridgeClient({ region: base.DYNAMO_REGION, endpoint: env.EVENTBRIDGE_ENDPOINT || undefined });
  return {
    logger: createLogger({ level: base.LOG_LEVEL, base: { fn: 'events-publisher', stage: base.STAGE } }),
    publisher: new EventBridgePublisher(client, busName),
    eventIdOf,
    // Only names the table in log lines: the function reads its stream, never its items.
    historyTableName: allTables.billingActivityHistory.baseName,
  };
}

/** The events-publisher's Lambda `handler` (src/functions/events-publisher.ts): configuration parsed once per cold start (a missing bus name fails it). */
export function eventsPublisherEntry(
  create: (deps: EventsPublisherDeps) => (event: DynamoDBStreamEvent, context?: Context) => Promise<DynamoDBBatchResponse>,
  wiring: Wiring,
): (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse> {
  return builtOnce(async () => eventsPublisherDeps(wiring), create);
}
