import * as z from 'zod';
import { idSchema } from '../../domain/ids.js';
import { centsSchema, positiveCentsSchema } from '../../domain/money.js';
import { termSchema } from '../../domain/records.js';
import { instantSchema } from '../../domain/time.js';

/**
 * zod schemas for the parts of Stripe's webhook objects we use. Unknown fields are ignored (Stripe
 * adds fields in every API version); what we read must be there and well-formed.
 */

// Bounded: Stripe's own strings end up in items and keys, whose size is limited. Our ids in its
// metadata (user_id, subscription_id) and the event id (stripe#{event_id}) use the one id schema.
const nonEmpty = z.string().trim().min(1).max(256);
const metadataSchema = z.record(z.string(), z.string()).nullish();

export const stripeEventEnvelopeSchema = z.object({
  id: idSchema,
  type: nonEmpty,
  data: z.object({ object: z.record(z.string(), z.unknown()) }),
});
export type StripeEventEnvelope = z.infer<typeof stripeEventEnvelopeSchema>;

/** The metadata the card processor puts on every PaymentIntent (and Stripe copies to its charge). */
export const cardReferenceSchema = z.object({
  user_id: idSchema,
  billing_date: instantSchema,
  subscription_id: idSchema,
});

export const checkoutSessionSchema = z.object({
  id: nonEmpty,
  object: z.literal('checkout.session'),
  amount_total: positiveCentsSchema,
  metadata: z.object({
    user_id: idSchema,
    tier: nonEmpty,
    term: z.string().transform((t) => t.toUpperCase()).pipe(termSchema),
    first_billing_date: instantSchema,
    friday_billing: z.string().regex(/^[1-5]$/, '1 to 5').transform(Number).optional(),
  }),
});

export const paymentIntentSchema = z.object({
  id: nonEmpty,
  object: z.literal('payment_intent'),
  amount: centsSchema,
  metadata: cardReferenceSchema,
  last_payment_error: z
    .object({ code: z.string().nullish(), decline_code: z.string().nullish() })
    .nullish(),
});

export const chargeSchema = z.object({
  id: nonEmpty,
  object: z.literal('charge'),
  payment_intent: z.string().nullish(),
  amount: centsSchema,
  amount_refunded: centsSchema,
  refunded: z.boolean(),
  metadata: metadataSchema,
});

export const disputeSchema = z.object({
  id: nonEmpty,
  object: z.literal('dispute'),
  charge: nonEmpty,
  payment_intent: z.string().nullish(),
  amount: centsSchema,
  metadata: metadataSchema,
});
