import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_DOMAIN_COMMENT_SHARE, MAX_FILE_LINES, MAX_FUNCTION_LINES, structureReport } from '../../scripts/structure-report.js';

const ROOT = resolve(import.meta.dirname, '../..');

function fixtureTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'structure-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('the structure of src (scripts/structure-report.ts)', () => {
  const report = structureReport(ROOT);

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    expect(report.longFiles).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(report.longFunctions).toEqual([]);
  });

  it(`keeps the comment share of src/domain at most ${MAX_DOMAIN_COMMENT_SHARE}`, () => {
    expect(report.domainCommentShare).toBeLessThanOrEqual(MAX_DOMAIN_COMMENT_SHARE);
  });

  it('holds no history in source: model-run seeds, finding ids and runs belong to tests and commits', () => {
    expect(report.history).toEqual([]);
  });
});

describe('the structure report', () => {
  it('finds a long file, a long function, comment share and history in a tree that has them', () => {
    const body = Array.from({ length: MAX_FUNCTION_LINES }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const root = fixtureTree({
      'src/domain/rule.ts': `// why\n// and why again\nexport function long(): void {\n${body}\n}\n`,
      'src/adapters/big.ts': `${'export const x = 1;\n'.repeat(MAX_FILE_LINES + 1)}`,
      'src/handlers/story.ts': '// found by seed 555000006 in the model run\nexport const y = 2;\n// F10: a finding id\n',
    });
    const found = structureReport(root);
    expect(found.longFiles.map((f) => f.file)).toEqual(['src/adapters/big.ts']);
    expect(found.longFunctions.map((f) => `${f.file}:${f.name}`)).toEqual(['src/domain/rule.ts:long']);
    expect(found.domainCommentShare).toBeCloseTo(2 / (2 + MAX_FUNCTION_LINES + 2), 5);
    expect(found.history.map((h) => h.line)).toEqual([1, 3]);
  });

  it('leaves a tree within the limits alone', () => {
    const root = fixtureTree({ 'src/domain/rule.ts': '// one line of why\nexport const a = 1;\nexport const b = 2;\nexport const c = 3;\nexport const d = 4;\nexport const e = 5;\nexport const f = 6;\n' });
    const found = structureReport(root);
    expect(found).toMatchObject({ longFiles: [], longFunctions: [], history: [] });
    expect(found.domainCommentShare).toBeLessThanOrEqual(MAX_DOMAIN_COMMENT_SHARE);
  });
});
