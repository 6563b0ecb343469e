/**
 * The structure limits of src (docs/architecture.md): file and function lengths, the comment
 * share of src/domain, and history (seeds, run ids, finding ids) written into source.
 * `npx tsx scripts/structure-report.ts` prints what exceeds them; test/architecture asserts none does.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;
export const MAX_DOMAIN_COMMENT_SHARE = 0.15;
/** Generated, not written: its length follows the schemas. */
const EXEMPT = [/^src\/openapi\//];
/** A model run's seed, a finding id or a run's name: history, which belongs in tests and commit messages. */
export const HISTORY_PATTERN = /\bseeds? \d{3,}|\bF\d{1,3}\b|\blong run\b|\bpath \d+\b|\bfinding\b/i;

export interface LongThing {
  readonly file: string;
  readonly line: number;
  readonly lines: number;
  readonly name?: string;
}

export interface StructureReport {
  readonly longFiles: LongThing[];
  readonly longFunctions: LongThing[];
  readonly domainCommentShare: number;
  readonly history: LongThing[];
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function isFunctionLike(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** Comment lines against code lines (blank lines in neither), as a comment scanner sees them. */
function countLines(text: string): { comment: number; code: number } {
  let comment = 0;
  let code = 0;
  let inBlock = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (inBlock) {
      comment++;
      if (line.includes('*/')) inBlock = false;
    } else if (line.startsWith('//')) comment++;
    else if (line.startsWith('/*')) {
      comment++;
      inBlock = !line.includes('*/');
    } else code++;
  }
  return { comment, code };
}

export function structureReport(root: string): StructureReport {
  const src = join(root, 'src');
  const longFiles: LongThing[] = [];
  const longFunctions: LongThing[] = [];
  const history: LongThing[] = [];
  let domainComment = 0;
  let domainCode = 0;
  for (const path of tsFiles(src)) {
    const file = relative(root, path);
    if (EXEMPT.some((pattern) => pattern.test(file))) continue;
    const text = readFileSync(path, 'utf8');
    const lines = text.split('\n');
    const length = text.endsWith('\n') ? lines.length - 1 : lines.length;
    if (length > MAX_FILE_LINES) longFiles.push({ file, line: 1, lines: length });
    lines.forEach((line, index) => {
      if (HISTORY_PATTERN.test(line)) history.push({ file, line: index + 1, lines: 1, name: line.trim() });
    });
    if (file.startsWith('src/domain/')) {
      const counted = countLines(text);
      domainComment += counted.comment;
      domainCode += counted.code;
    }
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (isFunctionLike(node)) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        if (end - start + 1 > MAX_FUNCTION_LINES) {
          longFunctions.push({ file, line: start + 1, lines: end - start + 1, name: node.name?.getText(source) ?? '(anonymous)' });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { longFiles, longFunctions, domainCommentShare: domainComment / (domainComment + domainCode), history };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const report = structureReport(process.cwd());
  for (const f of report.longFiles) console.log(`file over ${MAX_FILE_LINES} lines: ${f.file} (${f.lines})`);
  for (const f of report.longFunctions) console.log(`function over ${MAX_FUNCTION_LINES} lines: ${f.file}:${f.line} ${f.name} (${f.lines})`);
  for (const h of report.history) console.log(`history in source: ${h.file}:${h.line} ${h.name}`);
  console.log(`comment share of src/domain: ${report.domainCommentShare.toFixed(3)} (at most ${MAX_DOMAIN_COMMENT_SHARE})`);
}
