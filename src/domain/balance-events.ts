import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { idSchema } from './ids.js';
import { instantSchema } from './time.js';

const balanceCents = lazySchema(() => z.int().check(z.minimum(-Number.MAX_SAFE_INTEGER), z.maximum(Number.MAX_SAFE_INTEGER)));

/** `POST /webhooks/balance` as the API enqueues it and the worker reads it; balances may be negative. */
export const balanceEventSchema = lazySchema(() => z.object({
  // The queue message id and the worker's dedup key: an id, not free text.
  event_id: idSchema,
  user_id: idSchema,
  institution_id: idSchema,
  available_balance_cents: balanceCents,
  current_balance_cents: balanceCents,
  calc_available_balance_cents: z.optional(balanceCents),
  occurred_at: instantSchema,
}));
export type BalanceEvent = z.infer<typeof balanceEventSchema>;
