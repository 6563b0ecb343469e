import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { centsSchema } from './money.js';
import { instant, withFields, type SharedFields } from './schema-fields.js';
import { DECIDED_BY, HOLD_CODES } from './instruments/holds.js';


/** DESIGN 2.2. PASTDUE is never stored: `displayStatus` computes it on read. */
export const BILLING_STATUSES = [
  'PENDING',
  'ACHSENT',
  'COMPLETED',
  'FAILED',
  'WAIVED',
  'CANCELLED',
  'PAUSED',
  'SKIPPED',
  'INACTIVE',
  'REFUNDED',
] as const;
export const billingStatusSchema = lazySchema(() => z.enum(BILLING_STATUSES));
export type BillingStatus = z.infer<typeof billingStatusSchema>;
export type DisplayStatus = BillingStatus | 'PASTDUE';

/** DESIGN 2.3 */
export const PROCESSES = [
  'SCHEDULED',
  'RETRY',
  'PAUSE',
  'BALANCE_WEBHOOK',
  'BATCH',
  'REACTIVATION',
  'MANUAL',
  'OPERATOR_RETRY',
  'UNKNOWN',
] as const;
export const processSchema = lazySchema(() => z.enum(PROCESSES));
export type Process = z.infer<typeof processSchema>;

/** DESIGN 2.4 */
export const UPDATED_EVENTS = [
  'PAUSE_SKIPPED',
  'PAUSE_ENDING',
  'RESUMED',
  'REACTIVATED',
  'CANCEL_REQUESTED',
  'CANCEL_COMPLETED',
  'PAUSED',
  'UNPAUSED',
  'ACCOUNT_CLOSED',
  'ACH_SETTLED',
  'ACH_RETURNED',
  'ACH_CHARGEBACK',
  'REFUNDED',
  'USER_NOT_ACTIVE',
  'USER_BANNED',
  'DUE_DATE_CHANGED',
  'WAIVED',
  'BILLING_RETRY_REQUESTED',
] as const;
export const updatedEventSchema = lazySchema(() => z.enum(UPDATED_EVENTS));
export type UpdatedEvent = z.infer<typeof updatedEventSchema>;

/** What one write did to a period: the history row names it (`billing_event`) for the events-publisher. */
export const BILLING_EVENTS = [
  'COLLECTED', // pinless/card payment approved
  'ACH_SUBMITTED', // ACH debit accepted by the processor
  'DECLINED', // payment declined, or the balance gate closed on a scheduled/retry path
  'ACH_SETTLED',
  'ACH_RETURNED', // the debit came back (also after it settled: returns come up to 60 days later); the period is owed again
  'CHARGED_BACK', // an unauthorized return or dispute after the money was taken
  'DISPUTE_WON', // a card dispute closed in our favour: the funds are reinstated, the period collected again
  'REFUNDED',
  'WAIVED',
  'CANCEL_REQUESTED',
  'CANCEL_COMPLETED',
  'ACCOUNT_CLOSED',
  'PAUSED',
  'UNPAUSED',
  'PAUSE_SKIPPED',
  'USER_NOT_ACTIVE',
  'REACTIVATED',
  'REACTIVATED_PAUSED', // a reactivation of a period whose pause is not over (intent.ts reactivationEvent)
  'REACTIVATED_FAILED', // a reactivation of a period attempted before the ban: still declined, its dunning kept
  'DUE_DATE_CHANGED',
  'BILLING_RETRY_REQUESTED',
  'BILLING_FAILURE_RECORDED',
  'EXCEPTION_RAISED', // an outcome that does not match the period (amount, currency, a dispute inquiry): flagged, status unchanged
  'DUNNING_EXHAUSTED', // a run found the dunning cycle's 14-day window over: recorded exhausted, nothing presented (DESIGN 5b)
  'EXCEPTION_ACCEPTED', // an operator accepted the money an exception received as the period's payment
  'EXCEPTION_WAIVED', // an operator wrote the period off; the received money stays recorded
  'EXCEPTION_REFUNDED', // an operator refunded the received money at the processor: owed in full again
  'INSTRUMENT_HELD', // a scheduled or retry attempt met a hold on the instrument: off the schedule, still owed, nothing presented (DESIGN 3.2)
  'HOLD_RELEASED', // the hold that kept the period off the schedule no longer binds it: due again at once
  'PAYMENT_REFUSED', // a person's request refused by a hold or a ceiling (409): an audit row only, the period is not written
  'CEILING_REACHED', // a scheduled or retry attempt met a card's network ceiling: due again when it frees up, nothing presented (DESIGN 3.2)
] as const;
export const billingEventSchema = lazySchema(() => z.enum(BILLING_EVENTS));
export type BillingEvent = z.infer<typeof billingEventSchema>;

export const termSchema = lazySchema(() => z.enum(['MONTHLY', 'ANNUAL']));
export type Term = z.infer<typeof termSchema>;

export const paymentMethodSchema = lazySchema(() => z.enum(['ach', 'pinless', 'card']));
export type PaymentMethod = z.infer<typeof paymentMethodSchema>;

export const fridayBillingSchema = lazySchema(() => z.int().check(z.minimum(1), z.maximum(5)));

/** An ACH settlement that does not match the debit, or that a written-off period does not owe (DESIGN 4.1). */
export const achExceptionSchema = lazySchema(() => withFields((f) => z.object({
  code: z.enum(['amount_mismatch', 'unowed_payment']),
  received_cents: f.count,
  /** unowed_payment: the settled entry, to refund. */
  confirmation_id: f.optionalString,
  at: instant,
})));
export type AchException = z.infer<typeof achExceptionSchema>;

/** A Stripe outcome that does not match the period, or a dispute inquiry (DESIGN 6.1). */
export const cardExceptionSchema = lazySchema(() => withFields((f) => z.object({
  code: z.enum(['amount_mismatch', 'currency_mismatch', 'dispute_inquiry', 'unowed_payment']),
  payment_intent_id: f.optionalString,
  received_cents: f.optionalCount,
  currency: f.optionalString,
  dispute_id: f.optionalString,
  dispute_status: f.optionalString,
  at: instant,
})));
export type CardException = z.infer<typeof cardExceptionSchema>;
/** How a decline bears on the next automatic attempt (declines.ts classifies). */
export const DECLINE_CLASSES = ['do_not_retry', 'update_payment_method', 'customer_action', 'retry_later'] as const;
export const declineClassSchema = lazySchema(() => z.enum(DECLINE_CLASSES));
export type DeclineClass = z.infer<typeof declineClassSchema>;

/** Card networks the reattempt ceilings know; `other` (not said, a debit network, amex, ...) gets every ceiling. */
export const CARD_NETWORKS = ['visa', 'mastercard', 'other'] as const;
export const cardNetworkSchema = lazySchema(() => z.enum(CARD_NETWORKS));
export type CardNetwork = z.infer<typeof cardNetworkSchema>;

/** A saved billing failure (DESIGN 5, ladder.ts): stale values stay until overwritten. */
export const billingFailureFieldsSchema = lazySchema(() => withFields((f) => z.object({
  billing_failed_for: f.optionalString,
  billing_failure_count: f.optionalCount,
  billing_failed_at: f.optionalInstant,
  billing_next_attempt_at: f.optionalInstant,
  billing_last_error: f.optionalString,
  /** The due key a failed attempt presented before it failed: the processor may hold that charge (takeover.ts). */
  billing_presented_for: f.optionalString,
})));

/** The period, its plan and the last write. */
const periodFields = (f: SharedFields) => ({
  user_id: f.text,
  billing_date: instant,
  subscription_id: f.text,
  amount_cents: centsSchema,
  billing_status: billingStatusSchema,
  transaction_id: f.optionalString,
  payment_error: f.optionalString,
  first_attempt_date: f.optionalInstant,
  completed_date: f.optionalInstant,
  last_run_date: instant,
  created_date: instant,
  process: processSchema,
  updated_event: z.optional(updatedEventSchema),
  term: termSchema,
  account_last_four: f.optionalString,
  tier: f.text,
  payment_method: paymentMethodSchema,
  friday_billing: z.optional(fridayBillingSchema),
});

/** Membership intent (intent.ts) and the chain (chain.ts): only their own writers change them. */
const intentFields = (f: SharedFields) => ({
  /** Keeps Jan 31 → Feb 28 → Mar 31. */
  billing_anchor_day: z.optional(z.int().check(z.minimum(1), z.maximum(31))),
  /** Months of pause still to skip, this period included. */
  paused_months: f.optionalCount,
  cancel_requested_at: f.optionalInstant,
  /** Applied to this chain, most recent last: a replay of any is a no-op. */
  membership_event_ids: z.optional(z.array(f.text).check(z.maxLength(64))),
  /** Where a due-date change moved this period's successor, so an attempt finds it instead of opening another. */
  successor_billing_date: f.optionalInstant,
  /** Absent on legacy items, whose chains keep the old rule. */
  chain_id: f.optionalText,
});

/** Attempts, the version fence, and what a replay of an event or request is recognised by. */
const attemptFields = (f: SharedFields) => ({
  payment_attempts: f.count,
  last_attempt_date: f.optionalInstant,
  version: f.count,
  /** Legacy form of `membership_event_ids`: read, never written. */
  membership_event_id: f.optionalString,
  /** The newest membership event applied: an older one is not applied again. */
  membership_event_at: f.optionalInstant,
  /** Idempotency-Key of the last manual pay: a repeat is answered, not re-run. */
  last_request_key: f.optionalString,
});

/** A scheduled or retry attempt refused by a hold: the period waits in the held index until the instrument changes or is released. */
export const heldOnSchema = lazySchema(() => withFields((f) => z.object({
  code: z.enum(HOLD_CODES),
  decided_by: z.enum(DECIDED_BY),
  instrument_id: f.optionalText,
  since: instant,
})));
export type HeldOn = z.infer<typeof heldOnSchema>;

/** What ACH returns and card disputes left on the period (the holds of DESIGN 3.1, the exceptions). */
const holdFields = (f: SharedFields) => ({
  ach_represented: f.optionalCount,
  ach_original_entry_date: f.optionalInstant,
  /** Tells an account-error block from the re-presentment limit. */
  ach_return_code: f.optionalString,
  ach_blocked: f.optionalBoolean,
  ach_unauthorized: f.optionalBoolean,
  card_disputed: f.optionalBoolean,
  ach_exception: z.optional(achExceptionSchema),
  card_exception: z.optional(cardExceptionSchema),
  /** What an accepted exception received, when it settled the period for another amount. */
  amount_received_cents: f.optionalCount,
  /** The instrument the last payment request named (DESIGN 3.2). */
  instrument_id: f.optionalText,
  /** Set while a hold keeps the period off the schedule (held index); the rule that decided it. */
  held_on: z.optional(heldOnSchema),
  /** A card's network ceiling refused the schedule: not due again before this instant (DESIGN 3.2). */
  ceiling_until: f.optionalInstant,
  /** The named rule of the last refusal or stop written on the period. */
  decided_by: z.optional(z.enum(DECIDED_BY)),
});

/** Dunning (dunning.ts): the last decline and the schedule of automatic attempts; absent if never declined or reset. */
const dunningFields = (f: SharedFields) => ({
  decline_code: f.optionalText,
  decline_class: z.optional(declineClassSchema),
  /** The schedule's day 0. */
  dunning_first_declined_at: f.optionalInstant,
  dunning_attempts: f.optionalCount,
  /** Absent in a cycle: exhausted. */
  dunning_next_attempt_at: f.optionalInstant,
  /** Merchant-initiated presentments of the last 30 days, for the networks' ceilings. */
  dunning_presented_at: z.optional(z.array(instant).check(z.maxLength(64))),
  card_network: z.optional(cardNetworkSchema),
});

/** One billing period of one user (DESIGN 2.1), in the table's names; the adapter stores `amount_cents` as `amount`. */
export const billingRecordSchema = lazySchema(() => withFields((f) => z.object({
  ...periodFields(f),
  ...intentFields(f),
  ...attemptFields(f),
  ...holdFields(f),
  ...dunningFields(f),
  // Spread rather than `.extend`ed: one object schema to build, not two.
  ...billingFailureFieldsSchema.shape,
})));
export type BillingRecord = z.infer<typeof billingRecordSchema>;

/** Decision context captured on the history row of a payment submission (DESIGN 2.5). */
export const decisionContextSchema = lazySchema(() => withFields((f) => z.object({
  data_payment_method: z.optional(paymentMethodSchema),
  data_institution_id: f.optionalString,
  data_available_balance_cents: f.optionalInt,
  data_current_balance_cents: f.optionalInt,
  data_calc_available_balance_cents: f.optionalInt,
  data_balance_source: z.optional(z.enum(['available', 'current', 'calc_available'])),
  data_threshold_cents: f.optionalInt,
  data_debit_card_valid: f.optionalBoolean,
  data_blocklisted: f.optionalBoolean,
  data_ml_override: f.optionalBoolean,
  data_institution_unreliable: f.optionalBoolean,
})));
export type DecisionContext = z.infer<typeof decisionContextSchema>;

/** Who did what and why, on rows written by an operator or user action (DESIGN 8). */
export const auditFieldsSchema = lazySchema(() => withFields((f) => z.object({
  actor: f.optionalString,
  reason: f.optionalString,
  /** The bulk retry run the action belongs to. */
  run_id: f.optionalString,
  /** An exception's resolution (exception-resolution.ts): how, the processor's refund, received minus owed. */
  resolution: z.optional(z.enum(['accept', 'waive', 'refunded_retry'])),
  refund_id: f.optionalString,
  amount_difference_cents: f.optionalInt,
  /** A hold this change set on an instrument (DESIGN 3.2): published as `billing.instrument.held`. */
  held_instrument_id: f.optionalText,
  hold_code: z.optional(z.enum(HOLD_CODES)),
  hold_since: f.optionalInstant,
})));

/** An append-only audit row: the record as written, its decision context, who and why, and the event that made it. */
export const historyRowSchema = lazySchema(() => z.object({
  ...billingRecordSchema.shape,
  ...decisionContextSchema.shape,
  ...auditFieldsSchema.shape,
  billing_event: z.optional(billingEventSchema),
}));
export type HistoryRow = z.infer<typeof historyRowSchema>;

export interface BillingKey {
  readonly user_id: string;
  readonly billing_date: string;
}

export function keyOf(record: BillingKey): BillingKey {
  return { user_id: record.user_id, billing_date: record.billing_date };
}

/** What the gate knows about a user at decision time (the AccountSnapshot port type, validated). */
export const accountSnapshotSchema = lazySchema(() => z.object({
  status: z.enum(['active', 'inactive', 'banned', 'closed']),
  status_since: z.optional(instant),
  institution_id: z.optional(z.string()),
  available_balance_cents: z.optional(z.int()),
  current_balance_cents: z.optional(z.int()),
  debit_card_valid: z.optional(z.boolean()),
  blocklisted: z.optional(z.boolean()),
  institution_unreliable: z.optional(z.boolean()),
  ml_override: z.optional(z.boolean()),
  /** What the user pays with on each rail (DESIGN 3.2); a rail not named is not known to the directory. */
  instruments: z.optional(z.object({
    ach: z.optional(z.object({ account_id: z.string().check(z.minLength(1)), authorization_id: z.string().check(z.minLength(1)), authorized_at: z.optional(instant) })),
    pinless: z.optional(z.object({ fingerprint: z.string().check(z.minLength(1)), brand: z.optional(z.string()) })),
  })),
}));

/** A Stripe event's processing claim (DESIGN 2.8, stripe-events.ts). */
export const stripeEventClaimSchema = lazySchema(() => z.object({
  event_id: z.string().check(z.minLength(1)),
  status: z.enum(['processing', 'processed']),
  event_type: z.optional(z.string()),
  updated_at: z.int(),
  expires_at: z.int(),
  lease_expires_at: z.optional(z.int()),
  claim_token: z.optional(z.string()),
}));
export type StripeEventClaim = z.infer<typeof stripeEventClaimSchema>;
