import { ConfigError } from './config.js';
import type { SecretsManagerWiring } from './wiring/types.js';

/**
 * Secrets by name, in order: `NAME` in the environment (local runtime, tests) or `NAME_ARN`,
 * resolved at cold start from Secrets Manager (AWS), all in one round. Neither present is a
 * startup error, and so is an ARN without the Secrets Manager adapter.
 */
export async function resolveSecrets(
  env: NodeJS.ProcessEnv,
  names: readonly string[],
  region: string,
  secretsManager: SecretsManagerWiring | undefined,
): Promise<string[]> {
  const values: (string | undefined)[] = [];
  const byArn: { index: number; name: string; arn: string }[] = [];
  names.forEach((name, index) => {
    const direct = env[name];
    if (direct && direct.trim() !== '') {
      values[index] = direct;
      return;
    }
    const arn = env[`${name}_ARN`];
    if (!arn || arn.trim() === '') throw new ConfigError(`invalid configuration: ${name} or ${name}_ARN is required`);
    byArn.push({ index, name, arn });
  });
  if (byArn.length > 0) {
    if (!secretsManager) throw new ConfigError(`invalid configuration: ${byArn.map((s) => `${s.name}_ARN`).join(', ')} given, but this function has no Secrets Manager adapter`);
    const resolved = await secretsManager(
      byArn.map((s) => s.arn),
      region,
    );
    byArn.forEach((s, i) => {
      values[s.index] = resolved[i];
    });
  }
  return values as string[];
}
