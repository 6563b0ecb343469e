import { describe, expect, it } from 'vitest';
import { safeParseCold } from '../../src/domain/lazy-schema.js';
import { aboveMaximumMessage, chargeCentsSchema, exceedsPaymentMaximum } from '../../src/domain/payment-maximum.js';

/** One payment-maximum rule (src/domain/payment-maximum.ts); the edges that apply it are tested in test/handlers/payment-maximum.test.ts. */
describe('the payment maximum', () => {
  it('allows the maximum itself and refuses a cent above it', () => {
    expect(exceedsPaymentMaximum(1_000_000, 1_000_000)).toBe(false);
    expect(exceedsPaymentMaximum(1_000_001, 1_000_000)).toBe(true);
    expect(exceedsPaymentMaximum(1, 1)).toBe(false);
  });

  it('as a request schema, accepts exactly the positive whole amounts the rule allows', () => {
    const max = 5000;
    for (const amount of [-1, 0, 1, 4999, 5000, 5001, 10_000, 50.5]) {
      const accepted = safeParseCold(chargeCentsSchema(max), amount).success;
      expect(accepted, String(amount)).toBe(Number.isInteger(amount) && amount > 0 && !exceedsPaymentMaximum(amount, max));
    }
  });

  it('names the maximum in cents and dollars, the same words on every edge', () => {
    expect(aboveMaximumMessage(1_000_000)).toBe('at most 1000000 cents (10000.00 dollars), the payment maximum');
    const refused = safeParseCold(chargeCentsSchema(5000), 5001);
    expect(refused.success ? [] : refused.error.issues.map((i) => i.message)).toEqual([aboveMaximumMessage(5000)]);
  });
});
