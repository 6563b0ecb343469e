import { allTables } from '../adapters/dynamodb/table-definitions.js';
import { BUSES } from '../manifest/index.js';
import { createEventBridgeClient, EventBridgePublisher } from '../adapters/eventbridge/event-bus.js';
import { eventIdOf } from '../adapters/eventbridge/event-id.js';
import type { EventsPublisherDeps } from '../handlers/events-publisher.js';
import { loadBaseConfig, loadRequired } from './config.js';
import { createLogger } from './logger.js';

/**
 * The events-publisher's cold start (its manifest: no table, no secret, one bus): it builds only
 * the bus client (`EVENT_BUS_NAME`, required; `EVENTBRIDGE_ENDPOINT` for a local bus).
 */
export function eventsPublisherDeps(env: NodeJS.ProcessEnv = process.env): EventsPublisherDeps {
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
