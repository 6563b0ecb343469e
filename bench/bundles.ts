import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { ESBUILD_OPTIONS, SDK_OFF_LAMBDA_PACKAGES, type SidePackage, sidePackageCommands, sidePackageDir, sidePackagesOf } from '../lib/bundling.js';
import { allFunctions, FUNCTIONS, type FunctionManifest, type FunctionName } from '../src/manifest/index.js';

/**
 * Each function's bundle as the CDK synthesizes it: its manifest entry (src/manifest/functions.ts)
 * through esbuild with the options NodejsFunction is given (lib/bundling.ts: ESM, minified,
 * platform node, SDK bundled, module-first main fields, the createRequire banner, external source
 * map, the side packages external), written to `{dir}/{name}/index.mjs` as the asset holds it,
 * with the side packages its manifest names pre-bundled beside it by the same commands the CDK
 * runs after bundling (`{dir}/{name}/node_modules/stripe/index.mjs`). Next to them, a bundle
 * holding only a bare DynamoDB client that makes one GetItem: the floor.
 *
 *   npx tsx bench/bundles.ts     prints each bundle's size and which heavy dependencies it carries
 */

export const ROOT = resolve(import.meta.dirname, '..');

/**
 * Heavy dependencies, by where their modules live; each belongs only in the functions whose
 * manifest names it. `stripe` is the SDK's client (its core and API resources), which belongs in
 * no main bundle: it is a side package (lib/bundling.ts). The few SDK modules that check webhook
 * signatures (Webhooks, Error, the Node platform functions) are not it.
 */
export const HEAVY: Record<string, RegExp> = {
  stripe: /^node_modules\/stripe\/esm\/(stripe\.(core|esm\.node)\.js|resources\/|apiVersion\.js|RequestSender\.js)/,
  sqs: /^node_modules\/@aws-sdk\/client-sqs\//,
  secretsManager: /^node_modules\/@aws-sdk\/client-secrets-manager\//,
  paymentsService: /^src\/adapters\/payments-service\//,
  kinesis: /^node_modules\/@aws-sdk\/client-kinesis\//,
  local: /^src\/local\//,
  simulator: /^src\/adapters\/processor\//,
  /** zod's classic build: no function carries it (schemas are written with zod/mini, src/domain/zod.ts). */
  zodClassic: /^node_modules\/zod\/v4\/classic\//,
  /**
   * The AWS SDK's credential providers for environments without credentials, and the STS, SSO and
   * sign-in clients they use: side packages of every asset (lib/bundling.ts), in no main file.
   */
  sdkOffLambda: /^node_modules\/(@aws-sdk\/(credential-provider-(sso|ini|process|web-identity|http|login)|nested-clients|token-providers)|@smithy\/credential-provider-imds)\//,
};

export interface Bundle {
  readonly name: string;
  readonly file: string;
  readonly bytes: number;
  /** The heavy dependencies (keys of HEAVY) found among its inputs. */
  readonly carries: string[];
  /** Bytes in the output per top-level package or source folder, largest first. */
  readonly byInput: { readonly input: string; readonly bytes: number }[];
  /** Imports the main file leaves to run time (external): node built-ins and side packages, with how each is imported. */
  readonly externalImports: { readonly path: string; readonly kind: string }[];
  /** The side packages beside it: `{dir}/{name}/node_modules/{package}/index.mjs`. */
  readonly sidePackages: { readonly name: SidePackage; readonly file: string; readonly bytes: number }[];
}

/** The bare client: a Lambda handler that makes one GetItem with a default DynamoDB client. */
export const BARE_CLIENT_SOURCE = `import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
const client = new DynamoDBClient({
  region: process.env.DYNAMO_REGION,
  ...(process.env.DYNAMO_ENDPOINT ? { endpoint: process.env.DYNAMO_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
});
export const handler = async (event) => {
  const out = await client.send(new GetItemCommand({ TableName: process.env.BILLING_ACTIVITY_TABLE, Key: event.key, ConsistentRead: true }));
  return { found: out.Item !== undefined };
};
`;

function grouped(inputs: Metafile['outputs'][string]['inputs']): { input: string; bytes: number }[] {
  const groups = new Map<string, number>();
  for (const [file, info] of Object.entries(inputs)) {
    const parts = file.split('/');
    const key = parts[0] === 'node_modules' ? parts.slice(0, parts[1]!.startsWith('@') ? 3 : 2).join('/') : parts.slice(0, Math.min(parts.length - 1, 3)).join('/');
    groups.set(key, (groups.get(key) ?? 0) + info.bytesInOutput);
  }
  return [...groups].map(([input, bytes]) => ({ input, bytes })).sort((a, b) => b.bytes - a.bytes);
}

/**
 * One bundle built as the CDK builds a function's: from an entry file, or from source text (the
 * floors); with the side packages given beside it (by default the AWS SDK's off-Lambda credential
 * providers, which every bundle of an AWS client leaves to run time). `inlineSdkCredentialProviders`
 * builds it the way every bundle was built before they were side packages (one file, for the
 * bench's second floor).
 */
export async function bundle(
  name: string,
  dir: string,
  source: { entry: string } | { contents: string },
  sidePackages: readonly SidePackage[] = SDK_OFF_LAMBDA_PACKAGES,
  options: { readonly inlineSdkCredentialProviders?: boolean } = {},
): Promise<Bundle> {
  const inlined = (p: string): boolean => options.inlineSdkCredentialProviders === true && (SDK_OFF_LAMBDA_PACKAGES as readonly string[]).includes(p);
  const outdir = join(dir, name);
  mkdirSync(outdir, { recursive: true });
  const file = join(outdir, 'index.mjs');
  const result = await build({
    ...ESBUILD_OPTIONS,
    mainFields: [...ESBUILD_OPTIONS.mainFields],
    external: ESBUILD_OPTIONS.external.filter((e) => !inlined(e)),
    ...('entry' in source ? { entryPoints: [join(ROOT, source.entry)] } : { stdin: { contents: source.contents, resolveDir: ROOT, loader: 'js' as const } }),
    outfile: file,
    metafile: true,
    logLevel: 'silent',
  });
  const output = Object.entries(result.metafile.outputs).find(([path]) => path.endsWith('.mjs'))![1];
  const inputs = Object.keys(output.inputs);
  const externalImports = output.imports.filter((i) => i.external === true).map((i) => ({ path: i.path, kind: i.kind }));
  const sides = sidePackages.filter((p) => !inlined(p));
  for (const command of sidePackageCommands(ROOT, outdir, sides)) execSync(command, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], shell: '/bin/sh' });
  return {
    name,
    file,
    bytes: output.bytes,
    carries: Object.entries(HEAVY).filter(([, pattern]) => inputs.some((i) => pattern.test(i))).map(([k]) => k),
    byInput: grouped(output.inputs),
    externalImports,
    sidePackages: sides.map((p) => {
      const sideFile = join(outdir, sidePackageDir(p), 'index.mjs');
      return { name: p, file: sideFile, bytes: statSync(sideFile).size };
    }),
  };
}

/** One function's bundle (and its side packages), built into `dir`. */
export function buildFunctionBundle(name: FunctionName, dir: string): Promise<Bundle> {
  const manifest: FunctionManifest = FUNCTIONS[name];
  return bundle(name, dir, { entry: manifest.entry }, sidePackagesOf(manifest));
}

/** The bare-client bundle and every function's bundle, built into `dir`. */
export async function buildBundles(dir: string): Promise<{ baseline: Bundle; functions: Bundle[] }> {
  const baseline = await bundle('bare-dynamodb-client', dir, { contents: BARE_CLIENT_SOURCE });
  const functions: Bundle[] = [];
  for (const [name] of allFunctions()) functions.push(await buildFunctionBundle(name, dir));
  return { baseline, functions };
}

/** The bare client in one file, the SDK's credential providers inline: every bundle's shape before they were side packages. */
export function buildBareOneFile(dir: string): Promise<Bundle> {
  return bundle('bare-dynamodb-client-one-file', dir, { contents: BARE_CLIENT_SOURCE }, [], { inlineSdkCredentialProviders: true });
}

export interface BundleFigure {
  readonly name: string;
  readonly bytes: number;
  readonly sizeRatio: number;
  readonly carries: string[];
  /** Bytes of the side packages beside it (loaded on first use, not at import). */
  readonly sideBytes: number;
}

/** Sizes only (cold starts are bench/cold-start.ts's): bytes, × the bare client, heavy dependencies carried. */
export async function measureBundles(): Promise<{ baseline: { bytes: number }; handlers: BundleFigure[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'billing-bench-bundles-'));
  try {
    const { baseline, functions } = await buildBundles(dir);
    return {
      baseline: { bytes: baseline.bytes },
      handlers: functions.map((f) => ({ name: f.name, bytes: f.bytes, sizeRatio: Math.round((f.bytes / baseline.bytes) * 100) / 100, carries: f.carries, sideBytes: f.sidePackages.reduce((sum, p) => sum + p.bytes, 0) })),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const figures = await measureBundles();
  console.log(`bare DynamoDB client: ${(figures.baseline.bytes / 1024).toFixed(0)} KiB`);
  for (const h of figures.handlers) console.log(`${h.name.padEnd(24)} ${(h.bytes / 1024).toFixed(0).padStart(5)} KiB  ×${h.sizeRatio.toFixed(2)}  carries: ${h.carries.join(', ') || '-'}${h.sideBytes > 0 ? `  side packages: ${(h.sideBytes / 1024).toFixed(0)} KiB` : ''}`);
}
