import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bundle, buildBundles } from '../../bench/bundles.js';
import { allFunctions, type FunctionManifest } from '../../src/manifest/index.js';

/**
 * Each function's bundle, built as the CDK synthesizes it, carries a heavy dependency exactly
 * when its manifest names what needs it: the Stripe SDK for the stripe service, the SQS client for
 * queues it sends to, the Secrets Manager client for secrets, the payments-service clients for the
 * payments and accounts services; never the Kinesis client, the local runtime or the simulator.
 * An entry module (src/functions/*.ts) that imports an adapter its manifest does not name fails here.
 */

function expectedCarries(manifest: FunctionManifest): string[] {
  const services = new Set(manifest.services ?? []);
  return [
    ...(services.has('stripe') ? ['stripe'] : []),
    ...((manifest.sendsTo ?? []).length > 0 ? ['sqs'] : []),
    ...((manifest.secrets ?? []).length > 0 ? ['secretsManager'] : []),
    ...(services.has('payments') || services.has('accounts') ? ['paymentsService'] : []),
  ].sort();
}

let dir: string;
let bundles: Map<string, Bundle>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'billing-manifest-bundles-'));
  const built = await buildBundles(dir);
  bundles = new Map(built.functions.map((b) => [b.name, b]));
}, 180_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(allFunctions())('%s bundle', (name, manifest) => {
  it('carries exactly the heavy dependencies its manifest names', () => {
    expect([...bundles.get(name)!.carries].sort()).toEqual(expectedCarries(manifest));
  });
});
