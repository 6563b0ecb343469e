import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The dependency rule: src/domain is pure. It imports no SDK, no logger, no CDK, no Node
 * built-in (ids and time come through ports), nothing outside src/domain, and reads no
 * process.env. Third-party packages need a deliberate entry in ALLOWED_PACKAGES.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DOMAIN = join(ROOT, 'src', 'domain');
const SOURCE = /\.(?:[cm]?ts|tsx|[cm]?js|jsx)$/;

const ALLOWED_PACKAGES = new Set(['zod']);

const FORBIDDEN: readonly { readonly test: (specifier: string) => boolean; readonly why: string }[] = [
  { test: (s) => s.startsWith('@aws-sdk/'), why: 'AWS SDK belongs in src/adapters' },
  { test: (s) => s.startsWith('@smithy/'), why: 'AWS SDK belongs in src/adapters' },
  { test: (s) => isPackage(s, 'stripe'), why: 'Stripe SDK belongs in src/adapters' },
  { test: (s) => isPackage(s, 'pino') || s.startsWith('pino-'), why: 'the domain does not log' },
  { test: (s) => isPackage(s, 'aws-cdk-lib') || isPackage(s, 'aws-cdk'), why: 'CDK belongs in lib/' },
  { test: (s) => isPackage(s, 'constructs'), why: 'CDK belongs in lib/' },
  { test: (s) => s.startsWith('node:'), why: 'no Node built-ins in the domain (ids and time come through ports)' },
  { test: (s) => builtinModules.includes(s.split('/')[0]!), why: 'no Node built-ins in the domain (ids and time come through ports)' },
];

function isPackage(specifier: string, name: string): boolean {
  return specifier === name || specifier.startsWith(`${name}/`);
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

function listSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listSources(path);
    return entry.isFile() && SOURCE.test(entry.name) ? [path] : [];
  });
}

/**
 * Two views of a source, position for position: `code` with comments blanked (line breaks kept),
 * and `masked`, which also blanks the contents of string, template and regex literals so that
 * text inside a literal is never read as a statement. Specifiers are read back from `code`.
 */
function scanSource(source: string): { code: string; masked: string } {
  let code = '';
  let masked = '';
  let i = 0;
  let lastSignificant = '';
  const blank = (text: string) => text.replace(/[^\n]/g, ' ');
  const emit = (text: string, maskedText = text) => {
    code += text;
    masked += maskedText;
  };
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      emit(blank(source.slice(i, stop)));
      i = stop;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      emit(blank(source.slice(i, stop)));
      i = stop;
      continue;
    }
    const regexStart = c === '/' && (lastSignificant === '' || '(,=:[!&|?{};+-*%<>~^'.includes(lastSignificant) || /\breturn\s*$/.test(masked));
    if (c === '"' || c === "'" || c === '`' || regexStart) {
      const start = i++;
      let inClass = false;
      while (i < source.length) {
        const r = source[i]!;
        if (r === '\\') i++;
        else if (regexStart && r === '\n') break;
        else if (regexStart && r === '[') inClass = true;
        else if (regexStart && r === ']') inClass = false;
        else if (r === c && !inClass) break;
        i++;
      }
      const literal = source.slice(start, ++i);
      emit(literal, literal.length >= 2 ? c + blank(literal.slice(1, -1)) + literal.slice(-1) : literal);
      lastSignificant = regexStart ? '/' : c;
      continue;
    }
    emit(c);
    if (!/\s/.test(c)) lastSignificant = c;
    i++;
  }
  return { code, masked };
}

/** Matches `pattern` against the masked view; group `group` is read back from the code view. */
function matchLiterals(view: { code: string; masked: string }, pattern: RegExp, group: number): { text: string; statement: string }[] {
  const withIndices = new RegExp(pattern.source, pattern.flags.includes('d') ? pattern.flags : `${pattern.flags}d`);
  return [...view.masked.matchAll(withIndices)].map((m) => {
    const [from, to] = m.indices![group] ?? [0, 0];
    const [sFrom, sTo] = m.indices![0]!;
    return { text: view.code.slice(from, to), statement: view.code.slice(sFrom, sTo) };
  });
}

interface ImportFinding {
  readonly specifier: string | null; // null: a computed specifier that cannot be checked
  readonly statement: string;
}

/** Every module a source pulls in: static import/export-from, side-effect import, import(), require(). */
function findImports(source: string): ImportFinding[] {
  const view = scanSource(source);
  const found: ImportFinding[] = [];
  const patterns = [
    // import x from 'm'; import type { A } from 'm'; import * as z from 'm'; export { a } from 'm'; export * from 'm'
    /(?<![\w$.])(?:import|export)(?![\w$])[^;'"`()]*?(?<![\w$])from\s*(['"])([^'"\n]*)\1/g,
    // import 'm';
    /(?<![\w$.])import\s*(['"])([^'"\n]*)\1/g,
    // import('m'), await import("m"), import(`m`)
    /(?<![\w$.])import\s*\(\s*(['"`])([^'"`\n]*)\1\s*[,)]/g,
    // require('m'), import x = require('m')
    /(?<![\w$.])require\s*\(\s*(['"`])([^'"`\n]*)\1\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const { text, statement } of matchLiterals(view, pattern, 2)) found.push({ specifier: text, statement });
  }
  // A dynamic import or require whose argument is not a plain literal cannot be checked: forbid it.
  for (const { statement } of matchLiterals(view, /(?<![\w$.])(?:import|require)\s*\(\s*(?!(['"`])[^'"`\n]*\1\s*[,)])/g, 0)) {
    found.push({ specifier: null, statement });
  }
  for (const { text } of matchLiterals(view, /(?<![\w$.])import\s*\(\s*`([^`]*)`/g, 1)) {
    if (text.includes('${')) found.push({ specifier: null, statement: `import(\`${text}\`)` });
  }
  if (/(?<![\w$.])createRequire\b/.test(view.masked)) found.push({ specifier: null, statement: 'createRequire' });
  return found;
}

/** Reads of the environment: process.env, process['env'], destructuring env from process, globalThis.process. */
function findEnvReads(source: string): string[] {
  const view = scanSource(source);
  const patterns = [
    /(?<![\w$.])process\s*(?:\?\.|\.)\s*env(?![\w$])/g,
    /\{[^{}]*(?<![\w$])env(?![\w$])[^{}]*\}\s*=\s*(?:globalThis\s*\.\s*)?process(?![\w$])/g,
    /(?<![\w$.])(?:globalThis|global)\s*(?:\?\.|\.)\s*process(?![\w$])/g,
    /(?<![\w$.])import\s*\.\s*meta\s*\.\s*env(?![\w$])/g,
  ];
  const reads = patterns.flatMap((pattern) => matchLiterals(view, pattern, 0).map((m) => m.statement));
  // process['env'] / process["env"]: the key is a literal, read back from the code view.
  for (const { text, statement } of matchLiterals(view, /(?<![\w$.])process\s*(?:\?\.)?\s*\[\s*(['"`])([^'"`\n]*)\1\s*\]/g, 2)) {
    if (text === 'env') reads.push(statement);
  }
  return reads;
}

function violationsOf(file: string, source: string): string[] {
  const problems: string[] = [];
  for (const { specifier, statement } of findImports(source)) {
    if (specifier === null) {
      problems.push(`computed module specifier cannot be checked: ${statement.trim()}`);
      continue;
    }
    if (specifier.startsWith('.') || specifier.startsWith('/')) {
      const target = resolve(dirname(file), specifier);
      if (target !== DOMAIN && !target.startsWith(DOMAIN + sep)) {
        problems.push(`imports ${specifier} (${relative(ROOT, target)}), outside src/domain`);
      }
      continue;
    }
    const rule = FORBIDDEN.find((r) => r.test(specifier));
    if (rule) problems.push(`imports ${specifier}: ${rule.why}`);
    else if (!ALLOWED_PACKAGES.has(packageName(specifier))) {
      problems.push(`imports ${specifier}: not an allowed package for the domain (${[...ALLOWED_PACKAGES].join(', ')})`);
    }
  }
  for (const read of findEnvReads(source)) problems.push(`reads the environment (${read}): configuration comes in through ports`);
  return problems;
}

describe('the scanner', () => {
  const fake = join(DOMAIN, 'fake.ts');
  const specifiers = (source: string) => findImports(source).map((f) => f.specifier);

  it('finds every import form', () => {
    const source = [
      "import * as z from 'zod';",
      'import {',
      '  a,',
      '  type B,',
      '} from "./multi-line.js";',
      "import type { C } from './types.js';",
      "import D, { e } from './default.js';",
      "import './side-effect.js';",
      "export { f } from './re-export.js';",
      "export * from './star.js';",
      "export * as ns from './star-ns.js';",
      "export type { G } from './type-re-export.js';",
      "const h = await import('./dynamic.js');",
      'const i = await import(`./template.js`);',
      "const j = require('./required.js');",
      "import k = require('./ts-require.js');",
    ].join('\n');
    expect(specifiers(source)).toEqual(
      expect.arrayContaining([
        'zod',
        './multi-line.js',
        './types.js',
        './default.js',
        './side-effect.js',
        './re-export.js',
        './star.js',
        './star-ns.js',
        './type-re-export.js',
        './dynamic.js',
        './template.js',
        './required.js',
        './ts-require.js',
      ]),
    );
  });

  it('ignores imports in comments and text that merely looks like one', () => {
    const source = [
      "// import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
      "/* import pino from 'pino'; */",
      '/**',
      " * export * from '../adapters/x.js'",
      ' */',
      "const transformed = record.import; const from = 'x';",
      "const message = 'the user may import from \"a bank\"';",
    ].join('\n');
    expect(violationsOf(fake, source)).toEqual([]);
  });

  it('is not confused by regex literals holding quotes or comment markers', () => {
    const source = [
      "const quote = /['\"]/;",
      'const slashes = /\\/\\*/;',
      "const text = /import x from 'pino'/;",
      "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
    ].join('\n');
    expect(specifiers(source)).toEqual(['@aws-sdk/client-dynamodb']);
  });

  it('ignores process.env inside a string', () => {
    expect(findEnvReads("const hint = 'set process.env.TABLE_NAME';")).toEqual([]);
  });

  it.each([
    ["import { DynamoDBClient } from '@aws-sdk/client-dynamodb';"],
    ["import { NodeHttpHandler } from '@smithy/node-http-handler';"],
    ["import Stripe from 'stripe';"],
    ["import pino from 'pino';"],
    ["import { App } from 'aws-cdk-lib';"],
    ["import { Construct } from 'constructs';"],
    ["import { randomUUID } from 'node:crypto';"],
    ["import { readFileSync } from 'fs';"],
    ["import { putItem } from '../adapters/dynamodb/client.js';"],
    ["export { handler } from '../handlers/api.js';"],
    ["const sdk = await import('@aws-sdk/lib-dynamodb');"],
    ["const name = 'stripe'; const mod = await import(name);"],
    ['const mod = await import(`./${name}.js`);'],
    ["const x = require('../../lib/stack.js');"],
    ["import leftpad from 'left-pad';"],
    ['const table = process.env.TABLE_NAME;'],
    ['const table = process.env["TABLE_NAME"];'],
    ["const table = process['env'].TABLE_NAME;"],
    ['const { env } = process;'],
    ['const { env: e } = globalThis.process;'],
    ['const region = globalThis.process.env.REGION;'],
  ])('flags %s', (source) => {
    expect(violationsOf(fake, source)).not.toEqual([]);
  });

  it.each([
    ["import * as z from 'zod';"],
    ["import { dueKey } from './ladder.js';"],
    ["import { x } from './nested/deeper.js';"],
    ['const process = request.process; const label = record.process;'],
  ])('allows %s', (source) => {
    expect(violationsOf(fake, source)).toEqual([]);
  });

  it('treats a nested domain folder going up into src/domain as inside, and further up as outside', () => {
    const nested = join(DOMAIN, 'billing', 'rules.ts');
    expect(violationsOf(nested, "import { dueKey } from '../ladder.js';")).toEqual([]);
    expect(violationsOf(nested, "import { x } from '../../adapters/dynamodb/client.js';")).not.toEqual([]);
  });
});

describe('src/domain dependency rule', () => {
  const files = listSources(DOMAIN);

  it('finds the domain sources, including the modules this rule exists for', () => {
    const names = files.map((file) => relative(DOMAIN, file));
    expect(names).toEqual(expect.arrayContaining(['money.ts', 'time.ts', 'ladder.ts', 'lock.ts', 'ports.ts', 'records.ts']));
    // Sanity: the scanner reads the real files (money.ts imports zod).
    expect(findImports(readFileSync(join(DOMAIN, 'money.ts'), 'utf8')).map((f) => f.specifier)).toContain('zod');
  });

  it('imports no infrastructure, no Node built-in and nothing outside src/domain, and reads no process.env', () => {
    const violations = files.flatMap((file) =>
      violationsOf(file, readFileSync(file, 'utf8')).map((problem) => `${relative(ROOT, file)}: ${problem}`),
    );
    expect(violations).toEqual([]);
  });
});
