import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';

/** Integer cents: the only money type the domain computes with. */
export type Cents = number;

export class InvalidMoneyError extends Error {
  override readonly name = 'InvalidMoneyError';
  readonly code = 'invalid_money';
}

const DOLLARS = /^(\d{1,13})(?:\.(\d{1,2}))?$/;

/** "19.99" → 1999, exactly (string arithmetic, never floating point). Negative amounts are refused. */
export function dollarsToCents(dollars: string): Cents {
  // Values arrive from storage and requests: a non-string is a money error, not a TypeError.
  if (typeof dollars !== 'string') throw new InvalidMoneyError(`not a dollar string: ${String(dollars)}`);
  const match = DOLLARS.exec(dollars.trim());
  if (!match) throw new InvalidMoneyError(`not a dollar amount with at most two decimals: ${JSON.stringify(dollars)}`);
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').padEnd(2, '0');
  const cents = Number(whole) * 100 + Number(fraction);
  if (!Number.isSafeInteger(cents)) throw new InvalidMoneyError(`amount out of range: ${dollars}`);
  return cents;
}

/** 1999 → "19.99"; 5 → "0.05". */
export function centsToDollars(cents: Cents): string {
  if (!Number.isSafeInteger(cents) || cents < 0) throw new InvalidMoneyError(`not a non-negative integer of cents: ${cents}`);
  const whole = Math.trunc(cents / 100);
  const fraction = String(cents % 100).padStart(2, '0');
  return `${whole}.${fraction}`;
}

export const centsSchema = lazySchema(() => z.int().check(z.nonnegative(), z.maximum(Number.MAX_SAFE_INTEGER)));
export const positiveCentsSchema = lazySchema(() => z.int().check(z.positive(), z.maximum(Number.MAX_SAFE_INTEGER)));

export const dollarStringSchema = lazySchema(() => z.string().check(z.regex(DOLLARS, 'a dollar amount with at most two decimals, e.g. "19.99"')));
