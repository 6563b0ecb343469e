import * as z from 'zod';
import { lazySchema } from '../../domain/lazy-schema.js';
import { idSchema } from '../../domain/ids.js';
import { centsSchema, dollarStringSchema, dollarsToCents } from '../../domain/money.js';
import { termSchema } from '../../domain/records.js';
import { instantSchema } from '../../domain/time.js';

/**
 * zod schemas for the parts of Stripe's webhook objects we use. Unknown fields are ignored (Stripe
 * adds fields in every API version); what we read must be there and well-formed.
 */

// Bounded: Stripe's own strings end up in items and keys, whose size is limited. Our ids in its
// metadata (user_id, subscription_id) and the event id (stripe#{event_id}) use the one id schema.
const nonEmpty = lazySchema(() => z.string().trim().min(1).max(256));
const metadataSchema = lazySchema(() => z.record(z.string(), z.string()).nullish());

export const stripeEventEnvelopeSchema = lazySchema(() => z.object({
  id: idSchema,
  type: nonEmpty,
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
}));
export type StripeEventEnvelope = z.infer<typeof stripeEventEnvelopeSchema>;

/** The metadata the card processor puts on every PaymentIntent (and Stripe copies to its charge). */
export const cardReferenceSchema = lazySchema(() => z.object({
  user_id: idSchema,
  billing_date: instantSchema,
  subscription_id: idSchema,
}));

/**
 * A completed Checkout Session. A trial (`payment_status: no_payment_required`, `amount_total: 0`)
 * still opens the chain: the amount is `metadata.amount` (dollars, as a membership plan says it)
 * when present, else `amount_total` (DESIGN 6.1); the webhook refuses a session naming neither.
 */
export const checkoutSessionSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('checkout.session'),
  amount_total: centsSchema.nullish(),
  payment_status: z.string().nullish(),
  metadata: z.object({
    amount: dollarStringSchema.transform((dollars) => dollarsToCents(dollars)).optional(),
    user_id: idSchema,
    tier: nonEmpty,
    term: z.string().transform((t) => t.toUpperCase()).pipe(termSchema),
    first_billing_date: instantSchema,
    friday_billing: z.string().regex(/^[1-5]$/, '1 to 5').transform(Number).optional(),
  }),
}));

export const paymentIntentSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('payment_intent'),
  amount: centsSchema,
  /** What was received (DESIGN 6.1 compares it, and the currency, with the period's). */
  amount_received: centsSchema.nullish(),
  /** Stripe always sends it; an object without one is compared by amount only (see docs/decisions.md). */
  currency: z.string().trim().min(1).max(16).transform((c) => c.toLowerCase()).optional(),
  metadata: cardReferenceSchema,
  last_payment_error: z
    .object({
      code: z.string().nullish(),
      decline_code: z.string().nullish(),
      // Dunning (DESIGN 5b) reads the advice and network codes and the card's network.
      advice_code: z.string().nullish(),
      network_advice_code: z.string().nullish(),
      network_decline_code: z.string().nullish(),
      payment_method: z.object({ card: z.object({ brand: z.string().nullish() }).nullish() }).nullish(),
    })
    .nullish(),
}));

export const chargeSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('charge'),
  payment_intent: z.string().nullish(),
  amount: centsSchema,
  amount_refunded: centsSchema,
  refunded: z.boolean(),
  metadata: metadataSchema,
}));

export const disputeSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('dispute'),
  charge: nonEmpty,
  payment_intent: z.string().nullish(),
  amount: centsSchema,
  /** `warning_*`: an inquiry, no funds withdrawn (DESIGN 6.1). */
  status: z.string().min(1).max(64).optional(),
  metadata: metadataSchema,
}));
