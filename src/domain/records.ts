import * as z from 'zod';
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

export const fridayBillingSchema = lazySchema(() => z.number().int().min(1).max(5));

const instant = lazySchema(() => z.string().min(1));

/**
 * An ACH outcome that does not match the debit (DESIGN 4.1): the period stays unsettled and is
 * listed for operators (`?billing=exceptions`). Also a settlement for a period that was written off
 * (waived, cancelled, skipped) of an entry it never recorded: money taken and not owed, to refund.
 */
/** Statuses that can no longer book a payment: one arriving for them that they never recorded is `unowed_payment`. */
export const UNBOOKABLE_STATUSES: ReadonlySet<BillingStatus> = new Set(['WAIVED', 'CANCELLED', 'SKIPPED']);

export const achExceptionSchema = lazySchema(() => z.object({
  /** amount_mismatch: a settlement for another amount; unowed_payment: a settlement this record can no longer book and never recorded. */
  code: z.enum(['amount_mismatch', 'unowed_payment']),
  received_cents: z.number().int().nonnegative(),
  /** unowed_payment: the settled entry's confirmation id (the money to refund). */
  confirmation_id: z.string().optional(),
  at: instant,
}));
export type AchException = z.infer<typeof achExceptionSchema>;

/**
 * A Stripe outcome that does not match the period (DESIGN 6.1): a success for another amount or
 * currency (never a completion), or a dispute inquiry (no funds withdrawn: flagged, not failed).
 */
export const cardExceptionSchema = lazySchema(() => z.object({
  /** unowed_payment: a success this record can no longer book (WAIVED, CANCELLED, SKIPPED) and never recorded. */
  code: z.enum(['amount_mismatch', 'currency_mismatch', 'dispute_inquiry', 'unowed_payment']),
  payment_intent_id: z.string().optional(),
  received_cents: z.number().int().nonnegative().optional(),
  currency: z.string().optional(),
  dispute_id: z.string().optional(),
  dispute_status: z.string().optional(),
  at: instant,
}));
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
export const billingFailureFieldsSchema = lazySchema(() => z.object({
  billing_failed_for: z.string().optional(),
  billing_failure_count: z.number().int().nonnegative().optional(),
  billing_failed_at: instant.optional(),
  billing_next_attempt_at: instant.optional(),
  billing_last_error: z.string().optional(),
  /**
   * Not one of the five: the due key (`{billing_date}#{payment_attempts}`) whose payment a failed
   * attempt presented to the processor before it failed, so the processor may hold a charge under
   * `{subscription_id}:{payment_attempts + 1}` that no record shows. Written by RecordBillingFailure
   * in the same UpdateItem; live while the record is collectible and the key is its due key (an
   * attempt that records its result moves payment_attempts and voids it; retry-billing's clear does
   * not). Absent on items saved before it existed: read as not presented.
   */
  billing_presented_for: z.string().optional(),
}));

/**
 * One billing period of one user (DESIGN 2.1), as the domain sees it: money in integer cents.
 * Attribute names are the table's; the adapter converts `amount_cents` to the stored `amount`.
 */
export const billingRecordSchema = lazySchema(() => z
  .object({
    user_id: z.string().min(1),
    billing_date: instant,
    subscription_id: z.string().min(1),
    amount_cents: centsSchema,
    billing_status: billingStatusSchema,
    transaction_id: z.string().optional(),
    payment_error: z.string().optional(),
    first_attempt_date: instant.optional(),
    completed_date: instant.optional(),
    last_run_date: instant,
    created_date: instant,
    process: processSchema,
    updated_event: updatedEventSchema.optional(),
    term: termSchema,
    account_last_four: z.string().optional(),
    tier: z.string().min(1),
    payment_method: paymentMethodSchema,
    friday_billing: fridayBillingSchema.optional(),
    /*
     * Membership intent (DESIGN 2.9): what the member asked for. Only membership events and an
     * operator action that says so change these (see intent.ts); every other writer carries them
     * forward and a successor period inherits them.
     */
    /** Day of month the plan bills on (keeps Jan 31 → Feb 28 → Mar 31); a due-date change moves it. */
    billing_anchor_day: z.number().int().min(1).max(31).optional(),
    /** Calendar months of pause still to skip, this period included; non-zero only while PAUSED. */
    paused_months: z.number().int().nonnegative().optional(),
    /** When the member asked to cancel: this period is cancelled at its billing date, never collected, and has no successor. */
    cancel_requested_at: instant.optional(),
    /** Membership events applied to this chain (most recent last, bounded): a replay of any of them is a no-op. */
    membership_event_ids: z.array(z.string().min(1)).max(64).optional(),
    /**
     * The chain link (docs/decisions.md): where this period's successor is when a due-date change
     * moved it off the calendar date. The successor rule follows it, so a later attempt of this
     * period finds its next period instead of opening a second one at the old date.
     */
    successor_billing_date: instant.optional(),
    /**
     * The chain this period belongs to (chain.ts): the subscription_id of the chain's first period,
     * set when the chain opens and inherited by every successor; no writer's `set` can name it.
     * Absent on items written before it existed (legacy chains keep the old rules).
     */
    chain_id: z.string().min(1).optional(),
    payment_attempts: z.number().int().nonnegative(),
    last_attempt_date: instant.optional(),
    version: z.number().int().nonnegative(),
    /** Legacy form of `membership_event_ids` (one id); read once by `upgradeLegacyIntent` (the billing store decode), never written. */
    membership_event_id: z.string().optional(),
    /** `occurred_at` of the newest membership event applied: an older one for this user is not applied again. */
    membership_event_at: instant.optional(),
    /** Idempotency-Key of the last person-initiated payment request (manual pay); a repeat is answered, not re-run. */
    last_request_key: z.string().optional(),
    /** ACH re-presentments after R01/R09 returns, and when the original entry was made (DESIGN 4). */
    ach_represented: z.number().int().nonnegative().optional(),
    ach_original_entry_date: instant.optional(),
    /** NACHA code of the last ACH return of this period: tells an account-error block from the re-presentment limit. */
    ach_return_code: z.string().optional(),
    /** Set by an account-error return (R02, R03, R04, ...) or the re-presentment limit: no further ACH debits for this record. */
    ach_blocked: z.boolean().optional(),
    /** Set by an unauthorized return (R05, R07, R10, R11, R29): never retried automatically. */
    ach_unauthorized: z.boolean().optional(),
    /** Set by a card dispute (charge.dispute.created): never charged again automatically. */
    card_disputed: z.boolean().optional(),
    /** An ACH outcome that did not match (DESIGN 4.1); listed by `?billing=exceptions`. */
    ach_exception: achExceptionSchema.optional(),
    /** A Stripe outcome that did not match (DESIGN 6.1); listed by `?billing=exceptions`. */
    card_exception: cardExceptionSchema.optional(),
    /*
     * Dunning (DESIGN 5b, dunning.ts): the most recent decline's code and class, and the schedule of
     * this period's automatic attempts. Absent when the period was never declined (or was reset).
     */
    decline_code: z.string().min(1).optional(),
    decline_class: declineClassSchema.optional(),
    /** First decline of the current cycle: the schedule's day 0. */
    dunning_first_declined_at: instant.optional(),
    /** Attempts of the current cycle (slots spent), the first decline included. */
    dunning_attempts: z.number().int().nonnegative().optional(),
    /** The next automatic attempt; absent in a cycle = exhausted. */
    dunning_next_attempt_at: instant.optional(),
    /** Merchant-initiated presentments of this card for this period in the last 30 days (the networks' ceilings). */
    dunning_presented_at: z.array(instant).max(64).optional(),
    card_network: cardNetworkSchema.optional(),
  })
  .extend(billingFailureFieldsSchema.shape));
export type BillingRecord = z.infer<typeof billingRecordSchema>;

/** Decision context captured on the history row of a payment submission (DESIGN 2.5). */
export const decisionContextSchema = lazySchema(() => z.object({
  data_payment_method: paymentMethodSchema.optional(),
  data_institution_id: z.string().optional(),
  data_available_balance_cents: z.number().int().optional(),
  data_current_balance_cents: z.number().int().optional(),
  data_calc_available_balance_cents: z.number().int().optional(),
  data_balance_source: z.enum(['available', 'current', 'calc_available']).optional(),
  data_threshold_cents: z.number().int().optional(),
  data_debit_card_valid: z.boolean().optional(),
  data_blocklisted: z.boolean().optional(),
  data_ml_override: z.boolean().optional(),
  data_institution_unreliable: z.boolean().optional(),
}));
export type DecisionContext = z.infer<typeof decisionContextSchema>;

/** Who did what and why, on rows written by an operator or user action (DESIGN 8). */
export const auditFieldsSchema = lazySchema(() => z.object({
  actor: z.string().optional(),
  reason: z.string().optional(),
  /** The bulk retry run (POST /v1/billing/retry-runs) the action belongs to. */
  run_id: z.string().optional(),
}));

/**
 * An append-only audit row: the record as written, plus decision context and audit fields, and
 * the event that made this after-image (absent on the row of a new period). Like `data_*`, `actor`
 * and `reason`, `billing_event` is never on the primary item.
 */
export const historyRowSchema = lazySchema(() => billingRecordSchema
  .extend(decisionContextSchema.shape)
  .extend(auditFieldsSchema.shape)
  .extend({ billing_event: billingEventSchema.optional() }));
export type HistoryRow = z.infer<typeof historyRowSchema>;

export interface BillingKey {
  readonly user_id: string;
  readonly billing_date: string;
}

export function keyOf(record: BillingKey): BillingKey {
  return { user_id: record.user_id, billing_date: record.billing_date };
}

/** Statuses a collection attempt may present a payment for. */
export const COLLECTIBLE_STATUSES: ReadonlySet<BillingStatus> = new Set(['PENDING', 'FAILED']);
export const TERMINAL_STATUSES: ReadonlySet<BillingStatus> = new Set([
  'COMPLETED',
  'WAIVED',
  'CANCELLED',
  'SKIPPED',
  'REFUNDED',
]);

const PAST_DUE_MS = 30 * 24 * 60 * 60 * 1000;

/** PASTDUE on read for PENDING/FAILED records more than 30 days past billing_date (DESIGN 2.2). */
export function displayStatus(record: Pick<BillingRecord, 'billing_status' | 'billing_date'>, now: Date): DisplayStatus {
  if (COLLECTIBLE_STATUSES.has(record.billing_status) && now.getTime() - Date.parse(record.billing_date) > PAST_DUE_MS) {
    return 'PASTDUE';
  }
  return record.billing_status;
}

/** What the gate knows about a user at decision time (the AccountSnapshot port type, validated). */
export const accountSnapshotSchema = lazySchema(() => z.object({
  status: z.enum(['active', 'inactive', 'banned', 'closed']),
  institution_id: z.string().optional(),
  available_balance_cents: z.number().int().optional(),
  current_balance_cents: z.number().int().optional(),
  debit_card_valid: z.boolean().optional(),
  blocklisted: z.boolean().optional(),
  institution_unreliable: z.boolean().optional(),
  ml_override: z.boolean().optional(),
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

export const loanPaymentSchema = lazySchema(() => z.object({
  loc_user_id: z.string().min(1),
  loc_loan_id: z.string().min(1),
  loc_payment_id: z.string().min(1),
  loc_amount: centsSchema,
  loc_status: loanPaymentStatusSchema,
  loc_payment_method: z.enum(['ach', 'pinless']),
  loc_process: loanPaymentProcessSchema,
  loc_confirmation_id: z.string().optional(),
  loc_account_last_four: z.string().optional(),
  loc_intended_installment_id: z.string().optional(),
  loc_payment_attempts: z.number().int().nonnegative(),
  loc_applications: z.array(loanPaymentApplicationSchema).optional(),
  loc_update_reason: z.string().optional(),
  loc_created_date: instant,
  loc_last_updated: instant,
  /** RETRY only: when the next automatic attempt is due (DESIGN 2.7); GSI2 orders RETRY payments by it. */
  loc_next_attempt_at: instant.optional(),
  /** The first decline of this payment: the retry waits of DESIGN 5b count from it. */
  loc_first_declined_at: instant.optional(),
  /** The last decline's processor code and its dunning class (DESIGN 5b). */
  loc_decline_code: z.string().optional(),
  loc_decline_class: declineClassSchema.optional(),
  /** The NACHA code of the last ACH return of this payment (DESIGN 4, 3.1 holds). */
  loc_return_code: z.string().optional(),
  /** Counted processor errors (not declines) of the automatic retries: each moves the next attempt by the 5b wait. */
  loc_error_count: z.number().int().nonnegative().optional(),
  /** Optimistic-concurrency counter, as on billing records. */
  version: z.number().int().nonnegative(),
}));
export type LoanPayment = z.infer<typeof loanPaymentSchema>;

/**
 * One audit row of a loan payment (DESIGN 2.7): the payment as a change left it, who made the change
 * (`actor`: the JWT `sub`, or `system:<function>`) and why (`reason`; `loc_update_reason` is the
 * payment's own). Written in the same transaction as the change, never overwritten.
 */
export const loanPaymentHistoryRowSchema = lazySchema(() => loanPaymentSchema.extend({
  actor: z.string().min(1),
  reason: z.string().optional(),
  recorded_at: instant,
}));
export type LoanPaymentHistoryRow = z.infer<typeof loanPaymentHistoryRowSchema>;

/* ---------------- stripe-events (DESIGN 2.8) ---------------- */

export const stripeEventClaimSchema = lazySchema(() => z.object({
  event_id: z.string().min(1),
  status: z.enum(['processing', 'processed']),
  event_type: z.string().optional(),
  updated_at: z.number().int(),
  expires_at: z.number().int(),
  lease_expires_at: z.number().int().optional(),
  claim_token: z.string().optional(),
}));
export type StripeEventClaim = z.infer<typeof stripeEventClaimSchema>;
