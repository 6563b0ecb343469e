import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

/**
 * Section 3: per-Lambda bundle size and cold import time. Each src/handlers/*.ts is bundled with
 * the options lib/constructs/billing-function.ts gives NodejsFunction (ESM, minified, platform
 * node, SDK bundled, module-first main fields, the createRequire banner), next to a bundle that
 * holds only a bare DynamoDB client. Cold import = a fresh `node` process timing
 * `await import(bundle)`, median of several runs.
 */

export interface BundleFigure {
  readonly name: string;
  readonly bytes: number;
  readonly coldImportMs: number;
  readonly sizeRatio: number;
  readonly importRatio: number;
}

const ROOT = resolve(import.meta.dirname, '..');
const RUNS = 7;

const CDK_LIKE: BuildOptions = {
  bundle: true,
  format: 'esm',
  minify: true,
  platform: 'node',
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: { js: "import { createRequire as __billingCreateRequire } from 'node:module'; const require = __billingCreateRequire(import.meta.url);" },
  logLevel: 'silent',
};

function coldImportMs(file: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(String(performance.now() - t));`;
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const out = execFileSync(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    samples.push(Number(out));
  }
  samples.sort((a, b) => a - b);
  return Math.round(samples[Math.floor(samples.length / 2)]! * 10) / 10;
}

export async function measureBundles(): Promise<{ baseline: { bytes: number; coldImportMs: number }; handlers: BundleFigure[] }> {
  const out = mkdtempSync(join(tmpdir(), 'billing-bench-bundles-'));
  try {
    const baselineFile = join(out, 'bare-dynamodb-client.mjs');
    await build({
      ...CDK_LIKE,
      stdin: { contents: "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';\nexport const client = new DynamoDBClient({ region: 'us-east-1' });\n", resolveDir: ROOT, loader: 'ts' },
      outfile: baselineFile,
    });
    const baseline = { bytes: statSync(baselineFile).size, coldImportMs: coldImportMs(baselineFile) };
    const handlersDir = join(ROOT, 'src', 'handlers');
    const entries = readdirSync(handlersDir).filter((f) => f.endsWith('.ts')).sort();
    const handlers: BundleFigure[] = [];
    for (const entry of entries) {
      const file = join(out, `${basename(entry, '.ts')}.mjs`);
      await build({ ...CDK_LIKE, entryPoints: [join(handlersDir, entry)], outfile: file });
      const bytes = statSync(file).size;
      const ms = coldImportMs(file);
      handlers.push({
        name: basename(entry, '.ts'),
        bytes,
        coldImportMs: ms,
        sizeRatio: Math.round((bytes / baseline.bytes) * 100) / 100,
        importRatio: Math.round((ms / baseline.coldImportMs) * 100) / 100,
      });
    }
    return { baseline, handlers };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
