import * as z from 'zod';
import { allTables, type TableId, type TableNames } from '../adapters/dynamodb/table-definitions.js';

/** Raised at cold start when the environment is incomplete: never a silent fallback. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

const nonEmpty = z.string().trim().min(1);
const positiveInt = z.coerce.number().int().positive();

/**
 * The balance-webhook gate's minimum observed balance, in cents: the one default shared by the
 * local runtime, the Lambda cold start and the CDK stack (which sets it on the function that uses it).
 */
export const DEFAULT_BALANCE_THRESHOLD_CENTS = 5000;

/**
 * The largest single payment any path may create (loan payments, membership plans, Stripe
 * checkouts), in cents: $10,000. Above it a request is refused before anything is written.
 */
export const DEFAULT_MAX_PAYMENT_CENTS = 1_000_000;

/**
 * Whole cents written as digits only (at most 12). `'50 00'`, `'50.5'`, `'5e3'`, `'0x10'`, `''`
 * and `'-1'` are refused: `Number()` and `z.coerce` would turn some of them into NaN, 0 or a
 * different amount.
 */
export const centsSetting = z
  .union([z.string(), z.number()])
  .transform((value) => String(value).trim())
  .pipe(z.string().regex(/^\d{1,12}$/, 'must be a whole number of cents, digits only (e.g. 5000)'))
  .transform(Number);

/** The payment maximum: whole cents as digits, at least one cent. */
export const maxPaymentSetting = centsSetting.pipe(z.number().int().positive('must be at least 1 cent'));

const baseSchema = z.object({
  /** Required: a deployed function never guesses its stage (the local runtime sets its own). */
  STAGE: nonEmpty,
  /** One region value (docs/design.md, tables); the seed's aliases are accepted. */
  DYNAMO_REGION: nonEmpty,
  /** DynamoDB Local / emulator endpoints; absent in AWS. */
  DYNAMO_ENDPOINT: nonEmpty.optional(),
  SQS_ENDPOINT: nonEmpty.optional(),
  KINESIS_ENDPOINT: nonEmpty.optional(),
  STATUS_SHARD_COUNT: positiveInt.default(16),
  PAYMENT_SHARD_COUNT: positiveInt.default(8),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BALANCE_THRESHOLD_CENTS: centsSetting.default(DEFAULT_BALANCE_THRESHOLD_CENTS),
  MAX_PAYMENT_CENTS: maxPaymentSetting.default(DEFAULT_MAX_PAYMENT_CENTS),
});

export type BaseConfig = z.infer<typeof baseSchema>;

function withRegionAliases(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const region = env.DYNAMO_REGION || env.DYNAMO_DB_REGION || env.DYNAMO_LOCK_REGION;
  return region ? { ...env, DYNAMO_REGION: region } : env;
}

function parseOrThrow<T extends z.ZodType>(schema: T, env: NodeJS.ProcessEnv): z.infer<T> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}

export function loadBaseConfig(env: NodeJS.ProcessEnv = process.env): BaseConfig {
  return parseOrThrow(baseSchema, withRegionAliases(env));
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
