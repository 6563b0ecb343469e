import { resolve } from 'node:path';
import * as z from '../domain/zod.js';
import { instantSchema } from '../domain/time.js';
import { intervalProblem, PLAN_MARGIN_SECONDS } from '../domain/billing-day.js';
import type { ProcessorBudgetSettings } from '../domain/processor-budget.js';
import { budgetSettingsFrom } from '../runtime/processor-budget.js';
import { parseClientCredentials, type ClientCredentials } from '../adapters/payments-service/client-credentials.js';
import { centsSetting, DEFAULT_BALANCE_THRESHOLD_CENTS, DEFAULT_MAX_PAYMENT_CENTS, maxPaymentSetting } from '../runtime/config.js';

/** Documented local defaults (README "Run it locally"); every one is overridable by its variable. */
export const LOCAL_SECRET_DEFAULTS = {
  LOCAL_API_TOKEN: 'local-dev-token',
  STRIPE_WEBHOOK_SECRET: 'whsec_local_stripe_secret',
  ACH_WEBHOOK_SECRET: 'local-ach-webhook-secret',
  BALANCE_WEBHOOK_SECRET: 'local-balance-webhook-secret',
  // The client the local functions present to the simulated payments and accounts services, which know it.
  SERVICES_CLIENT_CREDENTIALS: '{"client_id":"billing-local","client_secret":"local-services-client-secret"}',
} as const;

/** The subject the local token's claims carry: audit rows written through the local API name it. */
export const LOCAL_OPERATOR_SUB = 'local-operator';

export interface LocalSystemOptions {
  /** Gateway port; 0 picks a free one. */
  readonly port: number;
  readonly host: string;
  /** Where DynamoDB data, the clock and the seed marker live. */
  readonly dataDir: string;
  /** Wipe dataDir before starting. */
  readonly fresh: boolean;
  /** Seed demo data on first start. */
  readonly seed: boolean;
  /** Simulated start time (only when no clock is persisted, or with fresh). */
  readonly now?: string | undefined;
  /** Wall-clock ms between scheduled collections runs; 0 turns the schedule off. */
  readonly collectionsIntervalMs: number;
  readonly sqsVisibilityTimeoutS: number;
  readonly sqsMaxReceiveCount: number;
  readonly kinesisRetryAttempts: number;
  readonly kinesisShardCount: number;
  readonly logLevel: string;
  readonly pretty: boolean;
  readonly secrets: {
    readonly apiToken: string;
    readonly stripeWebhook: string;
    readonly achWebhook: string;
    readonly balanceWebhook: string;
  };
  /** The OAuth client of the payments and accounts services (SERVICES_CLIENT_CREDENTIALS), as the simulator knows it. */
  readonly servicesClient: ClientCredentials;
  readonly balanceThresholdCents: number;
  readonly maxPaymentCents: number;
  readonly statusShardCount: number;
  readonly paymentShardCount: number;
  /** DynamoDB Local port; 0 picks a free one. */
  readonly dynamoPort: number;
  /** Where the local bus also POSTs each published event (LOCAL_EVENTS_WEBHOOK_URL); unset: nowhere. */
  readonly eventsWebhookUrl?: string | undefined;
  /** The processors' budgets (STRIPE_BUDGET_PER_SECOND, PAYMENTS_BUDGET_PER_SECOND): unset, no limiter and no pacing, as before DESIGN 13. */
  readonly processorBudget?: ProcessorBudgetSettings | undefined;
}

const nonNegativeInt = z.coerce.number().check(z.int(), z.nonnegative());
const positiveInt = z.coerce.number().check(z.int(), z.positive());
const secret = (fallback: string) => z._default(z.string().check(z.trim(), z.minLength(1)), fallback);

const envSchema = z.object({
  PORT: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(65535)), 3000),
  // Loopback only: the local token carries every scope and the emulators have no authentication.
  HOST: z._default(z.string().check(z.trim(), z.refine((host) => /^(127(\.\d{1,3}){3}|::1|localhost)$/.test(host), 'must be a loopback address (127.0.0.1, ::1 or localhost); the local runtime never listens on the network')), '127.0.0.1'),
  LOCAL_DATA_DIR: z._default(z.string().check(z.trim(), z.minLength(1)), '.local'),
  COLLECTIONS_INTERVAL_MS: z._default(nonNegativeInt, 60_000),
  SQS_VISIBILITY_TIMEOUT_S: z._default(positiveInt, 30),
  SQS_MAX_RECEIVE_COUNT: z._default(positiveInt, 5),
  KINESIS_RETRY_ATTEMPTS: z._default(nonNegativeInt, 3),
  KINESIS_SHARD_COUNT: z._default(positiveInt, 2),
  LOG_LEVEL: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
  LOG_FORMAT: z.optional(z.enum(['pretty', 'json'])),
  LOCAL_API_TOKEN: secret(LOCAL_SECRET_DEFAULTS.LOCAL_API_TOKEN),
  STRIPE_WEBHOOK_SECRET: secret(LOCAL_SECRET_DEFAULTS.STRIPE_WEBHOOK_SECRET),
  ACH_WEBHOOK_SECRET: secret(LOCAL_SECRET_DEFAULTS.ACH_WEBHOOK_SECRET),
  BALANCE_WEBHOOK_SECRET: secret(LOCAL_SECRET_DEFAULTS.BALANCE_WEBHOOK_SECRET),
  SERVICES_CLIENT_CREDENTIALS: z.pipe(secret(LOCAL_SECRET_DEFAULTS.SERVICES_CLIENT_CREDENTIALS), z.transform((value, ctx) => {
    const parsed = parseClientCredentials(value);
    if (parsed) return parsed;
    ctx.issues.push({ code: 'custom', message: 'must be JSON {"client_id","client_secret"}', input: value });
    return z.NEVER;
  })),
  BALANCE_THRESHOLD_CENTS: z._default(centsSetting, DEFAULT_BALANCE_THRESHOLD_CENTS),
  MAX_PAYMENT_CENTS: z._default(maxPaymentSetting, DEFAULT_MAX_PAYMENT_CENTS),
  STATUS_SHARD_COUNT: z._default(positiveInt, 16),
  PAYMENT_SHARD_COUNT: z._default(positiveInt, 8),
  DYNAMO_LOCAL_PORT: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(65535)), 0),
  LOCAL_EVENTS_WEBHOOK_URL: z.pipe(z.optional(z.string().check(z.trim())), z.transform((v) => (v === '' ? undefined : v))).check(z.refine((v) => v === undefined || /^https?:\/\/[^\s]+$/.test(v), 'must be an http(s) URL')),
});

export class LocalUsageError extends Error {
  override readonly name = 'LocalUsageError';
}

export interface CliFlags {
  port?: number;
  fresh?: boolean;
  seed?: boolean;
  now?: string;
  dataDir?: string;
  /** `--no-schedule`: no scheduled collections runs (COLLECTIONS_INTERVAL_MS=0). */
  schedule?: boolean;
}

export const USAGE = 'usage: npm start -- [--port N] [--fresh] [--no-seed] [--no-schedule] [--now <RFC3339>] [--data-dir DIR]';

/** `--port N --fresh --no-seed --no-schedule --now <RFC3339> --data-dir DIR` */
export function parseCliFlags(argv: readonly string[]): CliFlags {
  const flags: CliFlags = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v.startsWith('--')) throw new LocalUsageError(`${name} needs a value`);
      return v;
    };
    switch (name) {
      case '--port': {
        const port = Number(value());
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new LocalUsageError(`--port must be 0-65535`);
        flags.port = port;
        break;
      }
      case '--fresh':
        flags.fresh = true;
        break;
      case '--no-seed':
        flags.seed = false;
        break;
      case '--seed':
        flags.seed = true;
        break;
      case '--no-schedule':
        flags.schedule = false;
        break;
      case '--now':
        flags.now = value();
        break;
      case '--data-dir':
        flags.dataDir = value();
        break;
      case '--help':
      case '-h':
        throw new LocalUsageError(USAGE);
      default:
        throw new LocalUsageError(`unknown option ${arg} (try --help)`);
    }
  }
  return flags;
}

/** Options from the environment, overridden by flags and then by explicit programmatic values. */
export function resolveOptions(
  env: NodeJS.ProcessEnv,
  flags: CliFlags = {},
  overrides: Partial<LocalSystemOptions> = {},
): LocalSystemOptions {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new LocalUsageError(`invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  const now = overrides.now ?? flags.now;
  if (now !== undefined) {
    const checked = instantSchema.safeParse(now);
    if (!checked.success) throw new LocalUsageError(`--now must be an RFC3339 timestamp, got ${JSON.stringify(now)}`);
  }
  const options: LocalSystemOptions = {
    port: flags.port ?? e.PORT,
    host: e.HOST,
    dataDir: resolve(flags.dataDir ?? e.LOCAL_DATA_DIR),
    fresh: flags.fresh ?? false,
    seed: flags.seed ?? true,
    now,
    collectionsIntervalMs: flags.schedule === false ? 0 : e.COLLECTIONS_INTERVAL_MS,
    sqsVisibilityTimeoutS: e.SQS_VISIBILITY_TIMEOUT_S,
    sqsMaxReceiveCount: e.SQS_MAX_RECEIVE_COUNT,
    kinesisRetryAttempts: e.KINESIS_RETRY_ATTEMPTS,
    kinesisShardCount: e.KINESIS_SHARD_COUNT,
    logLevel: e.LOG_LEVEL,
    pretty: e.LOG_FORMAT ? e.LOG_FORMAT === 'pretty' : Boolean(process.stdout.isTTY),
    secrets: {
      apiToken: e.LOCAL_API_TOKEN,
      stripeWebhook: e.STRIPE_WEBHOOK_SECRET,
      achWebhook: e.ACH_WEBHOOK_SECRET,
      balanceWebhook: e.BALANCE_WEBHOOK_SECRET,
    },
    servicesClient: e.SERVICES_CLIENT_CREDENTIALS,
    balanceThresholdCents: e.BALANCE_THRESHOLD_CENTS,
    maxPaymentCents: e.MAX_PAYMENT_CENTS,
    statusShardCount: e.STATUS_SHARD_COUNT,
    paymentShardCount: e.PAYMENT_SHARD_COUNT,
    dynamoPort: e.DYNAMO_LOCAL_PORT,
    eventsWebhookUrl: e.LOCAL_EVENTS_WEBHOOK_URL,
    processorBudget: localBudget(env),
    ...stripUndefined(overrides),
  };
  const problem = options.processorBudget ? pacedIntervalProblem(options.collectionsIntervalMs) : undefined;
  if (problem) throw new LocalUsageError(`invalid configuration: COLLECTIONS_INTERVAL_MS: ${problem}`);
  return options;
}

/** The shortest paced interval locally: the planner's margin plus as long again for presenting. */
export const MIN_PACED_INTERVAL_SECONDS = 2 * PLAN_MARGIN_SECONDS;

/**
 * With budgets set, the schedule's interval is the paced planner's window (DESIGN 13), bounded as
 * the stack bounds it at synth: at most the longest SQS delay, and long enough to present in after
 * the margin. The local scheduler runs one run at a time, so the timeout bound is kept by construction.
 */
export function pacedIntervalProblem(intervalMs: number): string | undefined {
  if (intervalMs === 0) return undefined;
  if (intervalMs % 1000 !== 0) return `with budgets set, the paced planner's interval is whole seconds (got ${intervalMs} ms)`;
  const seconds = intervalMs / 1000;
  if (seconds < MIN_PACED_INTERVAL_SECONDS) return `with budgets set, at least ${MIN_PACED_INTERVAL_SECONDS * 1000} (the planner's ${PLAN_MARGIN_SECONDS} s margin, then as long for presenting; got ${intervalMs})`;
  return intervalProblem(seconds, 0);
}

function localBudget(env: NodeJS.ProcessEnv): ProcessorBudgetSettings | undefined {
  try {
    return budgetSettingsFrom(env, false);
  } catch (error) {
    throw new LocalUsageError((error as Error).message);
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
