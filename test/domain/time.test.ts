import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addNanos,
  daysInMonth,
  epochMillis,
  formatInstant,
  instantSchema,
  InvalidInstantError,
  nextStamp,
  normalizeInstant,
  parseDurationMs,
  parseInstant,
} from '../../src/domain/time.js';

const STORED = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;
// Years 0000-9999: the range the stored form can express.
const storableDate = fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true });

describe('formatInstant', () => {
  it('writes UTC with exactly nine fractional digits', () => {
    expect(formatInstant(new Date('2026-12-01T00:00:00Z'))).toBe('2026-12-01T00:00:00.000000000Z');
    expect(formatInstant(new Date('2026-12-01T12:34:56.789Z'))).toBe('2026-12-01T12:34:56.789000000Z');
  });

  it('appends the extra nanoseconds within the millisecond', () => {
    expect(formatInstant(new Date('2026-12-01T12:34:56.789Z'), 123_456)).toBe('2026-12-01T12:34:56.789123456Z');
    expect(formatInstant(new Date('2026-12-01T12:34:56.789Z'), 1)).toBe('2026-12-01T12:34:56.789000001Z');
  });

  it('always has the stored shape for any date in years 0000-9999', () => {
    fc.assert(
      fc.property(storableDate, fc.integer({ min: 0, max: 999_999 }), (date, nanos) => {
        expect(formatInstant(date, nanos)).toMatch(STORED);
      }),
    );
  });

  it('refuses an invalid Date', () => {
    expect(() => formatInstant(new Date('nope'))).toThrow(InvalidInstantError);
  });

  it('refuses years the four-digit form cannot hold instead of writing "+010000-..."', () => {
    expect(() => formatInstant(new Date('+010000-01-01T00:00:00Z'))).toThrow(InvalidInstantError);
    expect(() => formatInstant(new Date('-000001-01-01T00:00:00Z'))).toThrow(InvalidInstantError);
  });

  it('refuses NaN nanoseconds instead of writing "NaN" into the stamp', () => {
    expect(() => formatInstant(new Date('2026-01-01T00:00:00Z'), Number.NaN)).toThrow(InvalidInstantError);
  });
});

describe('parseInstant', () => {
  it('reads Z, positive and negative offsets as the same instant', () => {
    const utc = parseInstant('2026-03-01T10:00:00Z').date.getTime();
    expect(parseInstant('2026-03-01T12:00:00+02:00').date.getTime()).toBe(utc);
    expect(parseInstant('2026-03-01T05:30:00-04:30').date.getTime()).toBe(utc);
    expect(parseInstant('2026-03-01T10:00:00+00:00').date.getTime()).toBe(utc);
  });

  it('crosses a day and a year boundary through the offset', () => {
    expect(normalizeInstant('2027-01-01T01:00:00+02:00')).toBe('2026-12-31T23:00:00.000000000Z');
    expect(normalizeInstant('2026-12-31T22:00:00-03:00')).toBe('2027-01-01T01:00:00.000000000Z');
  });

  it('keeps the sub-millisecond digits', () => {
    expect(parseInstant('2026-01-01T00:00:00.123456789Z')).toEqual({
      date: new Date('2026-01-01T00:00:00.123Z'),
      subMillisNanos: 456_789,
    });
    expect(parseInstant('2026-01-01T00:00:00.5Z').date.getUTCMilliseconds()).toBe(500);
    expect(parseInstant('2026-01-01T00:00:00.1234Z').subMillisNanos).toBe(400_000);
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2026-02-29T00:00:00Z', // 2026 is not a leap year
    '2100-02-29T00:00:00Z', // century, not a leap year
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-01-00T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T00:00:00+24:00',
    '2026-01-01T00:00:00+05:60',
  ])('refuses the impossible %s', (value) => {
    expect(() => parseInstant(value)).toThrow(InvalidInstantError);
  });

  it.each([
    '',
    '2026-01-01',
    '2026-01-01T00:00:00', // no zone
    '2026-01-01 00:00:00Z',
    '2026-1-01T00:00:00Z',
    '2026-01-01T00:00:00.Z',
    '2026-01-01T00:00:00.1234567890Z', // ten fractional digits
    '2026-01-01T00:00:00+0200',
    'yesterday',
  ])('refuses the malformed %j', (value) => {
    expect(() => parseInstant(value)).toThrow(InvalidInstantError);
  });

  it('accepts Feb 29 in leap years, including 2000', () => {
    expect(normalizeInstant('2028-02-29T00:00:00Z')).toBe('2028-02-29T00:00:00.000000000Z');
    expect(normalizeInstant('2000-02-29T00:00:00Z')).toBe('2000-02-29T00:00:00.000000000Z');
  });

  it('reads years below 100 literally, not as 19xx', () => {
    expect(normalizeInstant('0050-06-15T00:00:00Z')).toBe('0050-06-15T00:00:00.000000000Z');
  });

  it('round-trips every stored stamp', () => {
    fc.assert(
      fc.property(storableDate, fc.integer({ min: 0, max: 999_999 }), (date, nanos) => {
        const stamp = formatInstant(date, nanos);
        expect(parseInstant(stamp)).toEqual({ date, subMillisNanos: nanos });
        expect(normalizeInstant(stamp)).toBe(stamp);
      }),
    );
  });
});

describe('string order is time order', () => {
  it('compares stored stamps lexicographically exactly as their instants compare', () => {
    fc.assert(
      fc.property(
        storableDate,
        fc.integer({ min: 0, max: 999_999 }),
        storableDate,
        fc.integer({ min: 0, max: 999_999 }),
        (a, an, b, bn) => {
          const sa = formatInstant(a, an);
          const sb = formatInstant(b, bn);
          const timeOrder = Math.sign(a.getTime() - b.getTime()) || Math.sign(an - bn);
          const stringOrder = sa < sb ? -1 : sa > sb ? 1 : 0;
          expect(stringOrder).toBe(timeOrder);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('holds for stamps one nanosecond apart', () => {
    const a = '2026-01-01T00:00:00.000999999Z';
    const b = addNanos(a, 1);
    expect(b).toBe('2026-01-01T00:00:00.001000000Z');
    expect(a < b).toBe(true);
  });
});

describe('nextStamp', () => {
  const now = new Date('2026-05-01T12:00:00.000Z');

  it('is now when there is no previous stamp', () => {
    expect(nextStamp(now, undefined)).toBe('2026-05-01T12:00:00.000000000Z');
    expect(nextStamp(now, undefined, 42)).toBe('2026-05-01T12:00:00.000000042Z');
  });

  it('is now when the previous stamp is older', () => {
    expect(nextStamp(now, '2026-05-01T11:59:59.999999999Z')).toBe('2026-05-01T12:00:00.000000000Z');
  });

  it('is one nanosecond after the previous stamp when the clock reads the same instant', () => {
    expect(nextStamp(now, '2026-05-01T12:00:00.000000000Z')).toBe('2026-05-01T12:00:00.000000001Z');
  });

  it('is one nanosecond after the previous stamp when the clock went backwards', () => {
    expect(nextStamp(now, '2026-05-01T12:00:05.000000000Z')).toBe('2026-05-01T12:00:05.000000001Z');
  });

  it('carries into the next millisecond', () => {
    expect(nextStamp(now, '2026-05-01T12:00:00.000999999Z')).toBe('2026-05-01T12:00:00.001000000Z');
  });

  it('compares a previous stamp with an offset by time, not by text', () => {
    // 05:00+05:00 is 00:00Z: three hours before now, so the answer is now, not 00:00:00.000000001Z.
    expect(nextStamp(new Date('2026-01-01T03:00:00Z'), '2026-01-01T05:00:00+05:00')).toBe('2026-01-01T03:00:00.000000000Z');
  });

  it('is strictly increasing and never before the clock, whatever the clock does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -5, max: 5 }), fc.integer({ min: 0, max: 999_999 })), { minLength: 1, maxLength: 60 }),
        (steps) => {
          let clockMs = Date.parse('2026-05-01T12:00:00.000Z');
          let previous: string | undefined;
          for (const [deltaMs, hint] of steps) {
            clockMs += deltaMs; // the clock may stand still or go backwards
            const stamp = nextStamp(new Date(clockMs), previous, hint);
            expect(stamp).toMatch(STORED);
            if (previous !== undefined) expect(stamp > previous).toBe(true);
            expect(epochMillis(stamp)).toBeGreaterThanOrEqual(clockMs);
            previous = stamp;
          }
        },
      ),
    );
  });
});

describe('addNanos', () => {
  it('adds across millisecond and second boundaries', () => {
    expect(addNanos('2026-01-01T00:00:00.999999999Z', 1)).toBe('2026-01-01T00:00:01.000000000Z');
    expect(addNanos('2026-01-01T00:00:00.000000000Z', 1_500_000)).toBe('2026-01-01T00:00:00.001500000Z');
  });

  it('subtracts with a borrow', () => {
    expect(addNanos('2026-01-01T00:00:01.000000000Z', -1)).toBe('2026-01-01T00:00:00.999999999Z');
  });
});

describe('daysInMonth', () => {
  it.each([
    [2026, 0, 31],
    [2026, 1, 28],
    [2028, 1, 29],
    [2100, 1, 28],
    [2000, 1, 29],
    [2026, 3, 30],
    [2026, 11, 31],
    [4, 1, 29],
    [0, 1, 29],
  ])('%d month index %d has %d days', (year, month, days) => {
    expect(daysInMonth(year, month)).toBe(days);
  });
});

describe('instantSchema', () => {
  it('normalises to the stored form', () => {
    expect(instantSchema.parse('2026-03-01T12:00:00+02:00')).toBe('2026-03-01T10:00:00.000000000Z');
  });

  it('fails on an impossible date', () => {
    expect(instantSchema.safeParse('2026-02-30T00:00:00Z').success).toBe(false);
    expect(instantSchema.safeParse('2026-13-01T00:00:00Z').success).toBe(false);
  });
});

describe('parseDurationMs', () => {
  it.each([
    ['PT15M', 15 * 60_000],
    ['P1D', 24 * 60 * 60_000],
    ['PT1H30M', 90 * 60_000],
    ['PT1H', 60 * 60_000],
    ['PT30S', 30_000],
    ['PT0.5S', 500],
    ['P1DT2H3M4S', ((24 + 2) * 60 + 3) * 60_000 + 4_000],
    ['PT0S', 0],
  ])('%s is %d ms', (value, ms) => {
    expect(parseDurationMs(value)).toBe(ms);
  });

  it.each(['', 'P', 'PT', 'P1DT', '15M', 'PT15', 'P1H', 'P1M', 'P1W', 'pt15m', '-PT15M', 'PT-1M', 'PT1M30H', 'P1.5D'])(
    'refuses %j',
    (value) => {
      expect(() => parseDurationMs(value)).toThrow(InvalidInstantError);
    },
  );
});
