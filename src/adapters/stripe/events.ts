import * as z from '../../domain/zod.js';
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
const nonEmpty = lazySchema(() => z.string().check(z.trim(), z.minLength(1), z.maxLength(256)));
const metadataSchema = lazySchema(() => z.nullish(z.record(z.string(), z.string())));

export const stripeEventEnvelopeSchema = lazySchema(() => z.object({
  id: idSchema,
  type: nonEmpty,
  /** Unix seconds: the day a movement it reports is reconciled on (DESIGN 14). */
  created: z.optional(z.number().check(z.int(), z.nonnegative())),
  data: z.object({
    object: z.record(z.string(), z.unknown()),
    /** On `*.updated` and `payment_method.detached`: what changed (a detached card's `customer`). */
    previous_attributes: z.optional(z.record(z.string(), z.unknown())),
  }),
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
  amount_total: z.nullish(centsSchema),
  payment_status: z.nullish(z.string()),
  /** The Stripe customer the session made or used: its card is stored on the user's instruments. */
  customer: z.nullish(z.string()),
  metadata: z.object({
    amount: z.optional(z.pipe(dollarStringSchema, z.transform((dollars) => dollarsToCents(dollars)))),
    user_id: idSchema,
    tier: nonEmpty,
    term: z.pipe(z.pipe(z.string(), z.transform((t) => t.toUpperCase())), termSchema),
    first_billing_date: instantSchema,
    friday_billing: z.optional(z.pipe(z.string().check(z.regex(/^[1-5]$/, '1 to 5')), z.transform(Number))),
  }),
}));

export const paymentIntentSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('payment_intent'),
  amount: centsSchema,
  /** What was received (DESIGN 6.1 compares it, and the currency, with the period's). */
  amount_received: z.nullish(centsSchema),
  /** Stripe always sends it; an object without one is compared by amount only (see docs/decisions.md). */
  currency: z.optional(z.pipe(z.string().check(z.trim(), z.minLength(1), z.maxLength(16)), z.transform((c) => c.toLowerCase()))),
  metadata: cardReferenceSchema,
  last_payment_error: z.nullish(z.object({
    code: z.nullish(z.string()),
    decline_code: z.nullish(z.string()),
    // Dunning (DESIGN 5b) reads the advice and network codes and the card's network.
    advice_code: z.nullish(z.string()),
    network_advice_code: z.nullish(z.string()),
    network_decline_code: z.nullish(z.string()),
    payment_method: z.nullish(z.object({ card: z.nullish(z.object({ brand: z.nullish(z.string()) })) })),
    // Older API versions name the card as a Source (a card source carries `brand`, e.g. "Visa").
    source: z.nullish(z.object({ brand: z.nullish(z.string()) })),
  })),
}));

export const chargeSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('charge'),
  payment_intent: z.nullish(z.string()),
  amount: centsSchema,
  amount_refunded: centsSchema,
  refunded: z.boolean(),
  metadata: metadataSchema,
}));

export const disputeSchema = lazySchema(() => z.object({
  id: nonEmpty,
  object: z.literal('dispute'),
  charge: nonEmpty,
  payment_intent: z.nullish(z.string()),
  amount: centsSchema,
  /** `warning_*`: an inquiry, no funds withdrawn (DESIGN 6.1). */
  status: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  metadata: metadataSchema,
}));

const stripeIdSchema = lazySchema(() => z.string().check(z.regex(/^[a-z]+_[A-Za-z0-9_]{1,250}$/, 'a Stripe id')));

/** A customer (`customer.updated`): only its id is read; its card is read back from Stripe as it is now. */
export const customerSchema = lazySchema(() => z.object({
  id: stripeIdSchema,
  object: z.literal('customer'),
}));

/** A PaymentMethod (`payment_method.*`): the customer it belongs to, now or (detached) before. */
export const paymentMethodSchema = lazySchema(() => z.object({
  id: stripeIdSchema,
  object: z.literal('payment_method'),
  customer: z.nullish(z.union([stripeIdSchema, z.object({ id: stripeIdSchema })])),
}));

/** `previous_attributes` of a detached PaymentMethod: the customer it was attached to. */
export const detachedFromSchema = lazySchema(() => z.object({
  customer: z.union([stripeIdSchema, z.object({ id: stripeIdSchema })]),
}));
