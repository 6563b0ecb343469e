import { Aws, CfnOutput, Duration, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as eventsTargets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as eventSources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { DEFAULT_RECONCILIATION_MARGIN_SECONDS } from '../src/domain/reconciliation/checkpoint.js';
import type { Construct } from 'constructs';
import { allTables } from '../src/adapters/dynamodb/table-definitions.js';
import { BUSES, COLLECTION_QUEUES, environmentOf, FUNCTIONS, type FunctionManifest, QUEUES, type QueueId, queuesOf, ROUTES, SERVICES, tablesOf } from '../src/manifest/index.js';
import { eventSourceCap, IN_BATCH_PARALLELISM, intervalProblem, PROCESSOR_P99_LATENCY_MS } from '../src/domain/billing-day.js';
import { DEFAULT_BUDGET_PER_SECOND, DEFAULT_PERSON_SHARE, PROCESSOR_IDS, type ProcessorBudgetSettings, type ProcessorId } from '../src/domain/processor-budget.js';
import { DEFAULT_MAX_PAYMENT_CENTS, DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS } from '../src/runtime/config.js';
import { readSecretStatement, sendMessageStatement, tableStatements } from './access.js';
import { sidePackagesOf } from './bundling.js';
import { resourceName, retainsData, type ServicesVpc } from './config.js';
import { BillingFunction } from './constructs/billing-function.js';
import { BillingHttpApi } from './constructs/billing-http-api.js';
import { BillingMonitoring } from './constructs/billing-monitoring.js';
import { callsPrivateServices, placeInServicesVpc } from './constructs/services-vpc.js';
import { addKinesisMapping, SendOnlyQueueDestination } from './constructs/stream-event-sources.js';
import { OperatorConsole } from './constructs/operator-console.js';
import { HANDLER_NAMES, HANDLER_TIMEOUTS, type HandlerEntryResolver, type HandlerName, sourceHandlerEntry } from './handlers.js';
import { BILLING_SECRETS, type BillingStatefulStack } from './stateful-stack.js';
import { DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS } from '../src/domain/use-cases/reconciliation-gauges.js';

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
  /** The token endpoint of both services' client-credentials grant (`SERVICES_TOKEN_URL`). */
  readonly servicesTokenUrl: string;
  /** When set, the functions that call the payments or accounts service run in these subnets and security groups. */
  readonly servicesVpc?: ServicesVpc;
  /** The balance-webhook gate (`BALANCE_THRESHOLD_CENTS` of the webhook-balance-worker). */
  readonly balanceThresholdCents: number;
  /** The processors' budgets (DESIGN 13); default DEFAULT_BUDGET_PER_SECOND each. */
  readonly processorBudget?: ProcessorBudgetSettings;
  /** The JWT claim a member token's user id is read from (`USER_ID_CLAIM`; default `sub`). */
  readonly userIdClaim?: string;
  /** Which client may use which scope (`API_CLIENT_SCOPES`, checked in the api's router); absent: not checked. */
  readonly apiClientScopes?: Readonly<Record<string, readonly string[]>>;
  /** Hours a reconciliation exception may stay unresolved before its alarm (`RECONCILIATION_EXCEPTION_MAX_AGE_HOURS`; default 72). */
  readonly reconciliationExceptionMaxAgeHours?: number;
  /** The daily cap per member on debits people start (`PERSON_DAILY_DEBIT_LIMIT_CENTS`); default DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS. */
  readonly personDailyDebitLimitCents?: number;
  /** Where each handler's entry file is; defaults to `src/handlers/{name}.ts`. */
  readonly handlerEntry?: HandlerEntryResolver;
}

/** A collections queue's event source cap: its processor's budget over the p99 attempt, 8 users of a batch in flight. */
function collectionsCap(budget: ProcessorBudgetSettings | undefined, processor: ProcessorId): number {
  return eventSourceCap(budget?.perSecond[processor] ?? DEFAULT_BUDGET_PER_SECOND, PROCESSOR_P99_LATENCY_MS, IN_BATCH_PARALLELISM);
}

/** The event source's batching window, when its trigger names one. */
function batchingWindowOf(trigger: Extract<FunctionManifest['trigger'], { kind: 'sqs' }>): { maxBatchingWindow?: Duration } {
  return trigger.maxBatchingWindowSeconds ? { maxBatchingWindow: Duration.seconds(trigger.maxBatchingWindowSeconds) } : {};
}

/** The processor whose collections queue `queue` is, if it is one. */
function processorOfQueue(queue: QueueId): ProcessorId | undefined {
  return PROCESSOR_IDS.find((p) => COLLECTION_QUEUES[p] === queue);
}

/** Values of the settings a manifest can name. */
function settingValues(props: BillingStatelessStackProps): Record<string, string> {
  const budget = props.processorBudget ?? { perSecond: { stripe: DEFAULT_BUDGET_PER_SECOND, payments: DEFAULT_BUDGET_PER_SECOND }, personShare: DEFAULT_PERSON_SHARE };
  return {
    BALANCE_THRESHOLD_CENTS: String(props.balanceThresholdCents),
    MAX_PAYMENT_CENTS: String(DEFAULT_MAX_PAYMENT_CENTS),
    RECONCILIATION_MARGIN_SECONDS: String(DEFAULT_RECONCILIATION_MARGIN_SECONDS),
    STRIPE_BUDGET_PER_SECOND: String(budget.perSecond.stripe),
    PAYMENTS_BUDGET_PER_SECOND: String(budget.perSecond.payments),
    PROCESSOR_PERSON_SHARE: String(budget.personShare),
    COLLECTIONS_INTERVAL_SECONDS: String(props.collectionsRateMinutes * 60),
    USER_ID_CLAIM: props.userIdClaim ?? 'sub',
    API_CLIENT_SCOPES: JSON.stringify(props.apiClientScopes ?? {}),
    RECONCILIATION_EXCEPTION_MAX_AGE_HOURS: String(props.reconciliationExceptionMaxAgeHours ?? DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS),
    PERSON_DAILY_DEBIT_LIMIT_CENTS: String(props.personDailyDebitLimitCents ?? DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS),
  };
}

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
      collectionsStripe: stateful.collectionsStripe.queue,
      collectionsPayments: stateful.collectionsPayments.queue,
      balanceEvents: stateful.balanceEvents.queue,
      retryRuns: stateful.retryRuns.queue,
      reconciliation: stateful.reconciliation.queue,
    };

    // Each function gets the configuration its manifest names, and nothing else: the base
    // settings, its tables' names, the queues it sends to, its services, its secrets' ARNs.
    const base: Record<string, string> = {
      STAGE: stage,
      DYNAMO_REGION: Aws.REGION,
      STATUS_SHARD_COUNT: String(STATUS_SHARD_COUNT),
      PAYMENT_SHARD_COUNT: String(PAYMENT_SHARD_COUNT),
    };
    const available: Record<string, string> = {
      ...settingValues(props),
      [SERVICES.payments.urlEnv]: props.paymentsApiUrl,
      [SERVICES.accounts.urlEnv]: props.accountsApiUrl,
      [SERVICES.accounts.tokenUrlEnv]: props.servicesTokenUrl,
      [BUSES.billing.nameEnv]: stateful.eventBus.eventBusName,
    };
    for (const [id, queue] of Object.entries(queues)) available[QUEUES[id as QueueId].urlEnv] = queue.queueUrl;
    const environmentFor = (manifest: FunctionManifest): Record<string, string> => {
      const environment = { ...base };
      for (const tableId of tablesOf(manifest)) environment[allTables[tableId].envVar] = stateful.tables[tableId].tableName;
      for (const variable of environmentOf(manifest).variables) {
        if (environment[variable] !== undefined) continue;
        const value = available[variable];
        if (value === undefined) throw new Error(`no value for ${variable}`);
        environment[variable] = value;
      }
      for (const secretId of manifest.secrets ?? []) environment[BILLING_SECRETS[secretId].envVar] = stateful.secrets[secretId].secretArn;
      return environment;
    };

    const functions = {} as Record<HandlerName, BillingFunction>;
    for (const name of HANDLER_NAMES) {
      const manifest: FunctionManifest = FUNCTIONS[name];
      const billingFunction = new BillingFunction(this, `${pascalCase(name)}Function`, {
        functionName: functionNameFor(stage, name),
        description: manifest.description,
        entry: entryFor(name),
        timeout: HANDLER_TIMEOUTS[name],
        ...(manifest.memoryMb ? { memorySize: manifest.memoryMb } : {}),
        environment: environmentFor(manifest),
        sidePackages: sidePackagesOf(manifest),
        logRetention,
        retainLogs: retain,
      });
      if (manifest.reservedConcurrency !== undefined) {
        (billingFunction.function.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = manifest.reservedConcurrency;
      }
      for (const tableId of tablesOf(manifest)) {
        for (const statement of tableStatements(`${pascalCase(tableId)}Table`, stateful.tables[tableId], manifest.tables[tableId]!)) {
          billingFunction.allow(statement);
        }
      }
      for (const queueId of manifest.sendsTo ?? []) {
        const readsDepth = (manifest.readsDepthOf ?? []).includes(queueId);
        billingFunction.allow(sendMessageStatement(`SendTo${pascalCase(queueId)}`, queues[queueId].queueArn, { readsDepth }));
      }
      if (manifest.secrets && manifest.secrets.length > 0) {
        billingFunction.allow(readSecretStatement('ReadSecrets', manifest.secrets.map((id) => stateful.secrets[id].secretArn)));
      }
      if (props.servicesVpc && callsPrivateServices(manifest)) placeInServicesVpc(billingFunction, props.servicesVpc);
      if (manifest.putsEventsOn && manifest.putsEventsOn.length > 0) {
        const buses = { billing: stateful.eventBus };
        billingFunction.allow(new iam.PolicyStatement({ sid: 'PutEvents', actions: ['events:PutEvents'], resources: manifest.putsEventsOn.map((id) => buses[id].eventBusArn) }));
      }
      functions[name] = billingFunction;
    }
    this.functions = functions;

    // Event sources from each manifest's trigger. SQS: failed records are reported per item and
    // redriven to the DLQ after 5 receives. Kinesis: failed records are reported per item.
    const streams = { memberships: stateful.membershipsStream };
    for (const name of HANDLER_NAMES) {
      const trigger = FUNCTIONS[name].trigger;
      const fn = functions[name].function;
      if (trigger.kind === 'sqs') {
        // A collections queue carries one processor's presentments: its cap keeps that budget in flight (DESIGN 13).
        let caps = 0;
        for (const queueId of queuesOf(trigger)) {
          const processor = processorOfQueue(queueId);
          const cap = processor ? collectionsCap(props.processorBudget, processor) : undefined;
          caps += cap ?? 0;
          fn.addEventSource(
            new eventSources.SqsEventSource(stateful[queueId].queue, {
              batchSize: trigger.batchSize,
              reportBatchItemFailures: true,
              ...(cap ? { maxConcurrency: cap } : {}),
              ...batchingWindowOf(trigger),
            }),
          );
        }
        if (caps > 0) reserveForCaps(name, fn, caps);
      } else if (trigger.kind === 'kinesis') {
        addKinesisMapping(functions[name], fn, streams[trigger.stream], streamMapping(trigger, stateful.membershipsFailures));
      } else if (trigger.kind === 'dynamodb-stream') {
        const failures = { billingActivityHistory: stateful.eventsFailures } as const;
        if (!(trigger.table in failures)) throw new Error(`no on-failure queue for the ${trigger.table} stream`);
        const { onFailure, ...mapping } = streamMapping(trigger, failures[trigger.table as keyof typeof failures]);
        fn.addEventSource(new eventSources.DynamoEventSource(stateful.tables[trigger.table], { ...mapping, onFailure: new SendOnlyQueueDestination(onFailure) }));
        // The mapping's grant (CDK grantStreamRead): DescribeStream, GetShardIterator, GetRecords on this table's stream only, and ListStreams.
        Validations.of(functions[name].role).acknowledge({
          id: 'AwsSolutions-IAM5[Resource::*]',
          reason:
            'dynamodb:ListStreams, which Lambda needs to poll a DynamoDB stream, supports no resource-level permission (the IAM service authorization reference lists no resource type for it): only * works. Every other stream action is on this table\'s stream ARN.',
        });
      }
    }

    // A queue a function consumes beside its trigger: one message per invocation, failures per item, the DLQ after 5 receives.
    for (const name of HANDLER_NAMES) {
      const extra = (FUNCTIONS[name] as FunctionManifest).alsoConsumes;
      for (const queue of extra ? queuesOf(extra) : []) {
        functions[name].function.addEventSource(new eventSources.SqsEventSource(stateful[queue].queue, { batchSize: extra!.batchSize, reportBatchItemFailures: true }));
      }
    }

    const scheduled = HANDLER_NAMES.filter((name) => FUNCTIONS[name].trigger.kind === 'schedule');
    if (scheduled.join(',') !== 'collections-job,reconciliation-job') throw new Error(`the schedules target collections-job and reconciliation-job; the manifest schedules ${scheduled.join(', ')}`);
    const collectionsJob = functions['collections-job'].function;
    // The paced planner plans one interval of the budget, delays at most 900 s, and is single-flight (DESIGN 13).
    const intervalIssue = intervalProblem(props.collectionsRateMinutes * 60, FUNCTIONS['collections-job'].timeoutSeconds);
    if (intervalIssue) throw new Error(intervalIssue);
    new events.Rule(this, 'CollectionsSchedule', {
      ruleName: resourceName(stage, 'collections-schedule'),
      description: `Runs ${functionNameFor(stage, 'collections-job')} every ${props.collectionsRateMinutes} minutes`,
      schedule: events.Schedule.rate(Duration.minutes(props.collectionsRateMinutes)),
      // The next scheduled run is the retry; a failed run raises the errors alarm.
      targets: [new eventsTargets.LambdaFunction(collectionsJob, { retryAttempts: 0 })],
    });
    collectionsJob.configureAsyncInvoke({ retryAttempts: 0 });

    // DESIGN 14: yesterday (UTC) on every rail, once the processors' reports for it are complete.
    new events.Rule(this, 'ReconciliationSchedule', {
      ruleName: resourceName(stage, 'reconciliation-schedule'),
      description: `Runs ${functionNameFor(stage, 'reconciliation-job')} daily at 06:00 UTC`,
      schedule: events.Schedule.cron({ minute: '0', hour: '6' }),
      targets: [new eventsTargets.LambdaFunction(functions['reconciliation-job'].function, { retryAttempts: 2 })],
    });

    // The operator console, served by CloudFront; the API allows its origin (CORS).
    this.console = new OperatorConsole(this, 'OperatorConsole', { stage, retain });
    this.api = new BillingHttpApi(this, 'BillingApi', {
      apiName: resourceName(stage, 'billing-api'),
      corsOrigins: [this.console.origin],
      jwtIssuer: props.jwtIssuer,
      jwtAudience: props.jwtAudience,
      routes: ROUTES,
      targets: Object.fromEntries(HANDLER_NAMES.filter((name) => FUNCTIONS[name].trigger.kind === 'http').map((name) => [name, functions[name].function])),
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
      eventsPublisher: functions['events-publisher'].function,
      collectionsRateMinutes: props.collectionsRateMinutes,
      ...(props.reconciliationExceptionMaxAgeHours !== undefined ? { reconciliationExceptionMaxAgeHours: props.reconciliationExceptionMaxAgeHours } : {}),
      queues: {
        'collections-stripe-dlq': stateful.collectionsStripe.deadLetterQueue,
        'collections-payments-dlq': stateful.collectionsPayments.deadLetterQueue,
        'balance-events-dlq': stateful.balanceEvents.deadLetterQueue,
        'retry-runs-dlq': stateful.retryRuns.deadLetterQueue,
        'reconciliation-dlq': stateful.reconciliation.deadLetterQueue,
        'memberships-failures': stateful.membershipsFailures,
        'billing-events-failures': stateful.eventsFailures,
      },
    });
  }
}

export function functionNameFor(stage: string, name: HandlerName): string {
  return resourceName(stage, `billing-${name}`);
}

/**
 * A stream's event source mapping, Kinesis or DynamoDB alike: from the oldest record, partial batch
 * failures, bisect on error, the manifest's retries, and a poison record leaves the shard after its
 * maximum age at the latest (its metadata to `onFailure`, which it may only send to), never blocking it for good.
 */
function streamMapping(
  trigger: { readonly batchSize: number; readonly retryAttempts: number; readonly maxRecordAgeHours: number },
  onFailure: sqs.IQueue,
) {
  return {
    startingPosition: lambda.StartingPosition.TRIM_HORIZON,
    batchSize: trigger.batchSize,
    reportBatchItemFailures: true,
    bisectBatchOnError: true,
    retryAttempts: trigger.retryAttempts,
    maxRecordAge: Duration.hours(trigger.maxRecordAgeHours),
    onFailure,
  };
}

/**
 * Reserved for the sum of its sources' caps, so other functions cannot starve it; a reserve below
 * that sum would throttle what the caps allow (a synth check).
 */
function reserveForCaps(name: HandlerName, fn: lambda.Function, caps: number): void {
  const cfn = fn.node.defaultChild as lambda.CfnFunction;
  cfn.reservedConcurrentExecutions ??= caps;
  if (typeof cfn.reservedConcurrentExecutions === 'number' && cfn.reservedConcurrentExecutions < caps) {
    throw new Error(`${name}: reserved concurrency ${cfn.reservedConcurrentExecutions} is below the sum of its event sources' maximumConcurrency ${caps}`);
  }
}

function pascalCase(id: string): string {
  return id
    .split(/[-_]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
