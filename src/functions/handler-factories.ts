import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyResultV2,
  Context,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  ScheduledEvent,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';
import { createAchHandler } from '../handlers/ach-handler.js';
import { createApiHandler } from '../handlers/api.js';
import { createBalanceWebhookHandler } from '../handlers/balance-webhook.js';
import { createBatchWorkerHandler } from '../handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../handlers/collections-job.js';
import { createEventsPublisherHandler } from '../handlers/events-publisher.js';
import { createMembershipsConsumerHandler } from '../handlers/memberships-consumer.js';
import { createRetryRunWorkerHandler } from '../handlers/retry-run-worker.js';
import { createReconciliationJobHandler } from '../handlers/reconciliation-job.js';
import { createStripeWebhookHandler } from '../handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../handlers/webhook-balance-worker.js';
import type { FUNCTIONS, FunctionName } from '../manifest/index.js';

/** The handler each trigger kind invokes: the event it delivers and the answer it reads. */
export interface TriggerHandlers {
  readonly http: (event: APIGatewayProxyEventV2, context?: Context) => Promise<APIGatewayProxyResultV2>;
  readonly schedule: (event: ScheduledEvent, context?: Context) => Promise<unknown>;
  readonly sqs: (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse | void>;
  readonly kinesis: (event: KinesisStreamEvent, context?: Context) => Promise<KinesisStreamBatchResponse | void>;
  readonly 'dynamodb-stream': (event: DynamoDBStreamEvent, context?: Context) => Promise<DynamoDBBatchResponse | void>;
}

/** The handler a function's manifest trigger calls for. */
export type HandlerOf<F extends FunctionName> = TriggerHandlers[(typeof FUNCTIONS)[F]['trigger']['kind']];

/**
 * Every function's handler factory, by manifest name: the local runtime (`npm start`) creates
 * each function from this table, so a new function is one line here and none in src/local.
 * Never imported by a Lambda entry (each entry imports only its own handler, for its bundle).
 */
export const HANDLER_FACTORIES = {
  'collections-job': createCollectionsJobHandler,
  'batch-worker': createBatchWorkerHandler,
  'webhook-balance-worker': createBalanceWorkerHandler,
  'ach-handler': createAchHandler,
  'memberships-consumer': createMembershipsConsumerHandler,
  'stripe-webhook': createStripeWebhookHandler,
  api: createApiHandler,
  'balance-webhook': createBalanceWebhookHandler,
  'retry-run-worker': createRetryRunWorkerHandler,
  'events-publisher': createEventsPublisherHandler,
  'reconciliation-job': createReconciliationJobHandler,
} as const satisfies { readonly [F in FunctionName]: (deps: never) => HandlerOf<F> };

/** What a function's handler factory is built from (AppDeps, or the events-publisher's own). */
export type FactoryDepsOf<F extends FunctionName> = Parameters<(typeof HANDLER_FACTORIES)[F]>[0];

/** A function's handler, created from its deps. */
export function createHandler<F extends FunctionName>(name: F, deps: FactoryDepsOf<F>): HandlerOf<F> {
  return (HANDLER_FACTORIES[name] as (deps: FactoryDepsOf<F>) => HandlerOf<F>)(deps);
}
