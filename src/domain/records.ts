import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { centsSchema } from './money.js';


/** DESIGN 2.2. PASTDUE is never stored; it is computed on read (see `displayStatus`). */
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

/**
 * Events on a billing period (DESIGN 2.2): what one write did. The transition table
 * (transitions.ts) maps each to the status it leaves; the history row of the write names it
 * (`billing_event`), which is what the events-publisher reads (DESIGN 11).
 */
export const BILLING_EVENTS = [
  'COLLECTED', // pinless/card payment approved
  'ACH_SUBMITTED', // ACH debit accepted by the processor
  'DECLINED', // payment declined, or the balance gate closed on a scheduled/retry path
  'ACH_SETTLED',
  'ACH_RETURNED', // the debit came back (also after it settled: returns come up to 60 days later); the period is owed again
  'CHARGED_BACK', // an unauthorized return or dispute after the money was taken
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
  'DUE_DATE_CHANGED',
  'BILLING_RETRY_REQUESTED',
  'BILLING_FAILURE_RECORDED',
  'EXCEPTION_RAISED', // an outcome that does not match the period (amount, currency, a dispute inquiry): flagged, status unchanged
  'DUNNING_EXHAUSTED', // a run found the dunning cycle's 14-day window over: recorded exhausted, nothing presented (DESIGN 5b)
] as const;
export const billingEventSchema = lazySchema(() => z.enum(BILLING_EVENTS));
export type BillingEvent = z.infer<typeof billingEventSchema>;

export const termSchema = lazySchema(() => z.enum(['MONTHLY', 'ANNUAL']));
export type Term = z.infer<typeof termSchema>;

export const paymentMethodSchema = lazySchema(() => z.enum(['ach', 'pinless', 'card']));
export type PaymentMethod = z.infer<typeof paymentMethodSchema>;

export const fridayBillingSchema = lazySchema(() => z.int().check(z.minimum(1), z.maximum(5)));

const instant = lazySchema(() => z.string().check(z.minLength(1)));

/*
 * Field schemas many fields share, built once with the record schemas that use them (a record
 * schema of separate copies was ~160 zod instances to construct on a cold start's first read; zod
 * schemas are immutable, so one instance validates, reports and converts exactly as a copy would).
 */
function sharedFields() {
  const text = z.string().check(z.minLength(1));
  const count = z.int().check(z.nonnegative());
  const int = z.int();
  return {
    text,
    optionalText: z.optional(text),
    optionalString: z.optional(z.string()),
    count,
    optionalCount: z.optional(count),
    optionalInt: z.optional(int),
    optionalBoolean: z.optional(z.boolean()),
    optionalInstant: z.optional(instant),
  };
}
type SharedFields = ReturnType<typeof sharedFields>;
let shared: SharedFields | undefined;

/** Builds a schema from the shared field schemas (built with the first schema that asks for them). */
function withFields<T>(build: (f: SharedFields) => T): T {
  shared ??= sharedFields();
  return build(shared);
}

/**
 * An ACH outcome that does not match the debit (DESIGN 4.1): the period stays unsettled and is
 * listed for operators (`?billing=exceptions`). Also a settlement for a period that was written off
 * (waived, cancelled, skipped) of an entry it never recorded: money taken and not owed, to refund.
 */
export const achExceptionSchema = lazySchema(() => withFields((f) => z.object({
  /** amount_mismatch: a settlement for another amount; unowed_payment: a settlement this record can no longer book and never recorded. */
  code: z.enum(['amount_mismatch', 'unowed_payment']),
  received_cents: f.count,
  /** unowed_payment: the settled entry's confirmation id (the money to refund). */
  confirmation_id: f.optionalString,
  at: instant,
})));
export type AchException = z.infer<typeof achExceptionSchema>;

/**
 * A Stripe outcome that does not match the period (DESIGN 6.1): a success for another amount or
 * currency (never a completion), or a dispute inquiry (no funds withdrawn: flagged, not failed).
 */
export const cardExceptionSchema = lazySchema(() => withFields((f) => z.object({
  /** unowed_payment: a success this record can no longer book (WAIVED, CANCELLED, SKIPPED) and never recorded. */
  code: z.enum(['amount_mismatch', 'currency_mismatch', 'dispute_inquiry', 'unowed_payment']),
  payment_intent_id: f.optionalString,
  received_cents: f.optionalCount,
  currency: f.optionalString,
  dispute_id: f.optionalString,
  dispute_status: f.optionalString,
  at: instant,
})));
export type CardException = z.infer<typeof cardExceptionSchema>;
/** How a decline bears on the next automatic attempt (DESIGN 5b; the table is in dunning.ts). */
export const DECLINE_CLASSES = ['do_not_retry', 'update_payment_method', 'customer_action', 'retry_later'] as const;
export const declineClassSchema = lazySchema(() => z.enum(DECLINE_CLASSES));
export type DeclineClass = z.infer<typeof declineClassSchema>;

/** Card networks the reattempt ceilings know; `other` (not said, a debit network, amex, ...) gets every ceiling. */
export const CARD_NETWORKS = ['visa', 'mastercard', 'other'] as const;
export const cardNetworkSchema = lazySchema(() => z.enum(CARD_NETWORKS));
export type CardNetwork = z.infer<typeof cardNetworkSchema>;

/** The five attributes of a saved billing failure (DESIGN 5). Stale values stay until overwritten. */
export const billingFailureFieldsSchema = lazySchema(() => withFields((f) => z.object({
  billing_failed_for: f.optionalString,
  billing_failure_count: f.optionalCount,
  billing_failed_at: f.optionalInstant,
  billing_next_attempt_at: f.optionalInstant,
  billing_last_error: f.optionalString,
  /**
   * Not one of the five: the due key (`{billing_date}#{payment_attempts}`) whose payment a failed
   * attempt presented to the processor before it failed, so the processor may hold a charge under
   * `{subscription_id}:{payment_attempts + 1}` that no record shows. Written by RecordBillingFailure
   * in the same UpdateItem; live while the record is collectible and the key is its due key (an
   * attempt that records its result moves payment_attempts and voids it; retry-billing's clear does
   * not). Absent on items saved before it existed: read as not presented.
   */
  billing_presented_for: f.optionalString,
})));

/**
 * One billing period of one user (DESIGN 2.1), as the domain sees it: money in integer cents.
 * Attribute names are the table's; the adapter converts `amount_cents` to the stored `amount`.
 */
export const billingRecordSchema = lazySchema(() => withFields((f) => z.object({
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
  /*
   * Membership intent (DESIGN 2.9): what the member asked for. Only membership events and an
   * operator action that says so change these (see intent.ts); every other writer carries them
   * forward and a successor period inherits them.
   */
  /** Day of month the plan bills on (keeps Jan 31 → Feb 28 → Mar 31); a due-date change moves it. */
  billing_anchor_day: z.optional(z.int().check(z.minimum(1), z.maximum(31))),
  /** Calendar months of pause still to skip, this period included; non-zero only while PAUSED. */
  paused_months: f.optionalCount,
  /** When the member asked to cancel: this period is cancelled at its billing date, never collected, and has no successor. */
  cancel_requested_at: f.optionalInstant,
  /** Membership events applied to this chain (most recent last, bounded): a replay of any of them is a no-op. */
  membership_event_ids: z.optional(z.array(f.text).check(z.maxLength(64))),
  /**
   * The chain link (docs/decisions.md): where this period's successor is when a due-date change
   * moved it off the calendar date. The successor rule follows it, so a later attempt of this
   * period finds its next period instead of opening a second one at the old date.
   */
  successor_billing_date: f.optionalInstant,
  /**
   * The chain this period belongs to (chain.ts): the subscription_id of the chain's first period,
   * set when the chain opens and inherited by every successor; no writer's `set` can name it.
   * Absent on items written before it existed (legacy chains keep the old rules).
   */
  chain_id: f.optionalText,
  payment_attempts: f.count,
  last_attempt_date: f.optionalInstant,
  version: f.count,
  /** Legacy form of `membership_event_ids` (one id); read once by `upgradeLegacyIntent` (the billing store decode), never written. */
  membership_event_id: f.optionalString,
  /** `occurred_at` of the newest membership event applied: an older one for this user is not applied again. */
  membership_event_at: f.optionalInstant,
  /** Idempotency-Key of the last person-initiated payment request (manual pay); a repeat is answered, not re-run. */
  last_request_key: f.optionalString,
  /** ACH re-presentments after R01/R09 returns, and when the original entry was made (DESIGN 4). */
  ach_represented: f.optionalCount,
  ach_original_entry_date: f.optionalInstant,
  /** NACHA code of the last ACH return of this period: tells an account-error block from the re-presentment limit. */
  ach_return_code: f.optionalString,
  /** Set by an account-error return (R02, R03, R04, ...) or the re-presentment limit: no further ACH debits for this record. */
  ach_blocked: f.optionalBoolean,
  /** Set by an unauthorized return (R05, R07, R10, R11, R29): never retried automatically. */
  ach_unauthorized: f.optionalBoolean,
  /** Set by a card dispute (charge.dispute.created): never charged again automatically. */
  card_disputed: f.optionalBoolean,
  /** An ACH outcome that did not match (DESIGN 4.1); listed by `?billing=exceptions`. */
  ach_exception: z.optional(achExceptionSchema),
  /** A Stripe outcome that did not match (DESIGN 6.1); listed by `?billing=exceptions`. */
  card_exception: z.optional(cardExceptionSchema),
  /*
   * Dunning (DESIGN 5b, dunning.ts): the most recent decline's code and class, and the schedule of
   * this period's automatic attempts. Absent when the period was never declined (or was reset).
   */
  decline_code: f.optionalText,
  decline_class: z.optional(declineClassSchema),
  /** First decline of the current cycle: the schedule's day 0. */
  dunning_first_declined_at: f.optionalInstant,
  /** Attempts of the current cycle (slots spent), the first decline included. */
  dunning_attempts: f.optionalCount,
  /** The next automatic attempt; absent in a cycle = exhausted. */
  dunning_next_attempt_at: f.optionalInstant,
  /** Merchant-initiated presentments of this card for this period in the last 30 days (the networks' ceilings). */
  dunning_presented_at: z.optional(z.array(instant).check(z.maxLength(64))),
  card_network: z.optional(cardNetworkSchema),
  // The five failure attributes, spread rather than `.extend`ed: one object schema to build, not two.
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
  /** The bulk retry run (POST /v1/billing/retry-runs) the action belongs to. */
  run_id: f.optionalString,
})));

/**
 * An append-only audit row: the record as written, plus decision context and audit fields, and
 * the event that made this after-image (absent on the row of a new period). Like `data_*`, `actor`
 * and `reason`, `billing_event` is never on the primary item.
 */
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
}));

/* ---------------- loan payments (DESIGN 2.7, seed 004) ---------------- */

export const LOAN_PAYMENT_STATUSES = [
  'PENDING',
  'ACHSENT',
  'COMPLETED',
  'RETRY',
  'SKIPPED',
  'FAILED',
  'CHARGED_BACK',
  'RETURNED',
] as const;
export const loanPaymentStatusSchema = lazySchema(() => z.enum(LOAN_PAYMENT_STATUSES));
export type LoanPaymentStatus = z.infer<typeof loanPaymentStatusSchema>;
export const loanPaymentProcessSchema = lazySchema(() => z.enum(['MANUAL', 'AUTO', 'RETRY']));
export type LoanPaymentProcess = z.infer<typeof loanPaymentProcessSchema>;

export const loanPaymentApplicationSchema = lazySchema(() => z.object({
  payment_id: z.string(),
  installment_id: z.string(),
  amount: centsSchema,
  payment_date: instant,
}));

export const loanPaymentSchema = lazySchema(() => withFields((f) => z.object({
  loc_user_id: f.text,
  loc_loan_id: f.text,
  loc_payment_id: f.text,
  loc_amount: centsSchema,
  loc_status: loanPaymentStatusSchema,
  loc_payment_method: z.enum(['ach', 'pinless']),
  loc_process: loanPaymentProcessSchema,
  loc_confirmation_id: f.optionalString,
  loc_account_last_four: f.optionalString,
  loc_intended_installment_id: f.optionalString,
  loc_payment_attempts: f.count,
  loc_applications: z.optional(z.array(loanPaymentApplicationSchema)),
  loc_update_reason: f.optionalString,
  loc_created_date: instant,
  loc_last_updated: instant,
  /** RETRY only: when the next automatic attempt is due (DESIGN 2.7); GSI2 orders RETRY payments by it. */
  loc_next_attempt_at: f.optionalInstant,
  /** The first decline of this payment: the retry waits of DESIGN 5b count from it. */
  loc_first_declined_at: f.optionalInstant,
  /** The last decline's processor code and its dunning class (DESIGN 5b). */
  loc_decline_code: f.optionalString,
  loc_decline_class: z.optional(declineClassSchema),
  /** The NACHA code of the last ACH return of this payment (DESIGN 4, 3.1 holds). */
  loc_return_code: f.optionalString,
  /** Counted processor errors (not declines) of the automatic retries: each moves the next attempt by the 5b wait. */
  loc_error_count: f.optionalCount,
  /** Optimistic-concurrency counter, as on billing records. */
  version: f.count,
})));
export type LoanPayment = z.infer<typeof loanPaymentSchema>;

/**
 * One audit row of a loan payment (DESIGN 2.7): the payment as a change left it, who made the change
 * (`actor`: the JWT `sub`, or `system:<function>`) and why (`reason`; `loc_update_reason` is the
 * payment's own). Written in the same transaction as the change, never overwritten.
 */
export const loanPaymentHistoryRowSchema = lazySchema(() => withFields((f) => z.extend(loanPaymentSchema, {
  actor: f.text,
  reason: f.optionalString,
  recorded_at: instant,
})));
export type LoanPaymentHistoryRow = z.infer<typeof loanPaymentHistoryRowSchema>;

/* ---------------- stripe-events (DESIGN 2.8) ---------------- */

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
