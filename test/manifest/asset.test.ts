import { App, Duration, Stack } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bundle, buildFunctionBundle, ROOT } from '../../bench/bundles.js';
import { sidePackagesOf } from '../../lib/bundling.js';
import { BillingFunction } from '../../lib/constructs/billing-function.js';
import { FUNCTIONS, type FunctionManifest, type FunctionName } from '../../src/manifest/index.js';

/**
 * The bench and test/manifest measure "the bundle as the CDK synthesizes it" by building it with
 * esbuild's API from lib/bundling.ts; the CDK runs esbuild's command line from its own props and
 * the side-package commands after it. Here one stack with two functions is synthesized with real
 * bundling (the infra tests skip it), and each asset must hold exactly the files bench/bundles.ts
 * builds, byte for byte: the main file, and the side packages (the Stripe SDK where the manifest
 * names it, the AWS SDK's off-Lambda credential providers in every asset).
 */

const NAMES: FunctionName[] = ['stripe-webhook', 'ach-handler'];
const manifestOf = (name: FunctionName): FunctionManifest => FUNCTIONS[name];

let dir: string;
const assets = new Map<FunctionName, string>();
const bench = new Map<FunctionName, Bundle>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'billing-asset-'));
  const app = new App({ outdir: join(dir, 'cdk.out') });
  const stack = new Stack(app, 'AssetCheck');
  for (const name of NAMES) {
    const fn = new BillingFunction(stack, name, {
      functionName: name,
      description: name,
      entry: join(ROOT, FUNCTIONS[name].entry),
      timeout: Duration.seconds(10),
      environment: {},
      logRetention: logs.RetentionDays.ONE_DAY,
      retainLogs: false,
      sidePackages: sidePackagesOf(manifestOf(name)),
    });
    const code = stack.resolve((fn.function.node.defaultChild as lambda.CfnFunction).code) as { s3Key: { 'Fn::Sub': string } | string };
    const key = typeof code.s3Key === 'string' ? code.s3Key : code.s3Key['Fn::Sub'];
    assets.set(name, join(dir, 'cdk.out', `asset.${key.replace(/\.zip$/, '')}`));
  }
  app.synth();
  for (const name of NAMES) bench.set(name, await buildFunctionBundle(name, join(dir, 'bench')));
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every file of a directory tree, as paths relative to it, but source maps (their `sources` are relative to where each was built). */
function filesOf(root: string, at = ''): string[] {
  return readdirSync(join(root, at), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesOf(root, join(at, e.name)) : [join(at, e.name)]))
    .filter((f) => !f.endsWith('.map'))
    .sort();
}

describe.each(NAMES)('%s asset', (name) => {
  it('holds the files bench/bundles.ts builds, byte for byte', () => {
    const asset = assets.get(name)!;
    const built = join(dir, 'bench', name);
    expect(existsSync(asset)).toBe(true);
    expect(filesOf(asset)).toEqual(filesOf(built));
    const sides = sidePackagesOf(manifestOf(name)).flatMap((p) => [`node_modules/${p}/index.mjs`, `node_modules/${p}/package.json`]);
    expect(filesOf(asset)).toEqual(['index.mjs', ...sides].sort());
    expect(sides.some((f) => f.startsWith('node_modules/stripe/'))).toBe(name === 'stripe-webhook');
    for (const file of filesOf(asset)) expect(readFileSync(join(asset, file)).equals(readFileSync(join(built, file))), file).toBe(true);
  });
});
