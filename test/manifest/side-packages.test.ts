import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bundle, bundle, buildFunctionBundle } from '../../bench/bundles.js';
import { environmentFor, LAMBDA_ENV } from '../../bench/cold-start.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { formatInstant } from '../../src/domain/time.js';
import { SIDE_PACKAGES } from '../../lib/bundling.js';
import { SERVICES } from '../../src/manifest/index.js';
import { dynamoStores } from '../../src/runtime/compose.js';
import { sqsEvent, sqsRecord } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { createTestDynamo, type TestDynamo } from '../support/dynamo.js';
import { stripeEvent } from '../support/webhooks.js';

/**
 * The Stripe SDK as a side package (lib/bundling.ts), run the way Lambda runs a bundle: a fresh
 * `node` imports the function's index.mjs from its asset directory as bench/bundles.ts builds it
 * (what the CDK synthesizes) and calls the handler once, against DynamoDB Local and a local
 * accounts service that answers every account active. A resolve hook logs every resolution of
 * `stripe`; `api.stripe.com` resolves to 127.0.0.1, where nothing listens, so a charge fails to
 * connect instead of leaving the machine. batch-worker's import does not load the SDK; its first
 * card charge loads it from the asset's node_modules/stripe/index.mjs, and the SDK's connection
 * error reaches the adapter's mapping (transient: the message is retried). stripe-webhook checks
 * signatures with the SDK's own Webhooks code in its main file, without loading the side package.
 * The AWS SDK's off-Lambda credential providers, side packages of every asset, are loaded by a
 * bundle's default credential chain only when the environment holds no credentials.
 */

const run = promisify(execFile);

const HOOKS = `
import { appendFileSync } from 'node:fs';
const SIDES = new Set(${JSON.stringify(SIDE_PACKAGES)});
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (SIDES.has(specifier)) appendFileSync(log, 'resolve ' + specifier + ' ' + resolved.url + '\\n');
  return resolved;
}
`;

const PRELOAD = `
import dns from 'node:dns';
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
const log = process.env.SIDE_PACKAGE_LOG;
register(new URL('./hooks.mjs', import.meta.url), { data: { log } });
const lookup = dns.lookup;
dns.lookup = function (host, options, callback) {
  if (typeof options === 'function') { callback = options; options = {}; }
  if (host !== 'api.stripe.com') return lookup.call(dns, host, options, callback);
  appendFileSync(log, 'lookup api.stripe.com\\n');
  const all = typeof options === 'object' && options !== null && options.all;
  process.nextTick(() => (all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4)));
};
`;

const RUNNER = `
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
const [bundle, eventFile, resultFile] = process.argv.slice(1);
const log = process.env.SIDE_PACKAGE_LOG;
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const context = { awsRequestId: 'side-package', functionName: 'side-package', getRemainingTimeInMillis: () => 60000, callbackWaitsForEmptyEventLoop: true };
const mod = await import(bundle);
appendFileSync(log, 'imported\\n');
const answer = await mod.handler(event, context);
appendFileSync(log, 'answered\\n');
writeFileSync(resultFile, JSON.stringify(answer));
process.exit(0);
`;

let dir: string;
let dynamo: TestDynamo;
let accounts: Server;
let accountsUrl: string;
const built = new Map<string, Bundle>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'billing-side-packages-'));
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  writeFileSync(join(dir, 'preload.mjs'), PRELOAD);
  dynamo = await createTestDynamo('side');
  // The accounts service and its token endpoint: an account only for a bearer token it issued.
  accounts = createServer((req, res) => {
    res.writeHead(req.url === '/oauth/token' || req.headers.authorization === 'Bearer side-token' ? 200 : 401, { 'content-type': 'application/json' });
    if (req.url === '/oauth/token') return res.end(JSON.stringify({ access_token: 'side-token', token_type: 'Bearer', expires_in: 3600 }));
    res.end(JSON.stringify(req.headers.authorization === 'Bearer side-token' ? { status: 'active', available_balance_cents: 100_000, current_balance_cents: 100_000, debit_card_valid: true } : { error: { code: 'invalid_token' } }));
  });
  await new Promise<void>((resolve) => accounts.listen(0, '127.0.0.1', resolve));
  accountsUrl = `http://127.0.0.1:${(accounts.address() as AddressInfo).port}`;
  for (const name of ['batch-worker', 'stripe-webhook'] as const) built.set(name, await buildFunctionBundle(name, dir));
}, 120_000);

afterAll(async () => {
  await new Promise<void>((resolve) => (accounts ? accounts.close(() => resolve()) : resolve()));
  dynamo?.client.destroy();
  rmSync(dir, { recursive: true, force: true });
});

/** Imports a bundle in a fresh process with `env` and calls its handler once; the log and the answer. */
async function coldRun(file: string, event: unknown, env: Record<string, string>): Promise<{ log: string[]; answer: unknown }> {
  const id = `${randomUUID()}`;
  const eventFile = join(dir, `${id}.event.json`);
  const resultFile = join(dir, `${id}.result.json`);
  const logFile = join(dir, `${id}.log`);
  writeFileSync(eventFile, JSON.stringify(event));
  writeFileSync(logFile, '');
  await run(process.execPath, ['--import', pathToFileURL(join(dir, 'preload.mjs')).href, '--input-type=module', '-e', RUNNER, pathToFileURL(file).href, eventFile, resultFile], {
    env: { PATH: process.env.PATH ?? '', ...env, SIDE_PACKAGE_LOG: logFile, NODE_OPTIONS: '--enable-source-maps' },
    maxBuffer: 16 * 1024 * 1024,
  });
  return { log: readFileSync(logFile, 'utf8').trim().split('\n'), answer: JSON.parse(readFileSync(resultFile, 'utf8')) };
}

/** A function's bundle, run as Lambda runs it (credentials in the environment). */
function coldCall(name: 'batch-worker' | 'stripe-webhook', event: unknown): Promise<{ log: string[]; answer: unknown }> {
  return coldRun(built.get(name)!.file, event, { ...LAMBDA_ENV, ...environmentFor(name, dynamo.endpoint, dynamo.tables), [SERVICES.accounts.urlEnv]: accountsUrl, [SERVICES.accounts.tokenUrlEnv]: `${accountsUrl}/oauth/token`, LOG_LEVEL: 'silent' });
}

describe('batch-worker bundle', () => {
  it('loads the Stripe SDK from its side package on the first card charge, not at import', async () => {
    const record = dueRecord(new Date(), 'card', { account_last_four: '4242' });
    await dynamoStores({ client: dynamo.client, tables: dynamo.tables }).billing.addAll([record], [historyRowOf(record)]);
    const message = sqsRecord({ kind: 'billing_period', user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: formatInstant(new Date()) });

    const { log, answer } = await coldCall('batch-worker', sqsEvent([message]));

    const sideFile = pathToFileURL(built.get('batch-worker')!.sidePackages[0]!.file).href;
    expect(log[0]).toBe('imported');
    expect(log.slice(1, 2)).toEqual([`resolve stripe ${sideFile}`]);
    expect(log).toContain('lookup api.stripe.com');
    expect(log.at(-1)).toBe('answered');
    // The SDK's connection error, mapped by the adapter through the client's own error classes: transient, retried.
    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: message.messageId }] });
  }, 60_000);
});

describe('stripe-webhook bundle', () => {
  const secret = () => environmentFor('stripe-webhook', dynamo.endpoint, dynamo.tables).STRIPE_WEBHOOK_SECRET!;
  const delivery = (payload: string, signature: string) => ({
    version: '2.0',
    routeKey: 'POST /webhooks/stripe',
    rawPath: '/webhooks/stripe',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    requestContext: { http: { method: 'POST', path: '/webhooks/stripe', protocol: 'HTTP/1.1', sourceIp: '203.0.113.10', userAgent: 'stripe' }, requestId: 'r-1', routeKey: 'POST /webhooks/stripe', stage: '$default', timeEpoch: Date.now() },
    isBase64Encoded: false,
    body: payload,
  });

  it('accepts an event signed as the SDK signs it, without loading the side package', async () => {
    const payload = JSON.stringify(stripeEvent('customer.created', { id: 'cus_1', object: 'customer' }, Date.now()));
    const { log, answer } = await coldCall('stripe-webhook', delivery(payload, Stripe.webhooks.generateTestHeaderString({ payload, secret: secret() })));
    expect(answer).toMatchObject({ statusCode: 200 });
    expect(log).toEqual(['imported', 'answered']);
  }, 60_000);

  it('refuses a payload whose signature does not match', async () => {
    const payload = JSON.stringify(stripeEvent('customer.created', { id: 'cus_2', object: 'customer' }, Date.now()));
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: secret() });
    const { log, answer } = await coldCall('stripe-webhook', delivery(payload.replace('cus_2', 'cus_3'), signature));
    expect(answer).toMatchObject({ statusCode: 400 });
    expect(log).toEqual(['imported', 'answered']);
  }, 60_000);
});

describe("the AWS SDK's default credential chain in a bundle", () => {
  // The functions' clients take fixed credentials when pointed at DynamoDB Local, so this client,
  // built as every function is (bench/bundles.ts), uses the SDK's default chain against it.
  const SOURCE = `import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
const client = new DynamoDBClient({ region: 'us-east-1', endpoint: process.env.DYNAMO_ENDPOINT });
export const handler = async () => ({ listed: Array.isArray((await client.send(new ListTablesCommand({ Limit: 1 }))).TableNames) });
`;
  let chain: Bundle;
  beforeAll(async () => {
    chain = await bundle('default-chain', dir, { contents: SOURCE });
  }, 60_000);
  const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _secret, ...withoutCredentials } = LAMBDA_ENV;

  it('loads no credential provider when the environment holds credentials, as in Lambda', async () => {
    const { log, answer } = await coldRun(chain.file, {}, { ...LAMBDA_ENV, DYNAMO_ENDPOINT: dynamo.endpoint });
    expect(answer).toEqual({ listed: true });
    expect(log).toEqual(['imported', 'answered']);
  }, 60_000);

  it('resolves a profile through the provider its asset carries beside index.mjs', async () => {
    const credentialsFile = join(dir, 'credentials');
    writeFileSync(credentialsFile, '[side-package-test]\naws_access_key_id = local\naws_secret_access_key = local\n');
    const { log, answer } = await coldRun(chain.file, {}, {
      ...withoutCredentials,
      DYNAMO_ENDPOINT: dynamo.endpoint,
      AWS_PROFILE: 'side-package-test',
      AWS_SHARED_CREDENTIALS_FILE: credentialsFile,
      AWS_CONFIG_FILE: join(dir, 'no-config'),
    });
    const ini = chain.sidePackages.find((p) => p.name === '@aws-sdk/credential-provider-ini')!;
    expect(log).toEqual(['imported', `resolve @aws-sdk/credential-provider-ini ${pathToFileURL(ini.file).href}`, 'answered']);
    // The request was signed with the profile's keys and answered.
    expect(answer).toEqual({ listed: true });
  }, 60_000);
});
