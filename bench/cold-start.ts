import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import Stripe from 'stripe';
import { createDynamoClient } from '../src/adapters/dynamodb/client.js';
import { createAllTables } from '../src/adapters/dynamodb/create-tables.js';
import { allTables, tableNamesFor, type TableNames } from '../src/adapters/dynamodb/table-definitions.js';
import { historyItem } from '../src/adapters/dynamodb/billing-item.js';
import { historyRowOf } from '../src/domain/billing-record.js';
import { formatInstant } from '../src/domain/time.js';
import { signPayload } from '../src/handlers/shared/signature.js';
import { BUSES, environmentOf, FUNCTIONS, type FunctionManifest, type FunctionName, QUEUES, SECRETS, SERVICES, tablesOf } from '../src/manifest/index.js';
import { LocalEventBus } from '../src/local/event-bus.js';
import { dynamoStores } from '../src/runtime/compose.js';
import { createLogger } from '../src/runtime/logger.js';
import { buildBareOneFile, bundle as buildBundle, buildBundles, type Bundle } from './bundles.js';
import { LocalSecretsManager } from './local-secrets-manager.js';
import { replaySource, RequestRecorder, wavesOf, type Wave } from './request-replay.js';

const run = promisify(execFile);

/** A failed sample names its bundle and the error's last lines, not the minified source around it. */
async function runOrExplain(...args: Parameters<typeof run>): Promise<void> {
  try {
    await run(...args);
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '');
    const lines = stderr.split('\n').filter((l) => l.length < 400 && l.trim() !== '');
    throw new Error(`cold start sample failed (${String(args[1]?.[3] ?? '')}): ${lines.slice(-6).join(' | ')}`);
  }
}

/**
 * Cold start per function, the way Lambda starts one: a fresh `node` process imports the bundle
 * as the CDK synthesizes it (bench/bundles.ts), with the environment the CDK gives that function
 * (from its manifest; secrets by ARN from a local Secrets Manager, DynamoDB Local as endpoint,
 * NODE_OPTIONS as the function has them), then makes its first call: the exported `handler` on a
 * realistic event that reads (and for some functions writes) DynamoDB Local. The floor is a bare
 * DynamoDB client bundle whose handler makes one GetItem, measured in the same rounds. Each round
 * runs every subject once, in a rotated order; figures are medians.
 */

export interface ColdStartFigure {
  readonly name: string;
  readonly bytes: number;
  readonly importMs: number;
  readonly firstCallMs: number;
  readonly totalMs: number;
}

/** The function's first call's AWS requests made by bare SDK clients (bench/request-replay.ts). */
export interface SameRequestsFigure extends ColdStartFigure {
  readonly requests: number;
  readonly waves: number;
  /** The function's total over this floor's. */
  readonly ratio: number;
}

export interface ColdStartResult {
  readonly method: string;
  readonly runs: number;
  readonly baseline: ColdStartFigure & { readonly name: 'bare DynamoDB client' };
  /**
   * The same bare client in one file, the AWS SDK's credential providers inline: how every bundle
   * was built before they became side packages (lib/bundling.ts). Not the target's floor (that is
   * the bare client built as the functions are); it shows what the side packages take off a cold
   * start, in the same rounds.
   */
  readonly baselineOneFile?: ColdStartFigure;
  readonly functions: (ColdStartFigure & {
    readonly ratio: number;
    /**
     * The round-by-round ratios (this function's total over the bare client's in the same round):
     * their lower quartile, median and upper quartile. The spread says whether a ratio near the
     * target is in or out, which one median cannot.
     */
    readonly roundRatios: { readonly p25: number; readonly median: number; readonly p75: number };
    readonly firstCall: string;
    readonly sameRequests?: SameRequestsFigure;
  })[];
  readonly target: number;
}

export const COLD_START_TARGET = 1.3;
const REGION = 'us-east-1';
const SECRET_VALUES: Record<keyof typeof SECRETS, string> = {
  stripeApiKey: 'sk_test_cold_start',
  stripeReadKey: 'rk_test_cold_start',
  servicesClient: '{"client_id":"bench","client_secret":"bench-cold-start"}',
  stripeWebhook: 'whsec_cold_start',
  achWebhook: 'ach_cold_start',
  balanceWebhook: 'balance_cold_start',
};
/** Where a deployed function finds each secret: its ARN (the bench's local Secrets Manager answers with SECRET_VALUES). */
export const SECRET_ARNS: Record<keyof typeof SECRETS, string> = Object.fromEntries(
  Object.keys(SECRET_VALUES).map((id) => [id, `arn:aws:secretsmanager:${REGION}:123456789012:secret:bench/${id}-AbCdEf`]),
) as Record<keyof typeof SECRETS, string>;
/** Lambda's runtime sets these; the bench's values make the SDK behave as it would there (no IMDS probing). */
export const LAMBDA_ENV = {
  AWS_REGION: REGION,
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_LAMBDA_FUNCTION_NAME: 'cold-start',
};

interface Seeded {
  readonly userId: string;
  readonly subscriptionId: string;
  readonly billingDate: string;
  /** A collected card period's audit row as its history-table item (what the stream's NewImage carries). */
  readonly historyImage: Record<string, unknown>;
  /** A bulk retry run whose item for the seeded period is already finished. */
  readonly retryRunId: string;
  /**
   * A second user with the same kind of period, whose chain memberships-consumer's PAUSE changes:
   * the other first calls read the first user's period, which must stay as seeded (a paused head
   * would turn ach-handler's 409 into an exception write in the rounds after the PAUSE).
   */
  readonly pausedUserId: string;
}

/** One user with a card period due in ten days (not due: first calls read it and leave it). */
export async function seed(endpoint: string, tables: TableNames): Promise<Seeded> {
  const client = createDynamoClient({ region: REGION, endpoint });
  await createAllTables(client, tables);
  const now = Date.now();
  const billingDate = formatInstant(new Date(now + 10 * 86_400_000));
  const recordFor = (userId: string) => ({
    user_id: userId,
    billing_date: billingDate,
    subscription_id: randomUUID(),
    amount_cents: 1999,
    billing_status: 'PENDING' as const,
    last_run_date: formatInstant(new Date(now - 86_400_000)),
    created_date: formatInstant(new Date(now - 20 * 86_400_000)),
    process: 'UNKNOWN' as const,
    term: 'MONTHLY' as const,
    tier: 'plus:v3',
    payment_method: 'card' as const,
    account_last_four: '4242',
    payment_attempts: 0,
    billing_anchor_day: new Date(now + 10 * 86_400_000).getUTCDate(),
    version: 0,
  });
  const record = recordFor(`user-${randomUUID()}`);
  const paused = recordFor(`user-${randomUUID()}`);
  const stores = dynamoStores({ client, tables });
  await stores.billing.addAll([record, paused], [historyRowOf(record), historyRowOf(paused)]);
  // What events-publisher's first call receives: the audit row of a collected card period, which
  // publishes one event (billing.period.collected). A new period's row publishes none.
  const collected = historyRowOf(
    { ...record, billing_status: 'COMPLETED', transaction_id: `pi_${randomUUID().replace(/-/g, '')}`, payment_attempts: 1, last_run_date: formatInstant(new Date(now - 60_000)) },
    { billing_event: 'COLLECTED' },
  );
  const retryRunId = `run-${randomUUID()}`;
  await stores.retryRuns.putItems([
    { run_id: retryRunId, subscription_id: record.subscription_id, user_id: record.user_id, billing_date: billingDate, outcome: 'skipped', detail: 'not_open', finished_at: formatInstant(new Date(now - 60_000)) },
  ]);
  client.destroy();
  return { userId: record.user_id, subscriptionId: record.subscription_id, billingDate, historyImage: historyItem(collected) as Record<string, unknown>, retryRunId, pausedUserId: paused.user_id };
}

function httpEvent(method: string, path: string, routeKey: string, headers: Record<string, string>, body?: string, scopes?: string[]) {
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', ...headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'cold',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.10', userAgent: 'cold-start' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
      ...(scopes ? { authorizer: { jwt: { claims: { sub: 'operator-1', scope: scopes.join(' ') }, scopes } } } : {}),
    },
    isBase64Encoded: false,
    ...(body !== undefined ? { body } : {}),
  };
}

function sqsEvent(body: unknown) {
  const id = randomUUID();
  return {
    Records: [
      {
        messageId: id,
        receiptHandle: id,
        body: JSON.stringify(body),
        attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(Date.now()), SenderId: 'cold', ApproximateFirstReceiveTimestamp: String(Date.now()) },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: `arn:aws:sqs:${REGION}:123456789012:cold`,
        awsRegion: REGION,
      },
    ],
  };
}

/** The first call of each function: what it receives, and what it does with it. */
export const FIRST_CALLS: Partial<Record<FunctionName, { readonly does: string; readonly event: (s: Seeded) => unknown }>> = {
  'collections-job': {
    does: 'a scheduled run over every shard (nothing due) and the gauges',
    event: () => ({ version: '0', id: randomUUID(), 'detail-type': 'Scheduled Event', source: 'aws.events', account: '123456789012', time: new Date().toISOString(), region: REGION, resources: [], detail: {} }),
  },
  'batch-worker': {
    does: 'one collections message for a period not due yet (lock, consistent read, release)',
    event: (s) => sqsEvent({ kind: 'billing_period', user_id: s.userId, billing_date: s.billingDate, subscription_id: s.subscriptionId, process: 'SCHEDULED', enqueued_at: formatInstant(new Date()) }),
  },
  'webhook-balance-worker': {
    does: 'one balance event below the gate for a user with a period (the user\'s periods read, nothing written)',
    event: (s) =>
      sqsEvent({ event_id: randomUUID(), user_id: s.userId, institution_id: 'inst-1', available_balance_cents: 100, current_balance_cents: 100, occurred_at: formatInstant(new Date()) }),
  },
  'memberships-consumer': {
    does: 'one PAUSE record for the second user (the chain read, the head paused)',
    event: (s) => {
      const data = Buffer.from(JSON.stringify({ event_id: randomUUID(), user_id: s.pausedUserId, occurred_at: formatInstant(new Date()), type: 'PAUSE', months: 1 })).toString('base64');
      const seq = String(Date.now()) + '0'.repeat(20);
      return {
        Records: [
          {
            kinesis: { kinesisSchemaVersion: '1.0', partitionKey: s.pausedUserId, sequenceNumber: seq, data, approximateArrivalTimestamp: Date.now() / 1000 },
            eventSource: 'aws:kinesis',
            eventVersion: '1.0',
            eventID: `shardId-000000000000:${seq}`,
            eventName: 'aws:kinesis:record',
            invokeIdentityArn: 'arn:aws:iam::123456789012:role/cold',
            awsRegion: REGION,
            eventSourceARN: `arn:aws:kinesis:${REGION}:123456789012:stream/memberships`,
          },
        ],
      };
    },
  },
  'stripe-webhook': {
    does: 'a signed event of a type it records without effect (signature, one conditional write of the processed row)',
    event: () => {
      const payload = JSON.stringify({ id: `evt_${randomUUID().replace(/-/g, '')}`, object: 'event', api_version: '2025-10-29.clover', created: Math.floor(Date.now() / 1000), livemode: false, pending_webhooks: 1, type: 'customer.created', data: { object: { id: 'cus_1', object: 'customer' } } });
      const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET_VALUES.stripeWebhook });
      return httpEvent('POST', '/webhooks/stripe', 'POST /webhooks/stripe', { 'stripe-signature': signature }, payload);
    },
  },
  'ach-handler': {
    does: 'a signed settlement for the seeded period (signature, consistent read; nothing submitted yet: 409 not_yet_recorded, nothing written)',
    event: (s) => {
      const body = JSON.stringify({ event_id: `ach_${randomUUID()}`, type: 'settled', confirmation_id: 'conf-1', amount_cents: 1999, occurred_at: formatInstant(new Date()), reference: { kind: 'subscription', user_id: s.userId, billing_date: s.billingDate } });
      return httpEvent('POST', '/webhooks/ach', 'POST /webhooks/ach', { 'x-ach-signature': signPayload(body, SECRET_VALUES.achWebhook, Math.floor(Date.now() / 1000)) }, body);
    },
  },
  'retry-run-worker': {
    does: 'a redelivered item of a bulk retry run that already finished it (the claim refused with the item as it stands: nothing run again)',
    event: (s) => sqsEvent({ kind: 'retry_run_item', run_id: s.retryRunId, subscription_id: s.subscriptionId, user_id: s.userId, actor: 'operator-1', reason: 'cold start' }),
  },
  'events-publisher': {
    does: 'one INSERT of a collected period\'s audit row on the history stream (mapped to billing.period.collected, put on the local bus)',
    event: (s) => {
      const seq = String(Date.now()) + '0'.repeat(10);
      return {
        Records: [
          {
            eventID: randomUUID().replace(/-/g, ''),
            eventName: 'INSERT',
            eventVersion: '1.1',
            eventSource: 'aws:dynamodb',
            awsRegion: REGION,
            dynamodb: {
              ApproximateCreationDateTime: Math.floor(Date.now() / 1000),
              Keys: { user_id: s.historyImage.user_id, last_run_date: s.historyImage.last_run_date },
              NewImage: s.historyImage,
              SequenceNumber: seq,
              SizeBytes: JSON.stringify(s.historyImage).length,
              StreamViewType: 'NEW_IMAGE',
            },
            eventSourceARN: `arn:aws:dynamodb:${REGION}:123456789012:table/bench-billing-activity-history/stream/2026-12-01T00:00:00.000`,
          },
        ],
      };
    },
  },
  api: {
    does: 'GET /v1/subscriptions/{subscriptionId} (index lookup, consistent read)',
    event: (s) => ({
      ...httpEvent('GET', `/v1/subscriptions/${s.subscriptionId}`, 'GET /v1/subscriptions/{subscriptionId}', { authorization: 'Bearer x' }, undefined, ['billing:read']),
      pathParameters: { subscriptionId: s.subscriptionId },
    }),
  },
};

/**
 * The environment the CDK gives `name` (src/manifest), pointed at DynamoDB Local. Secrets by ARN,
 * as deployed, read from the local Secrets Manager at `secrets.endpoint` (the SDK's own
 * `AWS_ENDPOINT_URL_SECRETS_MANAGER`); without it, by value (tests).
 */
export function environmentFor(
  name: FunctionName,
  endpoint: string,
  tables: TableNames,
  bus?: { readonly name: string; readonly endpoint: string },
  secrets?: { readonly endpoint: string },
): Record<string, string> {
  const manifest: FunctionManifest = FUNCTIONS[name];
  const env: Record<string, string> = { STAGE: 'bench', DYNAMO_REGION: REGION, DYNAMO_ENDPOINT: endpoint, STATUS_SHARD_COUNT: '16', PAYMENT_SHARD_COUNT: '8', LOG_LEVEL: 'info' };
  for (const id of tablesOf(manifest)) env[allTables[id].envVar] = tables[id];
  const values: Record<string, string> = {
    ...Object.fromEntries(Object.entries(QUEUES).map(([id, queue]) => [queue.urlEnv, `http://127.0.0.1:1/000000000000/${id}`])),
    [SERVICES.payments.urlEnv]: 'http://127.0.0.1:1',
    [SERVICES.accounts.urlEnv]: 'http://127.0.0.1:1',
    [SERVICES.accounts.tokenUrlEnv]: 'http://127.0.0.1:1/oauth/token',
    BALANCE_THRESHOLD_CENTS: '5000',
    MAX_PAYMENT_CENTS: '1000000',
    ...(bus ? { [BUSES.billing.nameEnv]: bus.name } : {}),
  };
  for (const variable of environmentOf(manifest).variables) if (env[variable] === undefined) env[variable] = values[variable] ?? '';
  for (const id of manifest.secrets ?? []) {
    if (secrets) env[`${SECRETS[id].env}_ARN`] = SECRET_ARNS[id];
    else env[SECRETS[id].env] = SECRET_VALUES[id];
  }
  if (secrets && (manifest.secrets ?? []).length > 0) env.AWS_ENDPOINT_URL_SECRETS_MANAGER = secrets.endpoint;
  // The local bus stands in for EventBridge, as DynamoDB Local does for DynamoDB.
  if ((manifest.putsEventsOn ?? []).length > 0 && bus) env.EVENTBRIDGE_ENDPOINT = bus.endpoint;
  return env;
}

/** Imports the bundle, calls its handler once; prints timings and the answer's gist as JSON. */
export const RUNNER = `
import { readFileSync, writeFileSync } from 'node:fs';
const [bundle, eventFile, resultFile] = process.argv.slice(1);
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const context = { awsRequestId: 'cold-start', functionName: 'cold-start', getRemainingTimeInMillis: () => 60000, callbackWaitsForEmptyEventLoop: true };
const t0 = performance.now();
const mod = await import(bundle);
const t1 = performance.now();
const answer = await mod.handler(event, context);
const t2 = performance.now();
const gist = answer && typeof answer === 'object' ? ('statusCode' in answer ? { statusCode: answer.statusCode } : 'batchItemFailures' in answer ? { batchItemFailures: answer.batchItemFailures.length } : Object.keys(answer).slice(0, 4)) : answer;
writeFileSync(resultFile, JSON.stringify({ importMs: t1 - t0, firstCallMs: t2 - t1, gist }));
process.exit(0);
`;

export interface Sample {
  readonly importMs: number;
  readonly firstCallMs: number;
  readonly gist: unknown;
}

async function spawnOnce(file: string, event: unknown, env: Record<string, string>, dir: string): Promise<Sample> {
  const eventFile = join(dir, `event-${randomUUID()}.json`);
  writeFileSync(eventFile, JSON.stringify(event));
  const resultFile = join(dir, `result-${randomUUID()}.json`);
  await runOrExplain(process.execPath, ['--input-type=module', '-e', RUNNER, pathToFileURL(file).href, eventFile, resultFile], {
    env: { PATH: process.env.PATH ?? '', ...LAMBDA_ENV, ...env, NODE_OPTIONS: '--enable-source-maps' },
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(readFileSync(resultFile, 'utf8')) as Sample;
}

const median = (values: number[]): number => Math.round(quantile(values, 0.5) * 10) / 10;

/** The q-quantile of `values`, linear between the closest ranks (q = 0.5: the median). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new Error('quantile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

/** Each round's ratio of a subject's total to the bare client's total in that round, as quartiles. */
export function roundRatiosOf(subject: readonly Sample[], bare: readonly Sample[]): { p25: number; median: number; p75: number } {
  if (subject.length !== bare.length) throw new Error(`rounds differ: ${subject.length} samples against ${bare.length}`);
  const ratios = subject.map((s, i) => (s.importMs + s.firstCallMs) / (bare[i]!.importMs + bare[i]!.firstCallMs));
  const round2 = (x: number) => Math.round(x * 100) / 100;
  return { p25: round2(quantile(ratios, 0.25)), median: round2(quantile(ratios, 0.5)), p75: round2(quantile(ratios, 0.75)) };
}

/** Cold start of every function with a first-call recipe, beside the bare client, in one run. */
export async function measureColdStart(options: { endpoint: string; runs?: number; log?: (message: string) => void }): Promise<ColdStartResult> {
  const runs = options.runs ?? 15;
  const dir = mkdtempSync(join(tmpdir(), 'billing-cold-start-'));
  const bus = new LocalEventBus({ busName: 'billing-bench', logger: createLogger({ level: 'silent' }) });
  const dynamoRecorder = new RequestRecorder(options.endpoint);
  const busRecorder = new RequestRecorder(() => bus.endpoint);
  const secretsManager = new LocalSecretsManager(Object.fromEntries(Object.entries(SECRET_ARNS).map(([id, arn]) => [arn, SECRET_VALUES[id as keyof typeof SECRETS]])));
  const secretsRecorder = new RequestRecorder(() => secretsManager.endpoint);
  try {
    await bus.start();
    await secretsManager.start();
    await dynamoRecorder.start();
    await busRecorder.start();
    await secretsRecorder.start();
    const { baseline, functions } = await buildBundles(dir);
    const oneFile = await buildBareOneFile(dir);
    const tables = tableNamesFor(`cold-${randomUUID().slice(0, 8)}`);
    const seeded = await seed(options.endpoint, tables);
    const measured = functions.filter((f) => FIRST_CALLS[f.name as FunctionName]);
    for (const f of functions) if (!FIRST_CALLS[f.name as FunctionName]) options.log?.(`cold start: ${f.name} has no first-call recipe in bench/cold-start.ts; left out`);
    type Subject = { bundle: Bundle; event: () => unknown; env: Record<string, string> };
    const functionSubjects: Subject[] = measured.map((bundle) => ({
      bundle,
      event: () => FIRST_CALLS[bundle.name as FunctionName]!.event(seeded),
      env: environmentFor(bundle.name as FunctionName, options.endpoint, tables, { name: bus.busName, endpoint: bus.endpoint }, { endpoint: secretsManager.endpoint }),
    }));
    // Each function's first call once through recording proxies: its requests, for the same-requests floor.
    const sameRequests = new Map<string, { bundle: Bundle; waves: Wave[]; requests: number }>();
    const recorders = [dynamoRecorder, busRecorder, secretsRecorder];
    for (const s of functionSubjects) {
      for (const r of recorders) {
        r.requests.length = 0;
        r.recording = true;
      }
      try {
        const env = {
          ...s.env,
          DYNAMO_ENDPOINT: dynamoRecorder.endpoint,
          ...(s.env.EVENTBRIDGE_ENDPOINT ? { EVENTBRIDGE_ENDPOINT: busRecorder.endpoint } : {}),
          ...(s.env.AWS_ENDPOINT_URL_SECRETS_MANAGER ? { AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsRecorder.endpoint } : {}),
        };
        await spawnOnce(s.bundle.file, s.event(), env, dir);
      } finally {
        for (const r of recorders) r.recording = false;
      }
      const recorded = recorders.flatMap((r) => r.requests);
      if (recorded.length === 0) continue;
      const waves = wavesOf(recorded);
      sameRequests.set(s.bundle.name, { bundle: await buildBundle(`${s.bundle.name}-same-requests`, dir, { contents: replaySource(waves) }), waves, requests: recorded.length });
    }
    const floorEnv = { DYNAMO_REGION: REGION, DYNAMO_ENDPOINT: options.endpoint, EVENTBRIDGE_ENDPOINT: bus.endpoint, AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.endpoint };
    // Both bare clients read the seeded period.
    const bareCall = { event: () => ({ key: { user_id: { S: seeded.userId }, billing_date: { S: seeded.billingDate } } }), env: { DYNAMO_REGION: REGION, DYNAMO_ENDPOINT: options.endpoint, BILLING_ACTIVITY_TABLE: tables.billingActivity } };
    const subjects: Subject[] = [
      { bundle: baseline, ...bareCall },
      { bundle: oneFile, ...bareCall },
      ...functionSubjects,
      ...[...sameRequests.values()].map(({ bundle, waves }) => ({ bundle, event: () => ({ waves }), env: floorEnv })),
    ];
    const samples = new Map<string, Sample[]>(subjects.map((s) => [s.bundle.name, []]));
    // One warm-up round (DynamoDB Local is a JVM; the OS file cache), not counted.
    for (const s of subjects) await spawnOnce(s.bundle.file, s.event(), s.env, dir);
    for (let round = 0; round < runs; round++) {
      const order = subjects.map((_, i) => subjects[(i + round) % subjects.length]!);
      for (const s of order) samples.get(s.bundle.name)!.push(await spawnOnce(s.bundle.file, s.event(), s.env, dir));
      options.log?.(`cold start: round ${round + 1}/${runs}`);
    }
    const figure = (bundle: Bundle): ColdStartFigure => {
      const list = samples.get(bundle.name)!;
      return {
        name: bundle.name,
        bytes: bundle.bytes,
        importMs: median(list.map((x) => x.importMs)),
        firstCallMs: median(list.map((x) => x.firstCallMs)),
        totalMs: median(list.map((x) => x.importMs + x.firstCallMs)),
      };
    };
    const floor = { ...figure(baseline), name: 'bare DynamoDB client' as const };
    return {
      method: `fresh node ${process.version} process per sample; bundle as the CDK synthesizes it (esbuild, ESM, minified, source map, NODE_OPTIONS=--enable-source-maps); secrets by ARN from a local Secrets Manager; import + first handler call against DynamoDB Local; median of ${runs} interleaved rounds after one warm-up round`,
      runs,
      baseline: floor,
      baselineOneFile: { ...figure(oneFile), name: 'bare DynamoDB client, one file' },
      functions: measured.map((bundle) => {
        const f = figure(bundle);
        const gists = [...new Set(samples.get(bundle.name)!.map((x) => JSON.stringify(x.gist)))].join(' | ');
        const same = sameRequests.get(bundle.name);
        const sameFigure = same ? figure(same.bundle) : undefined;
        return {
          ...f,
          ratio: Math.round((f.totalMs / floor.totalMs) * 100) / 100,
          roundRatios: roundRatiosOf(samples.get(bundle.name)!, samples.get(baseline.name)!),
          firstCall: `${FIRST_CALLS[bundle.name as FunctionName]!.does} → ${gists}`,
          ...(same && sameFigure ? { sameRequests: { ...sameFigure, requests: same.requests, waves: same.waves.length, ratio: Math.round((f.totalMs / sameFigure.totalMs) * 100) / 100 } } : {}),
        };
      }),
      target: COLD_START_TARGET,
    };
  } finally {
    await secretsRecorder.stop();
    await busRecorder.stop();
    await dynamoRecorder.stop();
    await secretsManager.stop();
    await bus.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('cold-start.ts')) {
  const { startDynamoLocal } = await import('../src/adapters/dynamodb/local-server.js');
  const server = await startDynamoLocal();
  try {
    const runs = Number(process.argv[2] ?? 15);
    const result = await measureColdStart({ endpoint: server.endpoint, runs, log: (m) => console.error(m) });
    const row = (f: ColdStartFigure, ratio: number | string, does = '') =>
      console.log(`${f.name.padEnd(24)} ${String(Math.round(f.bytes / 1024)).padStart(5)} KiB  import ${f.importMs.toFixed(1).padStart(6)}  first call ${f.firstCallMs.toFixed(1).padStart(6)}  total ${f.totalMs.toFixed(1).padStart(6)} ms  ×${ratio}  ${does}`);
    console.log(result.method);
    row(result.baseline, '1.00');
    if (result.baselineOneFile) row(result.baselineOneFile, (result.baselineOneFile.totalMs / result.baseline.totalMs).toFixed(2));
    for (const f of result.functions) row(f, `${f.ratio.toFixed(2)} (rounds ${f.roundRatios.p25.toFixed(2)}-${f.roundRatios.p75.toFixed(2)})`, f.firstCall);
    for (const f of result.functions) if (f.sameRequests) row(f.sameRequests, `${(f.totalMs / result.baseline.totalMs).toFixed(2)} (function ×${f.sameRequests.ratio.toFixed(2)} this)`, `${f.sameRequests.requests} requests in ${f.sameRequests.waves} waves`);
  } finally {
    await server.stop();
  }
}
