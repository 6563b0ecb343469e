import { describe, expect, it } from 'vitest';
import { achReturnTally, RETURN_RATE_WARNING_PERCENT, returnRates, returnRateWindow } from '../../src/domain/ach-return-rates.js';
import { NACHA_RETURN_RATE_THRESHOLDS_PERCENT } from '../../src/domain/nacha.js';

describe('ACH return tallies', () => {
  it('a tally counts one return on the UTC day of the change', () => {
    expect(achReturnTally('R10', new Date('2026-12-01T23:59:59.999Z'))).toEqual({ day: '2026-12-01', counts: { debits: 0, returns: 1, unauthorized: 1, administrative: 0 } });
  });
});

describe('return rates', () => {
  it('are percent of the debits originated in the window', () => {
    expect(returnRates({ debits: 1000, returns: 37, unauthorized: 4, administrative: 12 })).toEqual({
      unauthorized: { percent: 0.4, returns: 4, debits: 1000 },
      administrative: { percent: 1.2, returns: 12, debits: 1000 },
      overall: { percent: 3.7, returns: 37, debits: 1000 },
    });
  });
  it('are 0 with nothing originated or returned, and 100 when returns arrive with no debit in the window', () => {
    expect(returnRates({ debits: 0, returns: 0, unauthorized: 0, administrative: 0 }).overall.percent).toBe(0);
    expect(returnRates({ debits: 0, returns: 1, unauthorized: 1, administrative: 0 }).unauthorized.percent).toBe(100);
  });
  it('warn at 80 % of each NACHA threshold: 0.4, 2.4 and 12 %', () => {
    expect(NACHA_RETURN_RATE_THRESHOLDS_PERCENT).toEqual({ unauthorized: 0.5, administrative: 3, overall: 15 });
    expect(RETURN_RATE_WARNING_PERCENT).toEqual({ unauthorized: 0.4, administrative: 2.4, overall: 12 });
  });
  it('cover today and the 59 UTC days before it', () => {
    expect(returnRateWindow(new Date('2026-12-01T00:30:00Z'))).toEqual({ from: '2026-10-03', to: '2026-12-01' });
  });
});
