import { centsToDollars, type Cents } from './money.js';
import * as z from './zod.js';

/**
 * The payment maximum (MAX_PAYMENT_CENTS): no path creates a charge above it. Each edge that takes
 * an amount from outside asks this module and answers in its own way: a loan payment request 400,
 * a membership NEW plan a batch item failure, a Stripe checkout recorded without effect.
 */

/** Whether `amountCents` is above the payment maximum. */
export function exceedsPaymentMaximum(amountCents: Cents, maxCents: Cents): boolean {
  return amountCents > maxCents;
}

/** The message every edge gives for an amount above the payment maximum. */
export function aboveMaximumMessage(maxCents: Cents): string {
  return `at most ${maxCents} cents (${centsToDollars(maxCents)} dollars), the payment maximum`;
}

/** A new charge in a request body: positive whole cents, not above the payment maximum (the same rule, as a schema). */
export function chargeCentsSchema(maxCents: Cents) {
  return z.int().check(z.positive(), z.maximum(maxCents, aboveMaximumMessage(maxCents)));
}
