import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lazySchemasBuilt } from '../../src/domain/lazy-schema.js';
import { baseConfigSchema, ConfigError, loadBaseConfig, plainBaseConfig } from '../../src/runtime/config.js';

/** What the zod schema alone answers: the config, or the message loadBaseConfig throws. */
function bySchema(env: NodeJS.ProcessEnv): { config: unknown } | { error: string } {
  const parsed = baseConfigSchema.safeParse(env);
  if (parsed.success) return { config: parsed.data };
  return { error: `invalid configuration: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`).join('; ')}` };
}

function byLoad(env: NodeJS.ProcessEnv): { config: unknown } | { error: string } {
  try {
    return { config: loadBaseConfig(env) };
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return { error: (error as Error).message };
  }
}

/** Values near every rule's edges: blanks, signs, radixes, exponents, padding, 12 and 13 digits, huge counts. */
const TRICKY = ['', ' ', '  x ', 'x', '0', '00', '000', '1', '01', '007', ' 7 ', '7 ', '+5', '-1', '-0', '1.0', '1.5', '5e3', '0x10', '0b1', 'Infinity', 'NaN', '50 00', '1e400',
  '123456789012', '1234567890123', '999999999999999', '9999999999999999', '99999999999999999999', 'info', 'INFO', 'silent', 'trace', 'loud', 'us-east-1', 'http://127.0.0.1:8000'];
const value = fc.option(fc.oneof(fc.constantFrom(...TRICKY), fc.string({ maxLength: 6 }), fc.integer().map(String)), { nil: undefined });
const KEYS = ['STAGE', 'DYNAMO_REGION', 'DYNAMO_ENDPOINT', 'SQS_ENDPOINT', 'KINESIS_ENDPOINT', 'STATUS_SHARD_COUNT', 'PAYMENT_SHARD_COUNT', 'LOG_LEVEL', 'BALANCE_THRESHOLD_CENTS', 'MAX_PAYMENT_CENTS'] as const;
const envs = fc.record(Object.fromEntries(KEYS.map((k) => [k, value])) as Record<(typeof KEYS)[number], typeof value>, { requiredKeys: [] });
/** Mostly valid environments, one or two values perturbed: the plain path is exercised, not only the fallback. */
const VALID: NodeJS.ProcessEnv = { STAGE: 'prod', DYNAMO_REGION: 'us-east-1', STATUS_SHARD_COUNT: '16', PAYMENT_SHARD_COUNT: '8', LOG_LEVEL: 'info', BALANCE_THRESHOLD_CENTS: '5000', MAX_PAYMENT_CENTS: '1000000' };
const nearlyValid = fc.tuple(fc.constantFrom(...KEYS), value, fc.constantFrom(...KEYS), value).map(([a, va, b, vb]) => ({ ...VALID, [a]: va, [b]: vb }));

describe('loadBaseConfig', () => {
  it('answers exactly what the zod schema answers, for any environment: the same config, or a ConfigError with the same issue messages', () => {
    fc.assert(
      fc.property(fc.oneof(envs, nearlyValid), (env) => {
        expect(byLoad(env)).toEqual(bySchema(env));
        const plain = plainBaseConfig(env);
        // The plain path never accepts what the schema refuses, and answers the schema's values.
        if (plain !== undefined) expect({ config: plain }).toEqual(bySchema(env));
      }),
      { numRuns: 3000 },
    );
  });

  it('takes the plain path for an environment as the CDK sets it: no zod schema is built, none compiled', () => {
    const env = { ...VALID, DYNAMO_ENDPOINT: 'http://127.0.0.1:8000', BILLING_ACTIVITY_TABLE: 'prod-billing-activity', AWS_REGION: 'us-east-1' };
    const before = lazySchemasBuilt();
    const config = loadBaseConfig(env);
    expect(config).toEqual({ ...VALID, DYNAMO_ENDPOINT: 'http://127.0.0.1:8000', STATUS_SHARD_COUNT: 16, PAYMENT_SHARD_COUNT: 8, BALANCE_THRESHOLD_CENTS: 5000, MAX_PAYMENT_CENTS: 1_000_000 });
    expect(plainBaseConfig(env)).toEqual(config);
    // Absent settings take the schema's defaults on the plain path too.
    expect(plainBaseConfig({ STAGE: 'dev', DYNAMO_DB_REGION: 'x', DYNAMO_REGION: 'eu-west-1' })).toEqual({
      STAGE: 'dev',
      DYNAMO_REGION: 'eu-west-1',
      STATUS_SHARD_COUNT: 16,
      PAYMENT_SHARD_COUNT: 8,
      LOG_LEVEL: 'info',
      BALANCE_THRESHOLD_CENTS: 5000,
      MAX_PAYMENT_CENTS: 1_000_000,
    });
    expect(lazySchemasBuilt()).toBe(before);
  });

  it('still refuses with the schema words: a missing stage, a blank endpoint, a bad count, level or amount', () => {
    expect(() => loadBaseConfig({ DYNAMO_REGION: 'r' })).toThrow('invalid configuration: STAGE: Invalid input: expected string, received undefined');
    expect(() => loadBaseConfig({ ...VALID, DYNAMO_ENDPOINT: ' ' })).toThrow('invalid configuration: DYNAMO_ENDPOINT: Too small: expected string to have >=1 characters');
    expect(() => loadBaseConfig({ ...VALID, STATUS_SHARD_COUNT: '0', LOG_LEVEL: 'loud' })).toThrow(
      'invalid configuration: STATUS_SHARD_COUNT: Too small: expected number to be >0; LOG_LEVEL: Invalid option: expected one of "fatal"|"error"|"warn"|"info"|"debug"|"trace"|"silent"',
    );
    expect(() => loadBaseConfig({ ...VALID, BALANCE_THRESHOLD_CENTS: '50.5' })).toThrow('invalid configuration: BALANCE_THRESHOLD_CENTS: must be a whole number of cents, digits only (e.g. 5000)');
    expect(() => loadBaseConfig({ ...VALID, MAX_PAYMENT_CENTS: '000' })).toThrow('invalid configuration: MAX_PAYMENT_CENTS: must be at least 1 cent');
    // Forms the plain path leaves to the schema, which accepts them as before.
    expect(loadBaseConfig({ ...VALID, STATUS_SHARD_COUNT: ' 0x10 ', BALANCE_THRESHOLD_CENTS: ' 12 ' })).toMatchObject({ STATUS_SHARD_COUNT: 16, BALANCE_THRESHOLD_CENTS: 12 });
  });
});
