import type { SecretsManagerWiring } from './types.js';

/** Secret values by ARN: one Secrets Manager client, the reads in parallel, the client closed after. */
export const secretsManager: SecretsManagerWiring = async (arns, region) => {
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const client = new SecretsManagerClient({ region });
  try {
    return await Promise.all(
      arns.map(async (arn) => {
        const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
        if (!out.SecretString) throw new Error(`secret ${arn} has no string value`);
        return out.SecretString;
      }),
    );
  } finally {
    client.destroy();
  }
};
