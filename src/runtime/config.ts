import * as z from '../domain/zod.js';
import { allTables, type TableId, type TableNames } from '../adapters/dynamodb/table-definitions.js';
import { lazySchema } from '../domain/lazy-schema.js';

/** Raised at cold start when the environment is incomplete: never a silent fallback. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/*
 * The rules of the environment are the zod schemas below: built on first use (lazySchema), never at
 * import. `loadBaseConfig` answers a plainly valid environment (what the CDK sets) with the plain
 * code of `plainBaseConfig` and asks the schema only when that code is in any doubt, so a cold start
 * neither builds nor compiles a parser for a check it makes once (docs/decisions.md).
 */
const nonEmpty = lazySchema(() => z.string().check(z.trim(), z.minLength(1)));
const positiveInt = lazySchema(() => z.coerce.number().check(z.int(), z.positive()));

/**
 * The balance-webhook gate's minimum observed balance, in cents: the one default shared by the
 * local runtime, the Lambda cold start and the CDK stack (which sets it on the function that uses it).
 */
export const DEFAULT_BALANCE_THRESHOLD_CENTS = 5000;

/** The largest single payment any path may create, in cents ($10,000); the rule is src/domain/payment-maximum.ts. */
export const DEFAULT_MAX_PAYMENT_CENTS = 1_000_000;

/** What paths people start may debit one member in a UTC day, in cents ($20,000: two of the largest payments). */
export const DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS = 2_000_000;

/**
 * Whole cents written as digits only (at most 12). `'50 00'`, `'50.5'`, `'5e3'`, `'0x10'`, `''`
 * and `'-1'` are refused: `Number()` and `z.coerce` would turn some of them into NaN, 0 or a
 * different amount.
 */
export const centsSetting = lazySchema(() =>
  z.pipe(
    z.pipe(
      z.pipe(z.union([z.string(), z.number()]), z.transform((value) => String(value).trim())),
      z.string().check(z.regex(CENTS_DIGITS, 'must be a whole number of cents, digits only (e.g. 5000)')),
    ),
    z.transform(Number),
  ),
);

/** The payment maximum: whole cents as digits, at least one cent. */
export const maxPaymentSetting = lazySchema(() => z.pipe(centsSetting, z.int().check(z.positive('must be at least 1 cent'))));

const CENTS_DIGITS = /^\d{1,12}$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const baseConfigSchema = lazySchema(() => z.object({
  /** Required: a deployed function never guesses its stage (the local runtime sets its own). */
  STAGE: nonEmpty,
  /** One region value (docs/design.md, tables); the seed's aliases are accepted. */
  DYNAMO_REGION: nonEmpty,
  /** DynamoDB Local / emulator endpoints; absent in AWS. */
  DYNAMO_ENDPOINT: z.optional(nonEmpty),
  SQS_ENDPOINT: z.optional(nonEmpty),
  KINESIS_ENDPOINT: z.optional(nonEmpty),
  STATUS_SHARD_COUNT: z._default(positiveInt, 16),
  PAYMENT_SHARD_COUNT: z._default(positiveInt, 8),
  LOG_LEVEL: z._default(z.enum(LOG_LEVELS), 'info'),
  BALANCE_THRESHOLD_CENTS: z._default(centsSetting, DEFAULT_BALANCE_THRESHOLD_CENTS),
  MAX_PAYMENT_CENTS: z._default(maxPaymentSetting, DEFAULT_MAX_PAYMENT_CENTS),
}));

export type BaseConfig = z.infer<typeof baseConfigSchema>;

function withRegionAliases(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const region = env.DYNAMO_REGION || env.DYNAMO_DB_REGION || env.DYNAMO_LOCK_REGION;
  return region ? { ...env, DYNAMO_REGION: region } : env;
}

function parseOrThrow<T extends z.ZodMiniType>(schema: T, env: NodeJS.ProcessEnv): z.infer<T> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}

export function loadBaseConfig(env: NodeJS.ProcessEnv = process.env): BaseConfig {
  const aliased = withRegionAliases(env);
  return plainBaseConfig(aliased) ?? parseOrThrow(baseConfigSchema, aliased);
}

/**
 * `baseConfigSchema`'s answer for an environment every value of which is in its plain form (a
 * non-blank name, digits for a count or an amount, a listed log level, or absent), computed
 * without zod; `undefined` for anything else, which the schema then decides (and words the error
 * for). Never more lenient than the schema: it accepts a subset of what the schema accepts and
 * answers the same values for it (test/runtime/config.test.ts compares the two).
 */
export function plainBaseConfig(env: NodeJS.ProcessEnv): BaseConfig | undefined {
  const STAGE = plainName(env.STAGE);
  const DYNAMO_REGION = plainName(env.DYNAMO_REGION);
  const STATUS_SHARD_COUNT = plainCount(env.STATUS_SHARD_COUNT, 16);
  const PAYMENT_SHARD_COUNT = plainCount(env.PAYMENT_SHARD_COUNT, 8);
  const LOG_LEVEL = env.LOG_LEVEL === undefined ? 'info' : LOG_LEVELS.find((level) => level === env.LOG_LEVEL);
  const BALANCE_THRESHOLD_CENTS = plainCents(env.BALANCE_THRESHOLD_CENTS, DEFAULT_BALANCE_THRESHOLD_CENTS);
  const MAX_PAYMENT_CENTS = plainCents(env.MAX_PAYMENT_CENTS, DEFAULT_MAX_PAYMENT_CENTS);
  if (
    STAGE === undefined ||
    DYNAMO_REGION === undefined ||
    STATUS_SHARD_COUNT === undefined ||
    PAYMENT_SHARD_COUNT === undefined ||
    LOG_LEVEL === undefined ||
    BALANCE_THRESHOLD_CENTS === undefined ||
    MAX_PAYMENT_CENTS === undefined ||
    MAX_PAYMENT_CENTS < 1
  ) {
    return undefined;
  }
  const config: BaseConfig = { STAGE, DYNAMO_REGION, STATUS_SHARD_COUNT, PAYMENT_SHARD_COUNT, LOG_LEVEL, BALANCE_THRESHOLD_CENTS, MAX_PAYMENT_CENTS };
  for (const key of ['DYNAMO_ENDPOINT', 'SQS_ENDPOINT', 'KINESIS_ENDPOINT'] as const) {
    if (!(key in env)) continue;
    const value = env[key];
    if (value === undefined) {
      config[key] = undefined;
      continue;
    }
    const name = plainName(value);
    if (name === undefined) return undefined;
    config[key] = name;
  }
  return config;
}

/** `nonEmpty` for a string with a non-blank character: its trimmed text. */
function plainName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** `positiveInt.default(fallback)` for absent or up to 15 digits without a leading zero. */
function plainCount(value: unknown, fallback: number): number | undefined {
  if (value === undefined) return fallback;
  return typeof value === 'string' && /^[1-9]\d{0,14}$/.test(value) ? Number(value) : undefined;
}

/** `centsSetting.default(fallback)` for absent or 1 to 12 digits, nothing around them. */
function plainCents(value: unknown, fallback: number): number | undefined {
  if (value === undefined) return fallback;
  return typeof value === 'string' && CENTS_DIGITS.test(value) ? Number(value) : undefined;
}

/** Table names for the tables a function uses; a missing or empty name is a startup error. */
export function loadTableNames<const T extends readonly TableId[]>(env: NodeJS.ProcessEnv, ids: T): Pick<TableNames, T[number]> {
  const values = requiredValues(env, ids.map((id) => allTables[id].envVar));
  const names = {} as Record<TableId, string>;
  ids.forEach((id, i) => {
    names[id] = values[i]!;
  });
  return names;
}

/** Any other required variables (queue URLs, stream name), by name. */
export function loadRequired<const K extends readonly string[]>(env: NodeJS.ProcessEnv, keys: K): Record<K[number], string> {
  const values = requiredValues(env, keys);
  return Object.fromEntries(keys.map((key, i) => [key, values[i]!])) as Record<K[number], string>;
}

/**
 * Non-empty values (trimmed, as `nonEmpty` parses them) of required variables, every missing one
 * named in one error. Plain code, not a zod object built per call: a schema's first parse compiles
 * a parser, which a cold start would pay for a one-off check.
 */
function requiredValues(env: NodeJS.ProcessEnv, keys: readonly string[]): string[] {
  const problems: string[] = [];
  const values = keys.map((key) => {
    const value = env[key]?.trim() ?? '';
    if (value === '') problems.push(`${key}: ${env[key] === undefined ? 'required' : 'must not be empty'}`);
    return value;
  });
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  return values;
}

/**
 * An outside service's base URL: `https:` only, so user ids and amounts never travel in clear
 * text; plain `http:` only to this machine (the local runtime, tests).
 */
export function serviceUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`invalid configuration: ${name} is not a URL`);
  }
  const loopback = url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.hostname === '[::1]';
  if (url.protocol === 'https:' || (url.protocol === 'http:' && loopback)) return value;
  throw new ConfigError(`invalid configuration: ${name} must be an https: URL (got ${url.protocol})`);
}

/** Values a secret holds before anyone set it: empty, the stack's generated placeholder, or a stand-in word. */
const PLACEHOLDER_SECRET = /^(|changeme|change-me|placeholder|todo|test|secret|xxx+)$/i;

/** Whether a secret's value is unset: the stack creates each secret as `{"placeholder":...}` until an operator puts the real one. */
export function isPlaceholderSecret(value: string): boolean {
  const trimmed = value.trim();
  if (PLACEHOLDER_SECRET.test(trimmed)) return true;
  if (!trimmed.startsWith('{')) return false;
  try {
    const parsed: unknown = JSON.parse(trimmed);
    return typeof parsed === 'object' && parsed !== null && Object.hasOwn(parsed, 'placeholder');
  } catch {
    return false;
  }
}

/** RECONCILIATION_EXCEPTION_MAX_AGE_HOURS: whole hours, 1 to 2,880 (120 days, the longest a dispute can amend a day). */
export function reconciliationSettings(env: NodeJS.ProcessEnv = process.env): { reconciliationExceptionMaxAgeHours?: number } {
  const value = env.RECONCILIATION_EXCEPTION_MAX_AGE_HOURS;
  if (value === undefined || value.trim() === '') return {};
  const hours = /^\d{1,4}$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(hours >= 1 && hours <= 2880)) throw new ConfigError(`invalid configuration: RECONCILIATION_EXCEPTION_MAX_AGE_HOURS: whole hours from 1 to 2880 (got ${value})`);
  return { reconciliationExceptionMaxAgeHours: hours };
}

const SCOPE_WORD = /^[\x21-\x7e]{1,128}$/;

/** `{"<client id>": ["billing:self", ...]}`; `{}` or absent: no client is checked. */
export const clientScopesSchema = lazySchema(() => z.record(z.string().check(z.minLength(1), z.maxLength(256)), z.array(z.string().check(z.regex(SCOPE_WORD)))));

/**
 * The api's member-token settings (DESIGN 8, 15): the user id claim, and which client may use
 * which scope. Parsed at cold start; a malformed value is a startup error.
 */
/** PERSON_DAILY_DEBIT_LIMIT_CENTS (DESIGN 15): digits, at least 1; absent or empty, the default. */
export function personDebitLimitSetting(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PERSON_DAILY_DEBIT_LIMIT_CENTS;
  const cents = plainCents(raw === '' ? undefined : raw, DEFAULT_PERSON_DAILY_DEBIT_LIMIT_CENTS);
  if (cents === undefined || cents < 1) throw new ConfigError('invalid configuration: PERSON_DAILY_DEBIT_LIMIT_CENTS: whole cents, at least 1');
  return cents;
}

export function apiAuthSettings(env: NodeJS.ProcessEnv = process.env): { userIdClaim: string; clientScopes?: Readonly<Record<string, readonly string[]>> } {
  const claim = env.USER_ID_CLAIM === undefined || env.USER_ID_CLAIM === '' ? 'sub' : env.USER_ID_CLAIM;
  if (!/^[\w:./-]{1,128}$/.test(claim)) throw new ConfigError('invalid configuration: USER_ID_CLAIM: a claim name (letters, digits, _ : . / -)');
  const raw = env.API_CLIENT_SCOPES;
  if (raw === undefined || raw.trim() === '') return { userIdClaim: claim };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('invalid configuration: API_CLIENT_SCOPES: not JSON');
  }
  const checked = clientScopesSchema.safeParse(parsed);
  if (!checked.success) throw new ConfigError('invalid configuration: API_CLIENT_SCOPES: {"<client id>": ["<scope>", ...]}');
  return Object.keys(checked.data).length === 0 ? { userIdClaim: claim } : { userIdClaim: claim, clientScopes: checked.data };
}
