import { describe, expect, it } from 'vitest';
import { holdClassOfReturn } from '../../src/domain/instruments/holds.js';
import { classifyReturnCode, pastRepresentmentWindow, returnRateClassesOf, withinRepresentmentWindow } from '../../src/domain/nacha.js';

describe('classifyReturnCode', () => {
  it.each(['R01', 'R09'])('%s may be re-presented', (code) => expect(classifyReturnCode(code)).toBe('represent'));
  it.each(['R05', 'R07', 'R08', 'R10', 'R11', 'R29', 'R51'])('%s is unauthorized', (code) => expect(classifyReturnCode(code)).toBe('unauthorized'));
  it.each(['R02', 'R03', 'R04', 'R16', 'R20', 'R99'])('%s stops ACH retries', (code) => expect(classifyReturnCode(code)).toBe('account_error'));
  it.each(['R08', 'R51'])('%s is held on the authorization as the holds table says, not as an account error', (code) => {
    expect(classifyReturnCode(code)).toBe('unauthorized');
    expect(holdClassOfReturn(code)).toBe('ach_unauthorized');
  });
});

describe('ACH return-rate classes (NACHA)', () => {
  it.each(['R05', 'R07', 'R10', 'R11', 'R29', 'R51'])('%s is unauthorized (and overall)', (code) => {
    expect(returnRateClassesOf(code)).toEqual(['unauthorized', 'overall']);
  });
  it.each(['R02', 'R03', 'R04'])('%s is administrative (and overall)', (code) => {
    expect(returnRateClassesOf(code)).toEqual(['administrative', 'overall']);
  });
  it.each(['R01', 'R09', 'R06', 'R08', 'R16', 'R20'])('%s counts in overall only', (code) => {
    expect(returnRateClassesOf(code)).toEqual(['overall']);
  });
});

describe('the re-presentment window', () => {
  const original = '2026-01-01T00:00:00.000000000Z';
  const day = 24 * 60 * 60 * 1000;
  it('is open up to 180 days after the original entry, included, and closed after', () => {
    const last = new Date(Date.parse(original) + 180 * day);
    expect(withinRepresentmentWindow(original, last)).toBe(true);
    expect(pastRepresentmentWindow(original, last)).toBe(false);
    const after = new Date(last.getTime() + 1);
    expect(withinRepresentmentWindow(original, after)).toBe(false);
    expect(pastRepresentmentWindow(original, after)).toBe(true);
  });
});
