import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** `updated_event` is the tag of the last write (DESIGN 2.9): nothing in the domain may decide on it. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

// Reading the tag: a comparison, a switch or a lookup keyed on it. Items of the old form are read
// once by the billing store's decode (src/adapters/dynamodb/billing-item.ts), outside the domain.
const READS = /updated_event\s*(===|!==|==|!=)\s*['"`]|['"`]\s*(===|!==|==|!=)\s*[\w.]*updated_event|switch\s*\([^)]*updated_event|\.has\([^)]*updated_event/;

describe('the domain never decides on updated_event', () => {
  it('no domain source compares, switches on or looks up updated_event', () => {
    const offenders = sources('src/domain').flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ file, line: i + 1, text: line }))
        .filter(({ text }) => READS.test(text)),
    );
    expect(offenders).toEqual([]);
  });

  it('the rule sees a decision on the tag when there is one', () => {
    expect(READS.test("if (read.updated_event === 'CANCEL_REQUESTED') {")).toBe(true);
    expect(READS.test("switch (record.updated_event) {")).toBe(true);
    expect(READS.test("after.updated_event = options.updatedEvent;")).toBe(false);
    expect(READS.test("...(overrides.updated_event !== undefined ? { updated_event: overrides.updated_event } : {}),")).toBe(false);
  });
});
