import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { idSchema } from './ids.js';
import { dollarStringSchema, dollarsToCents } from './money.js';
import { fridayBillingSchema, paymentMethodSchema, termSchema } from './records.js';
import { instantSchema } from './time.js';

/** A memberships-stream record (DESIGN 7): one schema for the producer and the consumer. */

const planSchema = lazySchema(() => z.object({
  amount: z.pipe(dollarStringSchema, z.transform((dollars) => dollarsToCents(dollars))).check(z.refine((cents) => cents > 0, 'the plan amount must be positive')),
  term: termSchema,
  tier: z.string().check(z.minLength(1)),
  payment_method: paymentMethodSchema,
  account_last_four: z.optional(z.string().check(z.regex(/^\d{4}$/, 'four digits'))),
  first_billing_date: instantSchema,
  friday_billing: z.optional(fridayBillingSchema),
}));

const base = {
  event_id: idSchema,
  user_id: idSchema,
  occurred_at: instantSchema,
};

export const membershipEventSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.object({ ...base, type: z.literal('NEW'), plan: planSchema }),
  z.object({ ...base, type: z.literal('PAUSE'), months: z.int().check(z.minimum(1), z.maximum(12)) }),
  z.object({ ...base, type: z.literal('UNPAUSE') }),
  z.object({ ...base, type: z.literal('CANCEL') }),
  z.object({ ...base, type: z.literal('CLOSEACCOUNT') }),
  z.object({ ...base, type: z.literal('REACTIVATE') }),
  z.object({ ...base, type: z.literal('BAN') }),
]));
export type MembershipEvent = z.infer<typeof membershipEventSchema>;
export type MembershipEventType = MembershipEvent['type'];

