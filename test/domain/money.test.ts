import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  centsSchema,
  centsToDollars,
  dollarStringSchema,
  dollarsToCents,
  InvalidMoneyError,
  positiveCentsSchema,
} from '../../src/domain/money.js';

describe('dollarsToCents', () => {
  it.each([
    ['0', 0],
    ['0.00', 0],
    ['0.01', 1],
    ['0.1', 10],
    ['0.10', 10],
    ['1', 100],
    ['19.99', 1999],
    ['0.29', 29], // 0.29 * 100 is 28.999999999999996 in floating point
    ['1000000.10', 100000010],
    ['9999999999999.99', 999999999999999],
  ])('converts %j exactly', (dollars, cents) => {
    expect(dollarsToCents(dollars)).toBe(cents);
  });

  it('converts every two-decimal amount below $100 exactly, where float arithmetic would not', () => {
    for (let cents = 0; cents < 10_000; cents++) {
      const dollars = `${Math.trunc(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
      expect(dollarsToCents(dollars)).toBe(cents);
    }
  });

  it.each(['-1', '-0.01', '-19.99'])('refuses the negative amount %j', (dollars) => {
    expect(() => dollarsToCents(dollars)).toThrow(InvalidMoneyError);
  });

  it.each(['19.999', '0.001', '1.000', '1.005'])('refuses three decimals in %j', (dollars) => {
    expect(() => dollarsToCents(dollars)).toThrow(InvalidMoneyError);
  });

  it.each(['', ' ', 'abc', '1e3', '1.2.3', '.5', '5.', '$5.00', '1,000.00', '0x10', 'NaN', 'Infinity', '+1.00', '12 34', '１２'])(
    'refuses the garbage %j',
    (dollars) => {
      expect(() => dollarsToCents(dollars)).toThrow(InvalidMoneyError);
    },
  );

  it('refuses more than 13 whole digits', () => {
    expect(() => dollarsToCents('10000000000000.00')).toThrow(InvalidMoneyError);
  });

  it.each([19.99, undefined, null, {}])('refuses the non-string %j with InvalidMoneyError, not a TypeError', (value) => {
    expect(() => dollarsToCents(value as unknown as string)).toThrow(InvalidMoneyError);
  });

  it('carries the stable code invalid_money', () => {
    try {
      dollarsToCents('x');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidMoneyError);
      expect((error as InvalidMoneyError).code).toBe('invalid_money');
    }
  });
});

describe('centsToDollars', () => {
  it.each([
    [0, '0.00'],
    [1, '0.01'],
    [5, '0.05'],
    [10, '0.10'],
    [1999, '19.99'],
    [100000010, '1000000.10'],
    [Number.MAX_SAFE_INTEGER, '90071992547409.91'],
  ])('formats %d cents as %j', (cents, dollars) => {
    expect(centsToDollars(cents)).toBe(dollars);
  });

  it.each([-1, 0.5, 19.99, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1])('refuses %d', (cents) => {
    expect(() => centsToDollars(cents)).toThrow(InvalidMoneyError);
  });
});

describe('round trip', () => {
  it('centsToDollars then dollarsToCents is the identity on integer cents', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 999_999_999_999_999 }), (cents) => {
        expect(dollarsToCents(centsToDollars(cents))).toBe(cents);
      }),
      { numRuns: 2000 },
    );
  });

  it('dollarsToCents then centsToDollars gives back the canonical two-decimal string', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9_999_999_999_999 }), fc.integer({ min: 0, max: 99 }), (whole, fraction) => {
        const dollars = `${whole}.${String(fraction).padStart(2, '0')}`;
        expect(centsToDollars(dollarsToCents(dollars))).toBe(dollars);
      }),
    );
  });
});

describe('schemas', () => {
  it('centsSchema accepts non-negative integers only', () => {
    expect(centsSchema.safeParse(0).success).toBe(true);
    expect(centsSchema.safeParse(1999).success).toBe(true);
    expect(centsSchema.safeParse(-1).success).toBe(false);
    expect(centsSchema.safeParse(19.99).success).toBe(false);
    expect(centsSchema.safeParse('1999').success).toBe(false);
  });

  it('positiveCentsSchema refuses zero', () => {
    expect(positiveCentsSchema.safeParse(0).success).toBe(false);
    expect(positiveCentsSchema.safeParse(1).success).toBe(true);
  });

  it('dollarStringSchema accepts what dollarsToCents accepts', () => {
    expect(dollarStringSchema.safeParse('19.99').success).toBe(true);
    expect(dollarStringSchema.safeParse('19.999').success).toBe(false);
    expect(dollarStringSchema.safeParse('-1.00').success).toBe(false);
  });
});
