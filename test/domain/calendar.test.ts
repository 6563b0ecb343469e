import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addMonths, nextBillingDate, nthFridayOfMonth } from '../../src/domain/calendar.js';

const d = (iso: string) => new Date(iso);
const iso = (date: Date) => date.toISOString();

describe('nextBillingDate, MONTHLY', () => {
  it('is the same day next month', () => {
    expect(iso(nextBillingDate(d('2026-03-15T00:00:00Z'), 'MONTHLY'))).toBe('2026-04-15T00:00:00.000Z');
  });

  it('clamps Jan 31 to Feb 28 in a common year', () => {
    expect(iso(nextBillingDate(d('2026-01-31T00:00:00Z'), 'MONTHLY'))).toBe('2026-02-28T00:00:00.000Z');
  });

  it('clamps Jan 31 to Feb 29 in leap year 2028', () => {
    expect(iso(nextBillingDate(d('2028-01-31T00:00:00Z'), 'MONTHLY'))).toBe('2028-02-29T00:00:00.000Z');
  });

  it('clamps Mar 31 to Apr 30', () => {
    expect(iso(nextBillingDate(d('2026-03-31T00:00:00Z'), 'MONTHLY'))).toBe('2026-04-30T00:00:00.000Z');
  });

  it('returns to the anchor day after a short month: Feb 28 with anchorDay 31 → Mar 31', () => {
    expect(iso(nextBillingDate(d('2026-02-28T00:00:00Z'), 'MONTHLY', { anchorDay: 31 }))).toBe('2026-03-31T00:00:00.000Z');
    expect(iso(nextBillingDate(d('2026-04-30T00:00:00Z'), 'MONTHLY', { anchorDay: 31 }))).toBe('2026-05-31T00:00:00.000Z');
    expect(iso(nextBillingDate(d('2028-02-29T00:00:00Z'), 'MONTHLY', { anchorDay: 30 }))).toBe('2028-03-30T00:00:00.000Z');
  });

  it('walks Jan 31 → Feb 28 → Mar 31 → Apr 30 when the anchor is carried', () => {
    let date = d('2026-01-31T00:00:00Z');
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      date = nextBillingDate(date, 'MONTHLY', { anchorDay: 31 });
      seen.push(iso(date).slice(0, 10));
    }
    expect(seen).toEqual(['2026-02-28', '2026-03-31', '2026-04-30']);
  });

  it('without an anchor the clamped day becomes the new day (Feb 28 → Mar 28)', () => {
    expect(iso(nextBillingDate(d('2026-02-28T00:00:00Z'), 'MONTHLY'))).toBe('2026-03-28T00:00:00.000Z');
  });

  it('rolls December over into January of the next year', () => {
    expect(iso(nextBillingDate(d('2026-12-15T00:00:00Z'), 'MONTHLY'))).toBe('2027-01-15T00:00:00.000Z');
    expect(iso(nextBillingDate(d('2026-12-31T00:00:00Z'), 'MONTHLY'))).toBe('2027-01-31T00:00:00.000Z');
  });

  it('keeps the time of day', () => {
    expect(iso(nextBillingDate(d('2026-01-31T17:45:12.345Z'), 'MONTHLY'))).toBe('2026-02-28T17:45:12.345Z');
  });

  it('refuses an anchor day outside 1-31 instead of rolling into another month', () => {
    expect(() => nextBillingDate(d('2026-02-28T00:00:00Z'), 'MONTHLY', { anchorDay: 0 })).toThrow(RangeError);
    expect(() => nextBillingDate(d('2026-02-28T00:00:00Z'), 'MONTHLY', { anchorDay: 32 })).toThrow(RangeError);
    expect(() => nextBillingDate(d('2026-02-28T00:00:00Z'), 'MONTHLY', { anchorDay: 15.5 })).toThrow(RangeError);
  });

  it('always lands in the next calendar month, on or before the anchor day, at the same time of day', () => {
    fc.assert(
      fc.property(
        fc.date({ min: d('2000-01-01T00:00:00Z'), max: d('2999-12-31T23:59:59Z'), noInvalidDate: true }),
        fc.integer({ min: 1, max: 31 }),
        (date, anchorDay) => {
          const next = nextBillingDate(date, 'MONTHLY', { anchorDay });
          const monthsApart = (next.getUTCFullYear() - date.getUTCFullYear()) * 12 + next.getUTCMonth() - date.getUTCMonth();
          expect(monthsApart).toBe(1);
          expect(next.getUTCDate()).toBeLessThanOrEqual(anchorDay);
          const lastDay = new Date(Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 0)).getUTCDate();
          expect(next.getUTCDate()).toBe(Math.min(anchorDay, lastDay));
          expect(next.getTime() % 86_400_000).toBe(date.getTime() % 86_400_000);
        },
      ),
    );
  });
});

describe('nextBillingDate, ANNUAL', () => {
  it('is the same date next year', () => {
    expect(iso(nextBillingDate(d('2026-06-10T08:00:00Z'), 'ANNUAL'))).toBe('2027-06-10T08:00:00.000Z');
  });

  it('moves Feb 29 2028 to Feb 28 2029', () => {
    expect(iso(nextBillingDate(d('2028-02-29T00:00:00Z'), 'ANNUAL'))).toBe('2029-02-28T00:00:00.000Z');
  });

  it('returns to Feb 29 in the next leap year when the anchor is carried', () => {
    expect(iso(nextBillingDate(d('2031-02-28T00:00:00Z'), 'ANNUAL', { anchorDay: 29 }))).toBe('2032-02-29T00:00:00.000Z');
  });

  it('moves December to December of the next year', () => {
    expect(iso(nextBillingDate(d('2026-12-31T23:00:00Z'), 'ANNUAL'))).toBe('2027-12-31T23:00:00.000Z');
  });
});

describe('nextBillingDate with friday_billing', () => {
  // Fridays: Jan 2026 2,9,16,23,30; Feb 2026 6,13,20,27; May 2026 1,8,15,22,29.
  it.each([
    [1, '2026-01-02'],
    [2, '2026-01-09'],
    [3, '2026-01-16'],
    [4, '2026-01-23'],
    [5, '2026-01-30'],
  ])('N=%d in January 2026 is %s', (n, date) => {
    expect(iso(nextBillingDate(d('2025-12-05T09:30:00Z'), 'MONTHLY', { fridayBilling: n }))).toBe(`${date}T09:30:00.000Z`);
  });

  it.each([
    [1, '2026-02-06'],
    [4, '2026-02-27'],
    [5, '2026-02-27'],
  ])('N=%d in February 2026 (no 5th Friday) is %s', (n, date) => {
    expect(iso(nextBillingDate(d('2026-01-30T00:00:00Z'), 'MONTHLY', { fridayBilling: n }))).toBe(`${date}T00:00:00.000Z`);
  });

  it('uses the first of the month when it is a Friday (May 2026)', () => {
    expect(iso(nextBillingDate(d('2026-04-03T00:00:00Z'), 'MONTHLY', { fridayBilling: 1 }))).toBe('2026-05-01T00:00:00.000Z');
    expect(iso(nextBillingDate(d('2026-04-24T00:00:00Z'), 'MONTHLY', { fridayBilling: 5 }))).toBe('2026-05-29T00:00:00.000Z');
  });

  it('rolls December into January on Friday billing', () => {
    expect(iso(nextBillingDate(d('2026-12-04T12:00:00Z'), 'MONTHLY', { fridayBilling: 1 }))).toBe('2027-01-01T12:00:00.000Z');
  });

  it('applies to the same month next year on ANNUAL', () => {
    expect(iso(nextBillingDate(d('2026-01-09T00:00:00Z'), 'ANNUAL', { fridayBilling: 2 }))).toBe('2027-01-08T00:00:00.000Z');
  });

  it('keeps the time of day', () => {
    expect(iso(nextBillingDate(d('2026-01-16T23:59:59.999Z'), 'MONTHLY', { fridayBilling: 3 }))).toBe('2026-02-20T23:59:59.999Z');
  });

  it('wins over the anchor day', () => {
    expect(iso(nextBillingDate(d('2026-01-31T00:00:00Z'), 'MONTHLY', { fridayBilling: 2, anchorDay: 31 }))).toBe(
      '2026-02-13T00:00:00.000Z',
    );
  });
});

describe('nthFridayOfMonth', () => {
  it('is always a Friday of that month, the Nth one or else the last one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1970, max: 2200 }), fc.integer({ min: 0, max: 11 }), fc.integer({ min: 1, max: 5 }), (year, month, n) => {
        const fridays: number[] = [];
        for (let day = 1; new Date(Date.UTC(year, month, day)).getUTCMonth() === month; day++) {
          if (new Date(Date.UTC(year, month, day)).getUTCDay() === 5) fridays.push(day);
        }
        expect(nthFridayOfMonth(year, month, n)).toBe(fridays[n - 1] ?? fridays[fridays.length - 1]);
      }),
    );
  });

  it.each([0, 6, -1, 2.5, Number.NaN])('refuses N=%d', (n) => {
    expect(() => nthFridayOfMonth(2026, 0, n)).toThrow(RangeError);
  });

  it('refuses an invalid N through nextBillingDate too', () => {
    expect(() => nextBillingDate(d('2026-01-02T00:00:00Z'), 'MONTHLY', { fridayBilling: 6 })).toThrow(RangeError);
  });
});

describe('addMonths', () => {
  it('adds months and clamps to month end', () => {
    expect(iso(addMonths(d('2026-01-31T10:00:00Z'), 1))).toBe('2026-02-28T10:00:00.000Z');
    expect(iso(addMonths(d('2026-01-31T10:00:00Z'), 3))).toBe('2026-04-30T10:00:00.000Z');
    expect(iso(addMonths(d('2026-11-15T00:00:00Z'), 3))).toBe('2027-02-15T00:00:00.000Z');
  });

  it('goes backwards across a year', () => {
    expect(iso(addMonths(d('2026-01-31T00:00:00Z'), -2))).toBe('2025-11-30T00:00:00.000Z');
  });

  it('adding zero months is the identity', () => {
    expect(iso(addMonths(d('2026-05-17T01:02:03.004Z'), 0))).toBe('2026-05-17T01:02:03.004Z');
  });
});
