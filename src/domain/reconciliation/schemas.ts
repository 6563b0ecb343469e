import * as z from '../zod.js';
import { lazySchema } from '../lazy-schema.js';
import { MOVEMENT_KINDS } from '../money-movements.js';
import { RESOLUTIONS } from '../ports/reconciliation.js';
import { EXCEPTION_CODES } from './match.js';

/**
 * One schema per message of reconciliation (DESIGN 11, 14): the run and the exception as the API
 * answers them and as the events carry them. The events' producer parses its detail with these, a
 * consumer parses what it receives with the same, and the OpenAPI document is built from them.
 */

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const cents = () => z.int();
const sideSchema = () => z.object({ count: z.int().check(z.minimum(0)), total_cents: cents() });

export const reconciliationDaySchema = lazySchema(() => z.string().check(z.regex(DAY, 'a UTC day, YYYY-MM-DD')));
export const reconciliationRailSchema = lazySchema(() => z.enum(['card', 'ach', 'pinless']));

export const resolutionSchema = lazySchema(() =>
  z.object({
    resolution: z.enum(RESOLUTIONS),
    reason: z.string().check(z.minLength(1)),
    actor: z.string().check(z.minLength(1)),
    at: z.string(),
  }),
);

export const reconciliationExceptionSchema = lazySchema(() =>
  z.object({
    exception_id: z.string().check(z.minLength(1)),
    date: reconciliationDaySchema,
    rail: reconciliationRailSchema,
    code: z.enum(EXCEPTION_CODES),
    amount_cents: cents(),
    kind: z.enum(MOVEMENT_KINDS),
    transaction_id: z.optional(z.string()),
    record_key: z.optional(z.string()),
    user_id: z.optional(z.string()),
    occurred_at: z.string(),
    known: z.boolean(),
    first_seen_at: z.string(),
    last_seen_at: z.string(),
    resolution: z.optional(resolutionSchema),
  }),
);

export const reconciliationRunSchema = lazySchema(() =>
  z.object({
    date: reconciliationDaySchema,
    rail: reconciliationRailSchema,
    status: z.enum(['running', 'completed']),
    completed_at: z.optional(z.string()),
    ours: sideSchema(),
    theirs: sideSchema(),
    net_drift_cents: cents(),
    gross_drift_cents: z.int().check(z.minimum(0)),
    exception_ids: z.array(z.string()),
    run_id: z.optional(z.string()),
    amended_by: z.optional(z.array(z.string())),
  }),
);

/** `billing.reconciliation.completed`: a run done, with its totals and drifts. */
export const reconciliationCompletedDetailSchema = lazySchema(() => z.extend(reconciliationRunSchema, { event_id: z.string().check(z.minLength(1)) }));

/** `billing.reconciliation.exception`: one new exception. */
export const reconciliationExceptionDetailSchema = lazySchema(() => z.extend(reconciliationExceptionSchema, { event_id: z.string().check(z.minLength(1)) }));

export const RECONCILIATION_EVENT_TYPES = { completed: 'billing.reconciliation.completed', exception: 'billing.reconciliation.exception' } as const;
