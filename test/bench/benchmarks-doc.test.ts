import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CAPACITY_FILE, capacitySource, renderCapacity } from '../../bench/capacity-note.js';
import { DOC_FILE, RESULTS_FILE, renderDocument, type BenchResults } from '../../bench/report.js';

/** docs/benchmarks.md is what bench/report.ts renders from the committed bench/results.json (issue 13). */
describe('docs/benchmarks.md', () => {
  it('agrees with bench/results.json figure for figure', () => {
    const results = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
    expect(readFileSync(DOC_FILE, 'utf8'), 'regenerate it: npx tsx bench/report.ts').toBe(renderDocument(results));
  });

  it('reports throughput as the median of at least five interleaved pairs, with the log level said', () => {
    const results = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
    expect(results.throughput?.pairs.length).toBeGreaterThanOrEqual(5);
    expect(new Set(results.throughput?.pairs.map((p) => p.order))).toEqual(new Set(['project, floor', 'floor, project']));
    expect(results.logging).toMatch(/info/);
  });
});

/** docs/capacity.md is derived from the billing-day section's measured units (issue 32 item 9). */
describe('docs/capacity.md', () => {
  it('is what bench/capacity-note.ts renders from the billing-day section of bench/results.json', () => {
    const results = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults;
    expect(results.billingDay, 'run npm run bench -- --only billing-day --merge').toBeDefined();
    expect(readFileSync(CAPACITY_FILE, 'utf8'), 'regenerate it: npx tsx bench/capacity-note.ts').toBe(renderCapacity(capacitySource(results), results));
  });
});
