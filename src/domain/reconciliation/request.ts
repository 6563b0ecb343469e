import * as z from '../zod.js';
import { lazySchema } from '../lazy-schema.js';
import type { PaymentMethod } from '../records.js';

export const RAILS_RECONCILED: readonly PaymentMethod[] = ['card', 'ach', 'pinless'];

/** An on-demand run (`POST /local/reconciliation/run`, or the job invoked with this body); the schedule sends neither field. */
export const reconciliationRequestSchema = lazySchema(() => z.object({
  date: z.optional(z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD'))),
  rails: z.optional(z.array(z.enum(['card', 'ach', 'pinless']))),
}));

/**
 * A continuation (DESIGN 14): one rail's run resumes from its checkpoint at `step`; step 0 starts
 * the run. Sent by the job to its own queue; the same schema reads it back.
 */
export const continuationSchema = lazySchema(() => z.object({
  date: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD')),
  rail: z.enum(['card', 'ach', 'pinless']),
  run_id: z.string().check(z.minLength(1), z.maxLength(100)),
  step: z.int().check(z.minimum(0)),
}));
export type Continuation = z.infer<typeof continuationSchema>;
