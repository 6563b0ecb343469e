import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundle } from '../../bench/bundles.js';
import { LocalSecretsManager } from '../../bench/local-secrets-manager.js';
import { replaySource, RequestRecorder, wavesOf } from '../../bench/request-replay.js';
import { secretsManager as readSecrets } from '../../src/runtime/wiring/secrets-manager.js';

/**
 * The cold-start bench gives functions their secrets by ARN, as deployed: the production wiring
 * (src/runtime/wiring/secrets-manager.ts, the real SDK client) reads them from a local
 * GetSecretValue through the SDK's own per-service endpoint variable, and the same-requests floor
 * replays those reads.
 */

const ACH = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:bench/achWebhook-AbCdEf';
const STRIPE = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:bench/stripeWebhook-AbCdEf';

/** Runs `work` with these variables set in this process, then puts the environment back. */
async function withEnv<T>(vars: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await work();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('local Secrets Manager', () => {
  const secrets = new LocalSecretsManager({ [ACH]: 'ach-secret', [STRIPE]: 'whsec_1' });
  const recorder = new RequestRecorder(() => secrets.endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'local-secrets-test-'));
  const credentials = { AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };

  beforeAll(async () => {
    await secrets.start();
    await recorder.start();
  });
  afterAll(async () => {
    await recorder.stop();
    await secrets.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers the production wiring's reads by ARN, in order, through AWS_ENDPOINT_URL_SECRETS_MANAGER", async () => {
    const values = await withEnv({ ...credentials, AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint }, () => readSecrets([STRIPE, ACH], 'us-east-1'));
    expect(values).toEqual(['whsec_1', 'ach-secret']);
    expect([...secrets.reads].sort()).toEqual([ACH, STRIPE].sort());
  });

  it('refuses a secret it does not hold as Secrets Manager does', async () => {
    const missing = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:bench/none-AbCdEf';
    await expect(withEnv({ ...credentials, AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint }, () => readSecrets([missing], 'us-east-1'))).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
  });

  it('is recorded and replayed by the same-requests floor like the other services', async () => {
    const recorded = await recorder.record(async () => {
      await withEnv({ ...credentials, AWS_ENDPOINT_URL_SECRETS_MANAGER: recorder.endpoint }, () => readSecrets([ACH], 'us-east-1'));
    });
    expect(recorded.map((r) => [r.target, r.input])).toEqual([['secretsmanager.GetSecretValue', { SecretId: ACH }]]);

    const waves = wavesOf(recorded);
    const floor = await bundle('secrets-floor', dir, { contents: replaySource(waves) });
    const before = secrets.reads.length;
    await withEnv({ DYNAMO_REGION: 'us-east-1', AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint }, async () => {
      const { handler } = (await import(pathToFileURL(floor.file).href)) as { handler: (event: unknown) => Promise<{ requests: number }> };
      expect(await handler({ waves })).toEqual({ requests: 1 });
    });
    expect(secrets.reads.slice(before)).toEqual([ACH]);
  });
});
