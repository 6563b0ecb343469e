/**
 * How every function is bundled (NodejsFunction with the local esbuild), as plain esbuild
 * options: lib/constructs/billing-function.ts gives these to the CDK, and bench/bundles.ts and
 * test/manifest build the same bundles with esbuild directly. Imports nothing from the CDK.
 */
export const BUNDLE_TARGET = 'node24';

/** CommonJS dependencies (pino) call require() on Node built-ins; ESM has no require. */
export const REQUIRE_BANNER = "import { createRequire as __billingCreateRequire } from 'node:module'; const require = __billingCreateRequire(import.meta.url);";

export const MAIN_FIELDS = ['module', 'main'];

/** The esbuild options NodejsFunction ends up passing (ESM, minified, node, external source maps without sources, SDK bundled). */
export const ESBUILD_OPTIONS = {
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
