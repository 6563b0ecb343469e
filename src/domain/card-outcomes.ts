import { applyBillingEvent, historyRowOf, successorRecord, type IdGenerator } from './billing-record.js';
import { dunningAfterDecline } from './dunning.js';
import { classifyDecline, type DeclineDetails } from './declines.js';
import { cardDisputeHoldWrite, cardDisputeReleaseWrite } from './instruments/card-holds.js';
import type { InstrumentWrite, StripeCard } from './instruments/instrument.js';
import { heldNoteOf } from './instruments/returns.js';
import type { BillingTransaction } from './ports/billing-ledger.js';
import type { BillingStore } from './ports/billing-store.js';
import type { Clock } from './ports/clock.js';
import type { BillingRecord, Term } from './records.js';
import { UNBOOKABLE_STATUSES } from './statuses.js';
import { formatInstant } from './time.js';
import { billingTransitions } from './transitions.js';

/** Card payment outcomes from Stripe webhooks (DESIGN 6): replay-safe decisions over billing records. */

/** The metadata the card processor puts on every PaymentIntent. */
export interface CardPaymentReference {
  readonly user_id: string;
  readonly billing_date: string;
  readonly subscription_id: string;
}

/** A Stripe customer's default card as Stripe has it now, and the user its metadata names. */
export interface CustomerCard {
  readonly user_id?: string | undefined;
  readonly card: StripeCard;
}

/** What the card processor's webhooks read back from Stripe. */
export interface CardPaymentDirectory {
  /** The reference of a PaymentIntent whose event does not carry it (a dispute names only the ids). */
  findReference(paymentIntentId: string): Promise<CardPaymentReference | undefined>;
  /** The customer's default card now (DESIGN 3.2); undefined for a customer Stripe does not have. */
  cardOfCustomer(customerId: string): Promise<CustomerCard | undefined>;
}

export interface CardOutcomePorts {
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly billing: BillingStore;
}

export type CardIgnoreReason =
  | 'not_found'
  | 'subscription_mismatch'
  | 'transaction_mismatch'
  | 'already_applied'
  /** The record has moved past what the event could change (a late failure after a success). */
  | 'status'
  | 'partial_refund'
  /** A dispute closed in the cardholder's favour: the money stays withdrawn and the hold stays. */
  | 'dispute_lost'
  /** A checkout for a user whose billing chain is open: one chain per user (DESIGN 2.9). */
  | 'already_member';

export type CardResult =
  | { readonly kind: 'applied'; readonly record: BillingRecord; readonly exception?: CardExceptionCode }
  | { readonly kind: 'ignored'; readonly reason: CardIgnoreReason; readonly record?: BillingRecord };

export const DISPUTED_PAYMENT_ERROR = 'The cardholder disputed the payment with their bank.';

export interface CheckoutCompleted {
  readonly user_id: string;
  readonly amount_cents: number;
  readonly tier: string;
  readonly term: Term;
  readonly first_billing_date: string;
  readonly friday_billing?: number | undefined;
}

export interface PaymentIntentOutcome {
  readonly payment_intent_id: string;
  readonly reference: CardPaymentReference;
  readonly amount_cents?: number | undefined;
}

/** Every period is billed in US dollars. */
export const PERIOD_CURRENCY = 'usd';

export interface PaymentIntentSuccess extends PaymentIntentOutcome {
  /** Stripe's `amount_received` (falls back to `amount`). */
  readonly received_cents: number;
  readonly currency: string;
}

export interface DisputeCreated extends PaymentIntentOutcome {
  readonly dispute_id: string;
  readonly status: string;
}

/** Stripe: inquiries (`warning_needs_response`, `warning_under_review`, `warning_closed`) withdraw no funds. */
export function isDisputeInquiry(status: string): boolean {
  return status.startsWith('warning_');
}

export interface PaymentIntentFailure extends PaymentIntentOutcome {
  /** Curated, customer-safe sentence (the adapter maps Stripe's codes). */
  readonly message: string;
  readonly decline: DeclineDetails;
}

export type CardDecision =
  | {
      readonly kind: 'apply';
      readonly tx: BillingTransaction;
      readonly after: BillingRecord;
      readonly exception?: CardExceptionCode;
      /** Records a submission in place of its attempt: only while no attempt holds the lock (one decline, one slot). */
      readonly records_submission?: true;
    }
  | { readonly kind: 'ignore'; readonly reason: CardIgnoreReason }
  /** A replay if the history ever recorded `transaction` (an older one), else `otherwise`; the use case asks it. */
  | { readonly kind: 'unless_recorded'; readonly transaction: string; readonly otherwise: CardDecision };

export type CardExceptionCode = NonNullable<BillingRecord['card_exception']>['code'];

/** Repairs a crash between the charge and the attempt's write; the consumed attempt number counts, so the next key is fresh. */
export function decidePaymentSucceeded(record: BillingRecord, input: PaymentIntentSuccess, now: Date, ids: IdGenerator): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  // Money taken for a period written off is never dropped: it is flagged for refund.
  if (UNBOOKABLE_STATUSES.has(record.billing_status) && record.transaction_id !== input.payment_intent_id) {
    const seen = record.card_exception;
    if (seen?.code === 'unowed_payment' && seen.payment_intent_id === input.payment_intent_id) return { kind: 'ignore', reason: 'already_applied' };
    return { kind: 'unless_recorded', transaction: input.payment_intent_id, otherwise: unowedPayment(record, input, now) };
  }
  const mismatch = input.currency !== PERIOD_CURRENCY ? 'currency_mismatch' : input.received_cents !== record.amount_cents ? 'amount_mismatch' : undefined;
  if (mismatch) return paymentMismatch(record, input, mismatch, now);
  if (record.billing_status === 'COMPLETED' || record.billing_status === 'REFUNDED') {
    // Another PaymentIntent completed this period: a second charge, for an operator to refund.
    return { kind: 'ignore', reason: record.transaction_id === input.payment_intent_id ? 'already_applied' : 'transaction_mismatch' };
  }
  if (record.billing_status !== 'PENDING' && record.billing_status !== 'FAILED') return { kind: 'ignore', reason: 'status' };
  // A late delivery must not undo a dispute of this very payment.
  if (record.card_disputed === true && record.transaction_id === input.payment_intent_id) return { kind: 'ignore', reason: 'already_applied' };
  const at = formatInstant(now);
  const after = applyBillingEvent(record, 'COLLECTED', now, {
    set: {
      transaction_id: input.payment_intent_id,
      payment_error: '',
      payment_attempts: record.transaction_id === input.payment_intent_id ? record.payment_attempts : record.payment_attempts + 1,
      last_attempt_date: at,
      first_attempt_date: record.first_attempt_date ?? at,
    },
  });
  return { kind: 'apply', after, tx: withNextPeriod(record, after, now, ids), ...recordsSubmission(record, input) };
}

/** The card was charged for a written-off period: flagged `unowed_payment` for refund, status kept. */
function unowedPayment(record: BillingRecord, input: PaymentIntentSuccess, now: Date): CardDecision {
  const after = applyBillingEvent(record, 'EXCEPTION_RAISED', now, {
    set: {
      card_exception: { code: 'unowed_payment', payment_intent_id: input.payment_intent_id, received_cents: input.received_cents, currency: input.currency, at: formatInstant(now) },
    },
  });
  return { kind: 'apply', after, tx: update(record, after), exception: 'unowed_payment' };
}

/** A success for another amount or currency is an exception for operators, never a completion (DESIGN 6.1). */
function paymentMismatch(record: BillingRecord, input: PaymentIntentSuccess, code: 'amount_mismatch' | 'currency_mismatch', now: Date): CardDecision {
  const seen = record.card_exception;
  if (seen?.payment_intent_id === input.payment_intent_id && seen.code === code) return { kind: 'ignore', reason: 'already_applied' };
  if ((record.billing_status === 'COMPLETED' || record.billing_status === 'REFUNDED') && record.transaction_id !== input.payment_intent_id) {
    return { kind: 'ignore', reason: 'transaction_mismatch' };
  }
  if (!billingTransitions.allows(record.billing_status, 'EXCEPTION_RAISED')) return { kind: 'ignore', reason: 'status' };
  const after = applyBillingEvent(record, 'EXCEPTION_RAISED', now, {
    set: {
      card_exception: {
        code,
        payment_intent_id: input.payment_intent_id,
        received_cents: input.received_cents,
        currency: input.currency,
        at: formatInstant(now),
      },
    },
  });
  return { kind: 'apply', after, tx: update(record, after), exception: code };
}

/** One decline, one slot: recorded only when the period does not show it, as its next attempt number's decline. */
export function decidePaymentFailed(record: BillingRecord, input: PaymentIntentFailure, now: Date, ids: IdGenerator): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.transaction_id === input.payment_intent_id) return { kind: 'ignore', reason: 'already_applied' };
  if (record.billing_status !== 'PENDING' && record.billing_status !== 'FAILED') return { kind: 'ignore', reason: 'status' };
  const decline = unrecordedDecline(record, input, now, ids);
  if (record.payment_attempts === 0) return decline;
  return { kind: 'unless_recorded', transaction: input.payment_intent_id, otherwise: decline };
}

/** The decline of the period's next attempt number, as the attempt would have written it. */
function unrecordedDecline(record: BillingRecord, input: PaymentIntentFailure, now: Date, ids: IdGenerator): CardDecision {
  const at = formatInstant(now);
  // Who started it is unknown here: counted as merchant-initiated, so no ceiling or budget is overrun.
  const dunning = dunningAfterDecline(record, { classification: classifyDecline(input.decline), card_network: input.decline.card_network, process: 'UNKNOWN', presented: true }, now);
  const after = applyBillingEvent(record, 'DECLINED', now, {
    set: {
      ...dunning,
      transaction_id: input.payment_intent_id,
      payment_error: input.message,
      payment_attempts: record.payment_attempts + 1,
      last_attempt_date: at,
      first_attempt_date: record.first_attempt_date ?? at,
    },
  });
  return { kind: 'apply', after, tx: withNextPeriod(record, after, now, ids), records_submission: true };
}

function recordsSubmission(record: BillingRecord, input: PaymentIntentOutcome): { records_submission?: true } {
  return record.transaction_id === input.payment_intent_id ? {} : { records_submission: true };
}

export interface ChargeRefunded extends PaymentIntentOutcome {
  readonly fully_refunded: boolean;
}

/** A partial refund changes nothing. */
export function decideChargeRefunded(record: BillingRecord, input: ChargeRefunded, now: Date): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.transaction_id !== input.payment_intent_id) return { kind: 'ignore', reason: 'transaction_mismatch' };
  if (record.billing_status === 'REFUNDED') return { kind: 'ignore', reason: 'already_applied' };
  if (record.billing_status !== 'COMPLETED') return { kind: 'ignore', reason: 'status' };
  if (!input.fully_refunded) return { kind: 'ignore', reason: 'partial_refund' };
  const after = applyBillingEvent(record, 'REFUNDED', now, { updatedEvent: 'REFUNDED' });
  return { kind: 'apply', after, tx: update(record, after) };
}

/** The money is withdrawn. updated_event goes: there is no card-dispute tag, and ACH_CHARGEBACK would claim an ACH return. */
export function decideDisputeCreated(record: BillingRecord, input: DisputeCreated, now: Date): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.transaction_id !== input.payment_intent_id) return { kind: 'ignore', reason: 'transaction_mismatch' };
  if (isDisputeInquiry(input.status)) return disputeInquiry(record, input, now);
  if (record.billing_status === 'FAILED' && record.card_disputed === true) return { kind: 'ignore', reason: 'already_applied' };
  if (record.billing_status !== 'COMPLETED') return { kind: 'ignore', reason: 'status' };
  const after = applyBillingEvent(record, 'CHARGED_BACK', now, {
    set: { payment_error: DISPUTED_PAYMENT_ERROR, card_disputed: true, updated_event: undefined },
  });
  delete after.updated_event;
  const hold = cardDisputeHoldWrite(record.user_id, record.instrument_id, { ...input, reference: `subscription:${record.subscription_id}` }, after.last_run_date);
  return { kind: 'apply', after, tx: update(record, after, hold) };
}

export interface DisputeClosed extends PaymentIntentOutcome {
  readonly dispute_id: string;
  /** `won`, or `charge.dispute.funds_reinstated`: the money came back to us. */
  readonly won: boolean;
}

/** A dispute won returns the money: the period is collected again and its dispute hold lifted; a lost one changes nothing. */
export function decideDisputeClosed(record: BillingRecord, input: DisputeClosed, now: Date): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.transaction_id !== input.payment_intent_id) return { kind: 'ignore', reason: 'transaction_mismatch' };
  if (!input.won) return { kind: 'ignore', reason: 'dispute_lost' };
  if (record.card_disputed !== true) return { kind: 'ignore', reason: record.billing_status === 'COMPLETED' ? 'already_applied' : 'status' };
  if (!billingTransitions.allows(record.billing_status, 'DISPUTE_WON')) return { kind: 'ignore', reason: 'status' };
  const after = applyBillingEvent(record, 'DISPUTE_WON', now, { set: { payment_error: '', card_disputed: undefined } });
  return { kind: 'apply', after, tx: update(record, after, cardDisputeReleaseWrite(record.user_id, record.instrument_id)) };
}

/** An inquiry withdraws no funds: the period is flagged for operators, not failed (DESIGN 6.1). */
function disputeInquiry(record: BillingRecord, input: DisputeCreated, now: Date): CardDecision {
  if (record.card_exception?.code === 'dispute_inquiry' && record.card_exception.dispute_id === input.dispute_id) return { kind: 'ignore', reason: 'already_applied' };
  if (record.billing_status !== 'COMPLETED') return { kind: 'ignore', reason: 'status' };
  const after = applyBillingEvent(record, 'EXCEPTION_RAISED', now, {
    set: {
      card_exception: {
        code: 'dispute_inquiry',
        payment_intent_id: input.payment_intent_id,
        dispute_id: input.dispute_id,
        dispute_status: input.status,
        at: formatInstant(now),
      },
    },
  });
  return { kind: 'apply', after, tx: update(record, after), exception: 'dispute_inquiry' };
}

/** The period's write, and in the same transaction what it sets or lifts on the card (its audit row names a hold set). */
function update(read: BillingRecord, after: BillingRecord, instruments?: InstrumentWrite): BillingTransaction {
  return { writes: [{ kind: 'update', read, record: after }], history: [historyRowOf(after, heldNoteOf(instruments))], ...(instruments ? { instruments } : {}) };
}

/** As the attempt does: the period that just left PENDING opens the next one, unless it exists. */
function withNextPeriod(read: BillingRecord, after: BillingRecord, now: Date, ids: IdGenerator): BillingTransaction {
  if (read.billing_status !== 'PENDING') return update(read, after);
  const next = successorRecord(after, now, ids, after.last_run_date);
  return next ? { ...update(read, after), createIfAbsent: { record: next, history: historyRowOf(next) } } : update(read, after);
}

