import { Aws, CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventsTargets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as eventSources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { allTables, type TableId } from '../src/adapters/dynamodb/table-definitions.js';
import { readSecretStatement, sendMessageStatement, tableStatements } from './access.js';
import { API_ROUTES } from '../src/runtime/api-routes.js';
import { resourceName, retainsData } from './config.js';
import { BillingFunction } from './constructs/billing-function.js';
import { BillingHttpApi } from './constructs/billing-http-api.js';
import { BillingMonitoring } from './constructs/billing-monitoring.js';
import { OperatorConsole } from './constructs/operator-console.js';
import { FUNCTION_ACCESS, type QueueId } from './function-access.js';
import { HANDLER_NAMES, HANDLER_TIMEOUTS, type HandlerEntryResolver, type HandlerName, sourceHandlerEntry } from './handlers.js';
import { BILLING_SECRETS, type BillingStatefulStack, type SecretId } from './stateful-stack.js';

export const STATUS_SHARD_COUNT = 16;
export const PAYMENT_SHARD_COUNT = 8;

export interface BillingStatelessStackProps extends StackProps {
  readonly stage: string;
  readonly stateful: BillingStatefulStack;
  readonly collectionsRateMinutes: number;
  readonly jwtIssuer: string;
  readonly jwtAudience: readonly string[];
  readonly paymentsApiUrl: string;
  readonly accountsApiUrl: string;
  /** The balance-webhook gate (`BALANCE_THRESHOLD_CENTS` of the webhook-balance-worker). */
  readonly balanceThresholdCents: number;
  /** Where each handler's entry file is; defaults to `src/handlers/{name}.ts`. */
  readonly handlerEntry?: HandlerEntryResolver;
}

const DESCRIPTIONS: Record<HandlerName, string> = {
  'collections-job': 'Finds due billing work on the status index and enqueues it',
  'batch-worker': 'Runs one collection attempt per collections-queue message',
  'webhook-balance-worker': 'Collects a due record when a balance update opens the balance gate',
  'ach-handler': 'Applies signed ACH settlement, return, refund and chargeback outcomes',
  'memberships-consumer': 'Applies membership changes from the memberships Kinesis stream',
  'stripe-webhook': 'Claims and applies signed Stripe events',
  'api': 'Billing HTTP API (/v1) and the balance webhook',
};

/** Settings only some functions read, by function. */
function functionSettings(name: HandlerName, props: BillingStatelessStackProps): Record<string, string> {
  return name === 'webhook-balance-worker' ? { BALANCE_THRESHOLD_CENTS: String(props.balanceThresholdCents) } : {};
}

const MEMORY_MB: Partial<Record<HandlerName, number>> = { 'collections-job': 1024, 'api': 1024 };

/** Functions, their triggers, the HTTP API, the schedule, and monitoring; holds no data. */
export class BillingStatelessStack extends Stack {
  readonly functions: Record<HandlerName, BillingFunction>;
  readonly api: BillingHttpApi;
  readonly console: OperatorConsole;
  readonly monitoring: BillingMonitoring;

  constructor(scope: Construct, id: string, props: BillingStatelessStackProps) {
    super(scope, id, props);
    const { stage, stateful } = props;
    const retain = retainsData(stage);
    const logRetention = retain ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.TWO_WEEKS;
    const entryFor = props.handlerEntry ?? sourceHandlerEntry;
    const queues: Record<QueueId, { queueUrl: string; queueArn: string }> = {
      collections: stateful.collections.queue,
      balanceEvents: stateful.balanceEvents.queue,
    };

    // Every function gets the full configuration (names and ARNs are not secrets, and one
    // config schema can validate them all at cold start); IAM decides what each may touch.
    const environment: Record<string, string> = {
      STAGE: stage,
      DYNAMO_REGION: Aws.REGION,
      STATUS_SHARD_COUNT: String(STATUS_SHARD_COUNT),
      PAYMENT_SHARD_COUNT: String(PAYMENT_SHARD_COUNT),
      COLLECTIONS_QUEUE_URL: stateful.collections.queue.queueUrl,
      BALANCE_EVENTS_QUEUE_URL: stateful.balanceEvents.queue.queueUrl,
      PAYMENTS_API_URL: props.paymentsApiUrl,
      ACCOUNTS_API_URL: props.accountsApiUrl,
    };
    for (const tableId of Object.keys(allTables) as TableId[]) {
      environment[allTables[tableId].envVar] = stateful.tables[tableId].tableName;
    }
    for (const secretId of Object.keys(BILLING_SECRETS) as SecretId[]) {
      environment[BILLING_SECRETS[secretId].envVar] = stateful.secrets[secretId].secretArn;
    }

    const functions = {} as Record<HandlerName, BillingFunction>;
    for (const name of HANDLER_NAMES) {
      const billingFunction = new BillingFunction(this, `${pascalCase(name)}Function`, {
        functionName: functionNameFor(stage, name),
        description: DESCRIPTIONS[name],
        entry: entryFor(name),
        timeout: HANDLER_TIMEOUTS[name],
        ...(MEMORY_MB[name] ? { memorySize: MEMORY_MB[name] } : {}),
        environment: { ...environment, ...functionSettings(name, props) },
        logRetention,
        retainLogs: retain,
      });
      const access = FUNCTION_ACCESS[name];
      for (const [tableId, tableAccess] of Object.entries(access.tables) as [TableId, NonNullable<(typeof access.tables)[TableId]>][]) {
        for (const statement of tableStatements(`${pascalCase(tableId)}Table`, stateful.tables[tableId], tableAccess)) {
          billingFunction.allow(statement);
        }
      }
      for (const queueId of access.sendsTo ?? []) {
        billingFunction.allow(sendMessageStatement(`SendTo${pascalCase(queueId)}`, queues[queueId].queueArn));
      }
      if (access.secrets && access.secrets.length > 0) {
        billingFunction.allow(readSecretStatement('ReadSecrets', access.secrets.map((id) => stateful.secrets[id].secretArn)));
      }
      functions[name] = billingFunction;
    }
    this.functions = functions;

    // SQS consumers: failed records are reported per item and redriven to the DLQ after 5 receives.
    for (const [consumer, queue] of [
      ['batch-worker', stateful.collections.queue],
      ['webhook-balance-worker', stateful.balanceEvents.queue],
    ] as const) {
      functions[consumer].function.addEventSource(
        new eventSources.SqsEventSource(queue, { batchSize: 10, reportBatchItemFailures: true }),
      );
    }

    functions['memberships-consumer'].function.addEventSource(
      new eventSources.KinesisEventSource(stateful.membershipsStream, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        reportBatchItemFailures: true,
        bisectBatchOnError: true,
        retryAttempts: 10,
        // A poison record leaves the shard after a day at the latest, never blocking it for good.
        maxRecordAge: Duration.hours(24),
        onFailure: new eventSources.SqsDlq(stateful.membershipsFailures),
      }),
    );

    const collectionsJob = functions['collections-job'].function;
    new events.Rule(this, 'CollectionsSchedule', {
      ruleName: resourceName(stage, 'collections-schedule'),
      description: `Runs ${functionNameFor(stage, 'collections-job')} every ${props.collectionsRateMinutes} minutes`,
      schedule: events.Schedule.rate(Duration.minutes(props.collectionsRateMinutes)),
      // The next scheduled run is the retry; a failed run raises the errors alarm.
      targets: [new eventsTargets.LambdaFunction(collectionsJob, { retryAttempts: 0 })],
    });
    collectionsJob.configureAsyncInvoke({ retryAttempts: 0 });

    // The operator console, served by CloudFront; the API allows its origin (CORS).
    this.console = new OperatorConsole(this, 'OperatorConsole', { stage, retain });
    this.api = new BillingHttpApi(this, 'BillingApi', {
      apiName: resourceName(stage, 'billing-api'),
      corsOrigins: [this.console.origin],
      jwtIssuer: props.jwtIssuer,
      jwtAudience: props.jwtAudience,
      routes: API_ROUTES,
      targets: {
        'api': functions.api.function,
        'stripe-webhook': functions['stripe-webhook'].function,
        'ach-handler': functions['ach-handler'].function,
      },
      logRetention,
      retainLogs: retain,
    });
    this.console.deploy(this.api.httpApi.apiEndpoint);
    new CfnOutput(this, 'ConsoleUrl', { value: this.console.origin, description: 'The operator console (sign in with an operator JWT)' });
    new CfnOutput(this, 'ApiUrl', { value: this.api.httpApi.apiEndpoint, description: 'The HTTP API; its OpenAPI document is generated by npm start at /openapi.json' });

    const functionsByName = {} as Record<HandlerName, lambda.IFunction>;
    for (const name of HANDLER_NAMES) functionsByName[name] = functions[name].function;
    this.monitoring = new BillingMonitoring(this, 'Monitoring', {
      stage,
      alarmTopic: stateful.alarmTopic,
      functions: functionsByName,
      membershipsConsumer: functions['memberships-consumer'].function,
      collectionsRateMinutes: props.collectionsRateMinutes,
      queues: {
        'collections-dlq': stateful.collections.deadLetterQueue,
        'balance-events-dlq': stateful.balanceEvents.deadLetterQueue,
        'memberships-failures': stateful.membershipsFailures,
      },
    });
  }
}

export function functionNameFor(stage: string, name: HandlerName): string {
  return resourceName(stage, `billing-${name}`);
}

function pascalCase(id: string): string {
  return id
    .split(/[-_]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
