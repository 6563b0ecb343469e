import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROUTES } from '../../src/manifest/index.js';

/** The README's API table against the route table: every route listed once, with its scope, and nothing else. */

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The table under "| Route | Scope | Notes |": each row's route key (query strings dropped) and scope cell. */
function tableRows(): { key: string; scope: string }[] {
  const start = README.indexOf('| Route | Scope | Notes |');
  expect(start, 'the README has an API table').toBeGreaterThanOrEqual(0);
  const lines = README.slice(start).split('\n').slice(2);
  const rows: { key: string; scope: string }[] = [];
  for (const line of lines) {
    if (!line.startsWith('|')) break;
    const [route, scope] = line.split(/(?<!\\)\|/).slice(1, 3).map((cell) => cell.trim().replace(/`/g, ''));
    rows.push({ key: route!.replace(/\\\|/g, '|').replace(/\?.*$/, ''), scope: scope! });
  }
  return rows;
}

describe('README API table', () => {
  it('lists every route of the route table with its scope (signature for the webhooks), and no other', () => {
    const listed = new Map<string, string>();
    for (const row of tableRows()) listed.set(row.key, row.scope);
    const expected = new Map(ROUTES.map((route) => [`${route.method} ${route.path}`, 'scope' in route ? route.scope : 'signature']));
    expect([...listed.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [key, scope] of expected) expect(listed.get(key), key).toBe(scope);
  });
});
