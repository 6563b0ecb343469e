import type { FunctionManifest } from '../src/manifest/index.js';

/**
 * How every function is bundled (NodejsFunction with the local esbuild), as plain esbuild
 * options: lib/constructs/billing-function.ts gives these to the CDK, and bench/bundles.ts and
 * test/manifest build the same bundles with esbuild directly. Imports nothing from the CDK.
 */
export const BUNDLE_TARGET = 'node24';

/** CommonJS dependencies (pino) call require() on Node built-ins; ESM has no require. */
export const REQUIRE_BANNER = "import { createRequire as __billingCreateRequire } from 'node:module'; const require = __billingCreateRequire(import.meta.url);";

export const MAIN_FIELDS = ['module', 'main'];

/**
 * Packages kept out of a function's main bundle file. The code loads each only through a dynamic
 * `import()` on first use, and esbuild, writing one file without code splitting, would inline that
 * import and V8 would compile all of it at every cold start. Marked external, the `import()` stays
 * in the output and Node resolves it at run time from the asset's own `node_modules/{name}/`,
 * where `sidePackageCommands` puts the package pre-bundled with the same options (one ESM file,
 * minified). A static value import of an external would be a top-level import of the bundle,
 * loaded eagerly (test/manifest/bundles.test.ts fails on one).
 *
 * - `stripe`: the Stripe SDK (247 KiB minified), loaded on the first card charge or PaymentIntent
 *   lookup (src/runtime/wiring/stripe.ts). The adapters import the SDK for its types only. Webhook
 *   signatures stay in the main bundle: the SDK's own Webhooks modules, imported by path
 *   (src/adapters/stripe/webhook-signature.ts), are not this package name.
 * - The AWS SDK's credential providers that its default chain imports only when the environment
 *   holds no credentials (SDK_OFF_LAMBDA_PACKAGES). Lambda always sets AWS_ACCESS_KEY_ID,
 *   AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, so a function never loads them; bundled inline
 *   they were ~130 KiB of every main file (with the STS, SSO and sign-in clients they pull in)
 *   that V8 compiled at every cold start. The asset still carries them, so a bundle run with a
 *   profile or a container role instead (test/manifest/side-packages.test.ts) resolves its
 *   credentials as before.
 */
export const SDK_OFF_LAMBDA_PACKAGES = [
  '@aws-sdk/credential-provider-sso',
  '@aws-sdk/credential-provider-ini',
  '@aws-sdk/credential-provider-process',
  '@aws-sdk/credential-provider-web-identity',
  '@aws-sdk/credential-provider-http',
  '@smithy/credential-provider-imds',
] as const;

export const SIDE_PACKAGES = ['stripe', ...SDK_OFF_LAMBDA_PACKAGES] as const;
export type SidePackage = (typeof SIDE_PACKAGES)[number];

/**
 * Which side packages a function's asset carries: the Stripe SDK when its manifest names the
 * stripe service, and the AWS SDK's off-Lambda credential providers in every asset (every function
 * has an AWS client, whose default credential chain may import them).
 */
export function sidePackagesOf(manifest: FunctionManifest): SidePackage[] {
  return [...((manifest.services ?? []).includes('stripe') ? (['stripe'] as const) : []), ...SDK_OFF_LAMBDA_PACKAGES];
}

/** Options common to the main bundle and the side packages (ESM, minified, node, external source maps without sources). */
const COMMON_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: BUNDLE_TARGET,
  minify: true,
  sourcemap: 'external',
  sourcesContent: false,
  mainFields: MAIN_FIELDS,
  banner: { js: REQUIRE_BANNER },
} as const;

/** The esbuild options NodejsFunction ends up passing (those above, the AWS SDK bundled, the side packages external). */
export const ESBUILD_OPTIONS = {
  ...COMMON_OPTIONS,
  external: [...SIDE_PACKAGES],
} as const;

/** Where a side package lives in the asset (relative to its root, next to index.mjs). */
export function sidePackageDir(name: SidePackage): string {
  return `node_modules/${name}`;
}

/** Its package.json: Node resolves the bare `import('{name}')` to the one pre-bundled file through `exports`. */
export function sidePackageJson(name: SidePackage): string {
  return JSON.stringify({ name, private: true, type: 'module', exports: './index.mjs' });
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * The shell commands that write the side packages into an asset (NodejsFunction's
 * `commandHooks.afterBundling`; bench/bundles.ts runs the same commands): one esbuild run that
 * bundles each package's entry (resolved as its `import()` is, from the project root) into its own
 * self-contained `{outputDir}/node_modules/{name}/index.mjs` with COMMON_OPTIONS (no code shared
 * between them), then each package's package.json.
 */
export function sidePackageCommands(projectRoot: string, outputDir: string, packages: readonly SidePackage[]): string[] {
  if (packages.length === 0) return [];
  const esbuild = shellQuote(`${projectRoot}/node_modules/.bin/esbuild`);
  const o = COMMON_OPTIONS;
  const args = [
    ...packages.map((name) => `${sidePackageDir(name)}/index=${name}`),
    o.bundle ? '--bundle' : '',
    `--platform=${o.platform}`,
    `--format=${o.format}`,
    `--target=${o.target}`,
    o.minify ? '--minify' : '',
    `--sourcemap=${o.sourcemap}`,
    `--sources-content=${String(o.sourcesContent)}`,
    `--main-fields=${o.mainFields.join(',')}`,
    `--banner:js=${o.banner.js}`,
    `--outdir=${outputDir}`,
    '--out-extension:.js=.mjs',
    '--log-level=warning',
  ].filter((a) => a !== '');
  return [
    `cd ${shellQuote(projectRoot)} && ${esbuild} ${args.map(shellQuote).join(' ')}`,
    ...packages.map((name) => `printf '%s\\n' ${shellQuote(sidePackageJson(name))} > ${shellQuote(`${outputDir}/${sidePackageDir(name)}/package.json`)}`),
  ];
}
