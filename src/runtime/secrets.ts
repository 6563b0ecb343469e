import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ConfigError } from './config.js';

/**
 * A secret by name: `NAME` in the environment (local runtime, tests) or `NAME_ARN` resolved once
 * from Secrets Manager at cold start (AWS). Neither present is a startup error.
 */
export async function resolveSecret(env: NodeJS.ProcessEnv, name: string, region: string): Promise<string> {
  const direct = env[name];
  if (direct && direct.trim() !== '') return direct;
  const arn = env[`${name}_ARN`];
  if (!arn || arn.trim() === '') throw new ConfigError(`invalid configuration: ${name} or ${name}_ARN is required`);
  const client = new SecretsManagerClient({ region });
  try {
    const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
    if (!out.SecretString) throw new ConfigError(`secret ${name}_ARN has no string value`);
    return out.SecretString;
  } finally {
    client.destroy();
  }
}
