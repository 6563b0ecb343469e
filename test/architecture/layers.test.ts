import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layer rules live in `.dependency-cruiser.cjs` (the same file `npx depcruise src lib bin`
 * reads). This test runs them over the repository, and over a fixture tree holding one violation
 * per rule so that a rule which stops firing is noticed.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const FIXTURE = join(ROOT, 'test', 'architecture', 'fixtures', 'layers');

async function cruiseFrom(baseDir: string, roots: string[]): Promise<ICruiseResult> {
  const options = await extractDepcruiseOptions(CONFIG);
  const tsConfig = extractTSConfig(join(ROOT, 'tsconfig.json'));
  const { output } = await cruise(roots, { ...options, baseDir }, {}, { tsConfig });
  if (typeof output === 'string') throw new Error('dependency-cruiser returned a report, not a result');
  return output;
}

function describeViolation(v: IViolation): string {
  const cycle = v.cycle?.length ? ` (cycle: ${[v.from, ...v.cycle.map((c) => c.name)].join(' → ')})` : '';
  return `${v.rule.name}: ${v.from} → ${v.to}${cycle}`;
}

function ruleNames(result: ICruiseResult): string[] {
  return (result.summary.ruleSetUsed?.forbidden ?? []).map((r) => r.name ?? '(unnamed)');
}

describe('layer rules (dependency-cruiser, .dependency-cruiser.cjs)', () => {
  it('src, lib and bin break none of them', async () => {
    const result = await cruiseFrom(ROOT, ['src', 'lib', 'bin']);
    // The cruise read the real tree and resolved the TypeScript imports (`.js` → `.ts`).
    const money = result.modules.find((m) => m.source === 'src/domain/money.ts');
    expect(money?.dependencies.map((d) => d.resolved)).toEqual(expect.arrayContaining(['src/domain/zod.ts']));
    const zod = result.modules.find((m) => m.source === 'src/domain/zod.ts');
    expect(zod?.dependencies.map((d) => d.resolved)).toEqual(expect.arrayContaining([expect.stringMatching(/^node_modules\/zod\/mini\//)]));
    expect(result.modules.some((m) => m.source === 'src/handlers/api.ts' && m.dependencies.some((d) => d.resolved === 'src/handlers/shared/http.ts'))).toBe(true);
    expect(result.summary.totalCruised).toBeGreaterThan(100);

    expect(result.summary.violations.map(describeViolation)).toEqual([]);
  });

  it('each rule fires on the fixture tree, once per planted violation, and nowhere else', async () => {
    const result = await cruiseFrom(FIXTURE, ['src', 'lib', 'bin']);
    expect(result.summary.violations.map(describeViolation).sort()).toEqual(
      [
        'domain-is-pure: src/domain/builtin.ts → crypto',
        'domain-is-pure: src/domain/package.ts → ../../../../node_modules/pino/pino.js',
        'domain-is-pure: src/domain/outside.ts → src/adapters/clean.ts',
        'domain-rules-below-use-cases: src/domain/reaches-use-case.ts → src/domain/use-cases/verb.ts',
        'domain-no-cycles: src/domain/cycle-a.ts → src/domain/cycle-b.ts (cycle: src/domain/cycle-a.ts → src/domain/cycle-b.ts → src/domain/cycle-a.ts)',
        'adapters-below-runtime-and-handlers: src/adapters/runtime.ts → src/runtime/deps.ts',
        'adapters-below-runtime-and-handlers: src/adapters/handler.ts → src/handlers/clean.ts',
        'adapters-below-runtime-and-handlers: src/adapters/local.ts → src/local/clean.ts',
        'handlers-through-runtime: src/handlers/adapter.ts → src/adapters/clean.ts',
        'handlers-not-local: src/handlers/local.ts → src/local/clean.ts',
        'src-not-infrastructure: src/local/lib.ts → lib/stack.ts',
        'src-not-infrastructure: src/runtime/bin.ts → bin/app.ts',
        'resolvable: src/handlers/unresolved.ts → ./does-not-exist.js',
        'zod-through-one-module: src/handlers/zod.ts → ../../../../node_modules/zod/index.d.cts',
      ].sort(),
    );
  });

  it('every rule in the configuration has a planted violation in the fixture tree', async () => {
    const result = await cruiseFrom(FIXTURE, ['src', 'lib', 'bin']);
    const fired = new Set(result.summary.violations.map((v) => v.rule.name));
    expect(ruleNames(result).filter((name) => !fired.has(name))).toEqual([]);
  });
});

/* ---------------- the domain reads no environment ---------------- */

const SOURCE = /\.(?:[cm]?ts|tsx|[cm]?js|jsx)$/;

function listSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listSources(path);
    return entry.isFile() && SOURCE.test(entry.name) ? [path] : [];
  });
}

/**
 * What no import rule can see: a read of the environment (process.env, process['env'],
 * `const { env } = process`, globalThis.process, import.meta.env) and an import() or require()
 * whose specifier is not a literal. Read from the syntax tree, so comments, strings and a record's
 * `process` field are not mistaken for one.
 */
function environmentUses(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) => found.push(`${what} (line ${source.getLineAndCharacterOfPosition(node.getStart()).line + 1})`);
  const visit = (node: ts.Node): void => {
    const parent = node.parent;
    if (ts.isIdentifier(node) && node.text === 'process' && readsEnv(node)) at(node, 'reads process.env');
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'process' && isGlobalObject(node.expression)) at(node, 'uses globalThis.process');
    if (ts.isMetaProperty(node) && node.keywordToken === ts.SyntaxKind.ImportKeyword && ts.isPropertyAccessExpression(parent) && parent.name.text === 'env') {
      at(node, 'reads import.meta.env');
    }
    if (ts.isCallExpression(node)) {
      const isImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(node.expression) && (node.expression.text === 'require' || node.expression.text === 'createRequire');
      const specifier = node.arguments[0];
      if ((isImport || isRequire) && !(specifier && ts.isStringLiteralLike(specifier))) at(node, 'imports a computed specifier');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `process.env`, `process?.env`, `process['env']`, `const { env } = process`. */
function readsEnv(node: ts.Identifier): boolean {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.expression === node) return parent.name.text === 'env';
  if (ts.isElementAccessExpression(parent) && parent.expression === node) {
    return ts.isStringLiteralLike(parent.argumentExpression) && parent.argumentExpression.text === 'env';
  }
  if (ts.isVariableDeclaration(parent) && parent.initializer === node && ts.isObjectBindingPattern(parent.name)) {
    return parent.name.elements.some((e) => (e.propertyName ?? e.name).getText() === 'env');
  }
  return false;
}

function isGlobalObject(expression: ts.Expression): boolean {
  return ts.isIdentifier(expression) && (expression.text === 'globalThis' || expression.text === 'global');
}

function environmentViolations(base: string, dir: string): string[] {
  return listSources(dir).flatMap((file) => environmentUses(file, readFileSync(file, 'utf8')).map((use) => `${relative(base, file)}: ${use}`));
}

describe('src/domain reads no environment (configuration comes in through ports)', () => {
  it('no domain file reads process.env or import.meta.env, or imports a computed specifier', () => {
    const files = listSources(join(ROOT, 'src', 'domain')).map((f) => relative(ROOT, f));
    expect(files).toEqual(expect.arrayContaining(['src/domain/money.ts', 'src/domain/ports/locks.ts']));
    expect(environmentViolations(ROOT, join(ROOT, 'src', 'domain'))).toEqual([]);
  });

  it('the check finds each form in the fixture tree and nothing in comments, strings or fields', () => {
    expect(environmentViolations(FIXTURE, join(FIXTURE, 'src', 'domain')).sort()).toEqual([
      'src/domain/computed-import.ts: imports a computed specifier (line 2)',
      'src/domain/reads-env.ts: reads process.env (line 2)',
    ]);
    const forms = [
      'const t = process.env.TABLE;',
      "const t = process['env'].TABLE;",
      'const { env } = process;',
      'const r = globalThis.process.env.REGION;',
      'const m = import.meta.env;',
      'const x = require(name);',
    ];
    for (const form of forms) expect(environmentUses('probe.ts', form), form).not.toEqual([]);
  });
});
