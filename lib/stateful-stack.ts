import { Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as snsSubscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { allTables, type TableId, tableNamesFor } from '../src/adapters/dynamodb/table-definitions.js';
import { resourceName, retainsData } from './config.js';
import { createQueueDepthAlarm } from './constructs/alarms.js';
import { createBillingTable } from './constructs/billing-table.js';
import { createSecureQueue, WorkQueue } from './constructs/work-queue.js';
import { EVENT_SOURCE } from '../src/domain/published-events.js';
import { SECRETS, type SecretId } from '../src/manifest/index.js';
import { consumerOf, visibilityTimeoutFor } from './handlers.js';

export interface BillingStatefulStackProps extends StackProps {
  readonly stage: string;
  readonly alarmEmail?: string;
}

/**
 * Secrets the functions read at cold start (src/manifest/resources.ts); the stack creates them,
 * operators set their values. Each function gets `{env}_ARN` for the secrets its manifest names.
 */
export const BILLING_SECRETS = Object.fromEntries(
  (Object.keys(SECRETS) as SecretId[]).map((id) => [id, { envVar: `${SECRETS[id].env}_ARN`, name: SECRETS[id].name, holds: SECRETS[id].holds }]),
) as Record<SecretId, { readonly envVar: string; readonly name: string; readonly holds: string }>;

export type { SecretId };

export function secretNameFor(stage: string, id: SecretId): string {
  return `billing/${stage}/${BILLING_SECRETS[id].name}`;
}

/** Everything that holds data: tables, stream, queues, secrets, and the alarms on parked work. */
export class BillingStatefulStack extends Stack {
  readonly tables: Record<TableId, dynamodb.Table>;
  readonly membershipsStream: kinesis.Stream;
  /** The collections queues, one per processor (DESIGN 13), each with its DLQ and its alarm. */
  readonly collectionsStripe: WorkQueue;
  readonly collectionsPayments: WorkQueue;
  readonly balanceEvents: WorkQueue;
  /** Items of bulk retry runs, for the retry-run-worker. */
  readonly retryRuns: WorkQueue;
  /** The reconciliation-job's continuations (DESIGN 14). */
  readonly reconciliation: WorkQueue;
  /** Kinesis on-failure destination for memberships records the consumer gave up on. */
  readonly membershipsFailures: sqs.Queue;
  /** The bus of docs/design.md section 11 (`billing-<stage>`), and its archive for replays. */
  readonly eventBus: events.EventBus;
  readonly eventArchive: events.Archive;
  /** The history stream's on-failure destination: audit rows the events-publisher gave up on. */
  readonly eventsFailures: sqs.Queue;
  readonly secrets: Record<SecretId, secretsmanager.Secret>;
  readonly alarmTopic: sns.Topic;

  constructor(scope: Construct, id: string, props: BillingStatefulStackProps) {
    super(scope, id, props);
    const { stage } = props;
    const retain = retainsData(stage);
    const removalPolicy = retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      topicName: resourceName(stage, 'billing-alarms'),
      enforceSSL: true,
    });
    if (props.alarmEmail) {
      this.alarmTopic.addSubscription(new snsSubscriptions.EmailSubscription(props.alarmEmail));
    }

    const tableNames = tableNamesFor(stage);
    const tables = {} as Record<TableId, dynamodb.Table>;
    for (const tableId of Object.keys(allTables) as TableId[]) {
      tables[tableId] = createBillingTable(this, `${pascalCase(tableId)}Table`, {
        definition: allTables[tableId],
        tableName: tableNames[tableId],
        retain,
      });
    }
    this.tables = tables;

    this.membershipsStream = new kinesis.Stream(this, 'MembershipsStream', {
      streamName: resourceName(stage, 'memberships'),
      streamMode: kinesis.StreamMode.ON_DEMAND,
      // The AWS managed key (aws/kinesis), as cdk-nag KDS3 asks.
      encryption: kinesis.StreamEncryption.MANAGED,
      // Long enough to replay a week of membership changes after a consumer outage.
      retentionPeriod: Duration.days(7),
      removalPolicy,
    });

    this.collectionsStripe = new WorkQueue(this, 'CollectionsStripeQueue', {
      queueName: resourceName(stage, 'collections-stripe'),
      visibilityTimeout: visibilityTimeoutFor(consumerOf('collectionsStripe')),
      retain,
      alarmTopic: this.alarmTopic,
    });
    this.collectionsPayments = new WorkQueue(this, 'CollectionsPaymentsQueue', {
      queueName: resourceName(stage, 'collections-payments'),
      visibilityTimeout: visibilityTimeoutFor(consumerOf('collectionsPayments')),
      retain,
      alarmTopic: this.alarmTopic,
    });
    this.balanceEvents = new WorkQueue(this, 'BalanceEventsQueue', {
      queueName: resourceName(stage, 'balance-events'),
      visibilityTimeout: visibilityTimeoutFor(consumerOf('balanceEvents')),
      retain,
      alarmTopic: this.alarmTopic,
    });

    this.retryRuns = new WorkQueue(this, 'RetryRunsQueue', {
      queueName: resourceName(stage, 'retry-runs'),
      visibilityTimeout: visibilityTimeoutFor(consumerOf('retryRuns')),
      retain,
      alarmTopic: this.alarmTopic,
    });

    this.reconciliation = new WorkQueue(this, 'ReconciliationQueue', {
      queueName: resourceName(stage, 'reconciliation'),
      visibilityTimeout: visibilityTimeoutFor(consumerOf('reconciliation')),
      retain,
      alarmTopic: this.alarmTopic,
    });

    const failuresName = resourceName(stage, 'memberships-failures');
    this.membershipsFailures = createSecureQueue(this, 'MembershipsFailuresQueue', {
      queueName: failuresName,
      retentionPeriod: Duration.days(14),
      removalPolicy,
    });
    Validations.of(this.membershipsFailures).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter destination of the memberships Kinesis event source mapping (it receives batch metadata, not redrivable work); nothing consumes it, so a DLQ behind it would never be used. Its depth is alarmed instead.',
    });
    createQueueDepthAlarm(this, 'MembershipsFailuresAlarm', {
      alarmTopic: this.alarmTopic,
      queue: this.membershipsFailures,
      alarmName: `${failuresName}-not-empty`,
      description:
        'The memberships consumer gave up on a Kinesis batch (retries or record age exhausted); the message holds the shard and sequence numbers to replay.',
    });

    // Events out (docs/design.md section 11): the bus the rest of the business subscribes to, with
    // every billing event archived so a consumer that missed some can have them replayed.
    this.eventBus = new events.EventBus(this, 'BillingEventBus', {
      eventBusName: eventBusNameFor(stage),
      description: `Billing events (${stage}): source "${EVENT_SOURCE}", detail-types billing.*; detail.event_id is stable across redeliveries and replays`,
    });
    this.eventArchive = this.eventBus.archive('BillingEventArchive', {
      archiveName: `${eventBusNameFor(stage)}-archive`,
      description: 'Every billing event, for replays to a consumer (docs/runbook.md)',
      eventPattern: { source: [EVENT_SOURCE] },
      retention: Duration.days(retain ? 365 : 30),
    });
    const eventsFailuresName = resourceName(stage, 'billing-events-failures');
    this.eventsFailures = createSecureQueue(this, 'EventsFailuresQueue', {
      queueName: eventsFailuresName,
      retentionPeriod: Duration.days(14),
      removalPolicy,
    });
    Validations.of(this.eventsFailures).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the on-failure destination of the history stream event source mapping (it receives batch metadata: shard and sequence numbers of the audit rows not published); nothing consumes it, so a DLQ behind it would never be used. Its depth is alarmed instead.',
    });
    createQueueDepthAlarm(this, 'EventsFailuresAlarm', {
      alarmTopic: this.alarmTopic,
      queue: this.eventsFailures,
      alarmName: `${eventsFailuresName}-not-empty`,
      description:
        'The events-publisher gave up on history stream records (retries or record age exhausted): those audit rows were not published. The message holds the shard and sequence numbers; the log line "history row not publishable" names each row.',
    });

    const secrets = {} as Record<SecretId, secretsmanager.Secret>;
    for (const secretId of Object.keys(BILLING_SECRETS) as SecretId[]) {
      const secret = new secretsmanager.Secret(this, `${pascalCase(secretId)}Secret`, {
        secretName: secretNameFor(stage, secretId),
        description: `${BILLING_SECRETS[secretId].holds} (${stage}); generated placeholder until an operator sets it`,
        // Recognisably unset: functions outside dev refuse to start on it (src/runtime/config.ts isPlaceholderSecret).
        generateSecretString: { secretStringTemplate: JSON.stringify({ placeholder: 'set the real value' }), generateStringKey: 'random' },
        removalPolicy,
      });
      Validations.of(secret).acknowledge({
        id: 'AwsSolutions-SMG4',
        reason:
          'The value is issued by a third party (Stripe or the ACH / balance provider) and is rotated in that provider together with a manual put-secret-value; a rotation Lambda cannot mint a new value.',
      });
      secrets[secretId] = secret;
    }
    this.secrets = secrets;
  }
}

/** The EventBridge bus of a stage: `billing-<stage>` (docs/design.md section 11). */
export function eventBusNameFor(stage: string): string {
  return `billing-${stage}`;
}

function pascalCase(id: string): string {
  return id.charAt(0).toUpperCase() + id.slice(1);
}
