import { allTables, type TableId } from '../adapters/dynamodb/table-definitions.js';
import { FUNCTIONS, type FunctionManifest, type FunctionName, type TableGrant, type Trigger } from './functions.js';
import { BUSES, QUEUES, SECRETS, SERVICES, type QueueId, type ServiceEntry } from './resources.js';

export * from './functions.js';
export * from './resources.js';
export * from './routes.js';

/** The tables a function is granted, in a stable order. */
export function tablesOf(manifest: FunctionManifest): TableId[] {
  return (Object.keys(allTables) as TableId[]).filter((id) => manifest.tables[id] !== undefined);
}

export function grantOf(manifest: FunctionManifest, table: TableId): TableGrant | undefined {
  return manifest.tables[table];
}

/**
 * The environment variables a function reads beyond the base ones (STAGE, DYNAMO_REGION, shard
 * counts, LOG_LEVEL): its tables' names, the URLs of the queues it sends to, its services' URLs,
 * their token endpoint, its settings, the names of the buses it puts on; and, by name, the secrets it resolves (the CDK sets `{name}_ARN`).
 */
export function environmentOf(manifest: FunctionManifest): { readonly variables: string[]; readonly secrets: string[] } {
  const variables = [
    ...tablesOf(manifest).map((id) => allTables[id].envVar),
    ...(manifest.sendsTo ?? []).map((id) => QUEUES[id].urlEnv),
    ...new Set((manifest.services ?? []).flatMap((id) => {
      const service: ServiceEntry = SERVICES[id];
      return [service.urlEnv, service.tokenUrlEnv].filter((name): name is string => name !== undefined);
    })),
    ...(manifest.settings ?? []),
    ...(manifest.putsEventsOn ?? []).map((id) => BUSES[id].nameEnv),
  ];
  return { variables, secrets: (manifest.secrets ?? []).map((id) => SECRETS[id].env) };
}

/** The queues an SQS trigger consumes, each by its own event source; none for other triggers. */
export function queuesOf(trigger: Trigger): readonly QueueId[] {
  if (trigger.kind !== 'sqs') return [];
  return typeof trigger.queue === 'string' ? [trigger.queue] : trigger.queue;
}

/** Every function, with its manifest. */
export function allFunctions(): [FunctionName, FunctionManifest][] {
  return Object.entries(FUNCTIONS) as [FunctionName, FunctionManifest][];
}
