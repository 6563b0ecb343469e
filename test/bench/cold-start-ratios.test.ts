import { describe, expect, it } from 'vitest';
import { quantile, roundRatiosOf, type Sample } from '../../bench/cold-start.js';
import { coldStartVerdict } from '../../bench/report.js';

const sample = (totalMs: number): Sample => ({ importMs: totalMs / 2, firstCallMs: totalMs / 2, gist: null });

describe('cold start: the rounds behind a ratio', () => {
  it('takes quantiles between the closest ranks, whatever order the values come in', () => {
    expect(quantile([3, 1, 2], 0.5)).toBe(2);
    expect(quantile([4, 1, 3, 2], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4, 5], 0.25)).toBe(2);
    expect(quantile([1, 2, 3, 4], 0.75)).toBe(3.25);
    expect(quantile([7], 0.25)).toBe(7);
    expect(() => quantile([], 0.5)).toThrow(/no values/);
  });

  it('pairs each round of a function with the bare client of the same round', () => {
    // The machine slows down over the run: the bare client and the function slow together, so
    // each round's ratio is 1.2 although the medians of the totals were taken in different rounds.
    const bare = [50, 60, 70, 80, 90].map(sample);
    const fn = [60, 72, 84, 96, 108].map(sample);
    expect(roundRatiosOf(fn, bare)).toEqual({ p25: 1.2, median: 1.2, p75: 1.2 });
    // Out of order, the same totals give other ratios: the pairing is by round.
    const shuffled = [108, 60, 96, 72, 84].map(sample);
    expect(roundRatiosOf(shuffled, bare).p75).toBeGreaterThan(1.3);
    expect(() => roundRatiosOf(fn.slice(1), bare)).toThrow(/rounds differ/);
  });

  it('calls a function in, out or at the line from its quartiles', () => {
    expect(coldStartVerdict(1.2, { p25: 1.1, p75: 1.25 }, 1.3)).toBe('yes');
    expect(coldStartVerdict(1.5, { p25: 1.4, p75: 1.6 }, 1.3)).toBe('no');
    expect(coldStartVerdict(1.28, { p25: 1.2, p75: 1.36 }, 1.3)).toBe('at the line');
    expect(coldStartVerdict(1.32, { p25: 1.3, p75: 1.4 }, 1.3)).toBe('at the line');
    // Results kept before the quartiles were: the median decides.
    expect(coldStartVerdict(1.3, undefined, 1.3)).toBe('yes');
    expect(coldStartVerdict(1.31, undefined, 1.3)).toBe('no');
  });
});
