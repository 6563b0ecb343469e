import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_BALANCE_THRESHOLD_CENTS } from '../../src/runtime/config.js';
import { FUNCTION_NAMES } from '../../src/manifest/index.js';
import { FUNCTIONS, type FunctionManifest } from '../../src/manifest/index.js';
import { productionDeps as build, wiringFor } from '../../src/runtime/production.js';
import type { Wiring } from '../../src/runtime/wiring/types.js';
import { accounts, payments } from '../../src/runtime/wiring/payments-service.js';
import { secretsManager } from '../../src/runtime/wiring/secrets-manager.js';
import { sqs } from '../../src/runtime/wiring/sqs.js';
import { stripe } from '../../src/runtime/wiring/stripe.js';

const SERVICE_WIRINGS = { stripe, payments, accounts };
/** Each function's deps with the adapters its manifest calls for, as its entry module wires them. */
function wiringOf(fn: string): Wiring {
  const manifest: FunctionManifest = FUNCTIONS[fn as keyof typeof FUNCTIONS];
  const needed = new Set(wiringFor(manifest));
  return {
    ...(needed.has('secretsManager') ? { secretsManager } : {}),
    ...(needed.has('sqs') ? { sqs } : {}),
    ...((manifest.services ?? []).length > 0 ? { services: Object.fromEntries((manifest.services ?? []).map((id) => [id, SERVICE_WIRINGS[id]])) } : {}),
  };
}
const productionDeps = (fn: string, env: NodeJS.ProcessEnv) => build(fn, wiringOf(fn), env);

const complete: NodeJS.ProcessEnv = {
  STAGE: 'prod',
  DYNAMO_DB_REGION: 'us-east-1',
  DYNAMO_ENDPOINT: 'http://127.0.0.1:1',
  BILLING_ACTIVITY_TABLE: 'dev-billing-activity',
  BILLING_ACTIVITY_HISTORY_TABLE: 'dev-billing-activity-history',
  LOCKS_TABLE: 'dev-locks',
  PAYMENTS_TABLE: 'dev-payments',
  STRIPE_EVENTS_TABLE: 'dev-stripe-events',
  RETRY_RUNS_TABLE: 'dev-retry-runs',
  INSTRUMENTS_TABLE: 'dev-instruments',
  MONEY_MOVEMENTS_TABLE: 'dev-money-movements',
  RECONCILIATION_TABLE: 'dev-reconciliation',
  EVENT_BUS_NAME: 'billing-dev',
  COLLECTIONS_STRIPE_QUEUE_URL: 'http://127.0.0.1:1/000000000000/collections-stripe',
  COLLECTIONS_PAYMENTS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/collections-payments',
  BALANCE_EVENTS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/balance-events',
  RETRY_RUNS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/retry-runs',
  RECONCILIATION_QUEUE_URL: 'http://127.0.0.1:1/000000000000/reconciliation',
  STRIPE_API_KEY: 'sk_test_x',
  STRIPE_READ_KEY: 'rk_test_x',
  SERVICES_CLIENT_CREDENTIALS: '{"client_id":"billing","client_secret":"s3cr3t-x"}',
  STRIPE_WEBHOOK_SECRET: 'whsec_x',
  ACH_WEBHOOK_SECRET: 'ach_x',
  BALANCE_WEBHOOK_SECRET: 'bal_x',
  PAYMENTS_API_URL: 'http://127.0.0.1:1',
  ACCOUNTS_API_URL: 'http://127.0.0.1:1',
  SERVICES_TOKEN_URL: 'http://127.0.0.1:1/oauth/token',
  LOG_LEVEL: 'silent',
};

describe('production wiring at cold start', () => {
  it.each(FUNCTION_NAMES)('builds %s from a complete environment (region alias accepted)', async (fn) => {
    const deps = await productionDeps(fn, complete);
    expect(deps.settings.stage).toBe('prod');
    expect(typeof deps.billing.get).toBe('function');
  });

  it('refuses a missing table name as a startup error, never a silent fallback', async () => {
    const { LOCKS_TABLE: _omitted, ...env } = complete;
    await expect(productionDeps('batch-worker', env)).rejects.toThrow(ConfigError);
    await expect(productionDeps('batch-worker', { ...complete, LOCKS_TABLE: '  ' })).rejects.toThrow(/LOCKS_TABLE/);
  });

  it('refuses a service URL that is not https: at cold start (plain http only to this machine)', async () => {
    await expect(productionDeps('batch-worker', { ...complete, PAYMENTS_API_URL: 'http://payments.internal' })).rejects.toThrow(/PAYMENTS_API_URL must be an https: URL/);
    await expect(productionDeps('batch-worker', { ...complete, ACCOUNTS_API_URL: 'ftp://accounts' })).rejects.toThrow(/ACCOUNTS_API_URL must be an https: URL/);
    expect((await productionDeps('batch-worker', { ...complete, PAYMENTS_API_URL: 'https://payments.internal' })).settings.stage).toBe('prod');
    await expect(productionDeps('collections-job', { ...complete, SERVICES_TOKEN_URL: 'http://auth.internal/oauth/token' })).rejects.toThrow(/SERVICES_TOKEN_URL must be an https: URL/);
    const { SERVICES_TOKEN_URL: _omitted, ...noTokenUrl } = complete;
    await expect(productionDeps('batch-worker', noTokenUrl)).rejects.toThrow(/SERVICES_TOKEN_URL: required/);
  });

  it('refuses services client credentials that are not a client id and secret; dev starts on the placeholder and every call is our outage', async () => {
    await expect(productionDeps('batch-worker', { ...complete, SERVICES_CLIENT_CREDENTIALS: 'billing:s3cr3t' })).rejects.toThrow(/SERVICES_CLIENT_CREDENTIALS must be JSON/);
    const placeholder = JSON.stringify({ placeholder: 'set the real value', random: 'Zq81' });
    await expect(productionDeps('collections-job', { ...complete, SERVICES_CLIENT_CREDENTIALS: placeholder })).rejects.toThrow(/SERVICES_CLIENT_CREDENTIALS still hold a placeholder/);
    expect((await productionDeps('collections-job', { ...complete, STAGE: 'dev', SERVICES_CLIENT_CREDENTIALS: placeholder })).settings.stage).toBe('dev');
    const built = accounts({ url: 'https://accounts.internal', tokenUrl: 'https://auth.internal/oauth/token', secret: () => placeholder, granted: () => true });
    await expect(built.accounts!.getAccount('u1')).rejects.toMatchObject({ name: 'ProcessorOutageError', service: 'accounts', reason: 'processor_auth' });
  });

  it('refuses an empty or placeholder secret outside dev, naming it; dev may start on the stack placeholders', async () => {
    const placeholder = JSON.stringify({ placeholder: 'set the real value', random: 'Zq81' });
    for (const value of [placeholder, 'changeme', 'placeholder']) {
      await expect(productionDeps('ach-handler', { ...complete, ACH_WEBHOOK_SECRET: value })).rejects.toThrow(/ACH_WEBHOOK_SECRET still hold a placeholder/);
    }
    expect((await productionDeps('ach-handler', { ...complete, STAGE: 'dev', ACH_WEBHOOK_SECRET: placeholder })).settings.stage).toBe('dev');
  });

  it('refuses a missing webhook secret', async () => {
    const { ACH_WEBHOOK_SECRET: _omitted, ...env } = complete;
    await expect(productionDeps('ach-handler', env)).rejects.toThrow(/ACH_WEBHOOK_SECRET/);
  });

  it('refuses a missing STAGE: a deployed function never defaults to local', async () => {
    const { STAGE: _omitted, ...env } = complete;
    await expect(productionDeps('api', env)).rejects.toThrow(/invalid configuration: STAGE:/);
  });

  it('reads BALANCE_THRESHOLD_CENTS through the schema, with the one documented default', async () => {
    expect((await productionDeps('webhook-balance-worker', complete)).settings.balanceThresholdCents).toBe(DEFAULT_BALANCE_THRESHOLD_CENTS);
    expect((await productionDeps('webhook-balance-worker', { ...complete, BALANCE_THRESHOLD_CENTS: '2500' })).settings.balanceThresholdCents).toBe(2500);
    for (const bad of ['50 00', 'NaN', '50.5', '5e3', '-1', '']) {
      await expect(productionDeps('webhook-balance-worker', { ...complete, BALANCE_THRESHOLD_CENTS: bad })).rejects.toThrow(
        /invalid configuration: BALANCE_THRESHOLD_CENTS: must be a whole number of cents/,
      );
    }
  });

  it('refuses a missing region', async () => {
    const { DYNAMO_DB_REGION: _omitted, ...env } = complete;
    await expect(productionDeps('api', env)).rejects.toThrow(/DYNAMO_REGION/);
  });

  it('reports use of a dependency the function was not configured for', async () => {
    const deps = await productionDeps('collections-job', complete);
    expect(() => deps.processor.submit({} as never)).toThrow(/not granted to collections-job by its manifest/);
    expect(() => deps.retryRuns.claimItem('run', 'sub', 'message', 'now', 'now')).toThrow(/the retryRuns table is not granted to collections-job/);
    expect(() => deps.balanceEventsQueue.sendBatch([])).toThrow(/the balanceEvents queue is not granted to collections-job/);
  });

  it('refuses an entry whose adapters differ from its manifest (an extra SDK in the bundle, or a missing one)', async () => {
    await expect(build('collections-job', { sqs, services: { stripe } }, complete)).rejects.toThrow(/wires \[services\.stripe, sqs\]; its manifest calls for \[secretsManager, services\.accounts, sqs\]/);
    await expect(build('ach-handler', {}, complete)).rejects.toThrow(/calls for \[secretsManager\]/);
  });

  it('refuses a secret ARN without the Secrets Manager adapter, and reads ARNs through it in one round', async () => {
    const { ACH_WEBHOOK_SECRET: _omitted, ...env } = complete;
    const asked: string[][] = [];
    const fake: Wiring['secretsManager'] = async (arns) => {
      asked.push([...arns]);
      return arns.map((arn) => `value-of-${arn}`);
    };
    const deps = await build('ach-handler', { secretsManager: fake }, { ...env, ACH_WEBHOOK_SECRET_ARN: 'arn:ach' });
    expect(deps.secrets.achWebhook).toBe('value-of-arn:ach');
    expect(asked).toEqual([['arn:ach']]);
  });
});
