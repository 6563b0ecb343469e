import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinModules, createRequire } from 'node:module';
import { type Bundle, buildBundles, ROOT } from '../../bench/bundles.js';
import { SDK_OFF_LAMBDA_PACKAGES, SIDE_PACKAGES, sidePackagesOf } from '../../lib/bundling.js';
import { allFunctions, type FunctionManifest } from '../../src/manifest/index.js';

/**
 * Each function's bundle, built as the CDK synthesizes it, carries a heavy dependency exactly
 * when its manifest names what needs it: the SQS client for
 * queues it sends to, the Secrets Manager client for secrets, the payments-service clients for the
 * payments and accounts services; never the Kinesis client, the local runtime, the simulator or
 * zod's classic build (schemas are written with zod/mini).
 * An entry module (src/functions/*.ts) that imports an adapter its manifest does not name fails here.
 * The Stripe SDK's client is in no main bundle file: a function whose manifest names the stripe
 * service carries it as a side package (node_modules/stripe/ in its asset, lib/bundling.ts),
 * imported only dynamically; a static import of it (an eager load at cold start) fails here.
 * The AWS SDK's credential providers for environments without credentials (never loaded in
 * Lambda) are side packages of every asset, in no main file.
 * test/manifest/side-packages.test.ts runs bundles in fresh processes.
 */

function expectedCarries(manifest: FunctionManifest): string[] {
  const services = new Set(manifest.services ?? []);
  return [
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

  it('carries the Stripe SDK as a side package exactly when its manifest names the stripe service, and the off-Lambda credential providers always', () => {
    const bundle = bundles.get(name)!;
    expect(bundle.sidePackages.map((p) => p.name)).toEqual([...(manifest.services?.includes('stripe') ? ['stripe'] : []), ...SDK_OFF_LAMBDA_PACKAGES]);
    // The side file is the SDK itself (its client and API resources), not a stub.
    for (const side of bundle.sidePackages.filter((p) => p.name === 'stripe')) expect(side.bytes).toBeGreaterThan(200 * 1024);
    // Each provider's file holds the provider (the SSO one with the SSO client it calls), not a stub.
    const bytes = new Map(bundle.sidePackages.map((p) => [p.name, p.bytes]));
    expect(bytes.get('@aws-sdk/credential-provider-sso')).toBeGreaterThan(100 * 1024);
    expect(bytes.get('@smithy/credential-provider-imds')).toBeGreaterThan(5 * 1024);
  });

  it('leaves to run time only Node built-ins and its side packages, the side packages through import() alone', () => {
    const bundle = bundles.get(name)!;
    const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
    const others = bundle.externalImports.filter((i) => !builtins.has(i.path));
    const sides = new Set<string>(sidePackagesOf(manifest));
    expect(others.filter((i) => !sides.has(i.path))).toEqual([]);
    for (const i of others) expect(i, `${i.path} is imported ${i.kind}`).toMatchObject({ kind: 'dynamic-import' });
    for (const side of SIDE_PACKAGES) expect(others.some((i) => i.path === side)).toBe(sides.has(side));
  });
});

describe('the off-Lambda credential providers', () => {
  // sidePackageCommands bundles each from the project root; the main file would have taken it from
  // where the SDK's default chain imports it. A lock file that nests another version under the
  // chain would make the two differ.
  it('resolve from the project root to the copy the SDK default chain imports', () => {
    const fromRoot = createRequire(join(ROOT, 'package.json'));
    // Every import() of them in a main file is the default chain's (@aws-sdk/credential-provider-node).
    const chain = createRequire(fromRoot.resolve('@aws-sdk/credential-provider-node'));
    for (const name of SDK_OFF_LAMBDA_PACKAGES) expect(chain.resolve(name), name).toBe(fromRoot.resolve(name));
  });
});
