import * as z from '../zod.js';
import { lazySchema } from '../lazy-schema.js';
import type { PaymentMethod } from '../records.js';

export const RAILS_RECONCILED: readonly PaymentMethod[] = ['card', 'ach', 'pinless'];

/** An on-demand run (`POST /local/reconciliation/run`, or the job invoked with this body); the schedule sends neither field. */
export const reconciliationRequestSchema = lazySchema(() => z.object({
  date: z.optional(z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD'))),
  rails: z.optional(z.array(z.enum(['card', 'ach', 'pinless']))),
}));
