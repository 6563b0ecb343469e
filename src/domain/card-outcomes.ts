import { applyBillingEvent, historyRowOf, successorRecord, type IdGenerator } from './billing-record.js';
import type { BillingStore, BillingTransaction, Clock } from './ports.js';
import type { BillingRecord, Term } from './records.js';
import { formatInstant } from './time.js';

/**
 * Card payment outcomes from Stripe webhooks (DESIGN 6), applied to billing records. Inputs are
 * plain values the webhook validated; every function is replay-safe (a second delivery finds the
 * record already moved and writes nothing) and writes conditional on the version it read.
 */

/** Where a PaymentIntent's record lives: the metadata the card processor puts on every PaymentIntent. */
export interface CardPaymentReference {
  readonly user_id: string;
  readonly billing_date: string;
  readonly subscription_id: string;
}

/**
 * Finds the reference of a PaymentIntent whose event does not carry it (a dispute carries only the
 * charge and PaymentIntent ids). Implemented over the Stripe API in src/adapters/stripe.
 */
export interface CardPaymentDirectory {
  findReference(paymentIntentId: string): Promise<CardPaymentReference | undefined>;
}

export interface CardOutcomePorts {
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly billing: BillingStore;
}

export type CardIgnoreReason =
  | 'not_found'
  /** The record at the reference's key is another subscription period than the PaymentIntent's. */
  | 'subscription_mismatch'
  /** The record's transaction is another PaymentIntent. */
  | 'transaction_mismatch'
  | 'already_applied'
  /** The record has moved past what the event could change (a late failure after a success). */
  | 'status'
  | 'partial_refund'
  /** A checkout for a user whose billing chain is open: one chain per user (DESIGN 2.9). */
  | 'already_member';

export type CardResult =
  | { readonly kind: 'applied'; readonly record: BillingRecord }
  | { readonly kind: 'ignored'; readonly reason: CardIgnoreReason; readonly record?: BillingRecord };

export const DISPUTED_PAYMENT_ERROR = 'The cardholder disputed the payment with their bank.';

/* ---------------- checkout.session.completed ---------------- */

export interface CheckoutCompleted {
  readonly user_id: string;
  readonly amount_cents: number;
  readonly tier: string;
  readonly term: Term;
  /** Normalised RFC3339. */
  readonly first_billing_date: string;
  readonly friday_billing?: number | undefined;
}

/* ---------------- PaymentIntent and charge outcomes ---------------- */

export interface PaymentIntentOutcome {
  readonly payment_intent_id: string;
  readonly reference: CardPaymentReference;
  readonly amount_cents?: number | undefined;
}

export interface PaymentIntentFailure extends PaymentIntentOutcome {
  /** Curated, customer-safe sentence (the adapter maps Stripe's codes). */
  readonly message: string;
}

export type CardDecision = { readonly kind: 'apply'; readonly tx: BillingTransaction; readonly after: BillingRecord } | { readonly kind: 'ignore'; readonly reason: CardIgnoreReason };

/**
 * payment_intent.succeeded: a PENDING or FAILED record still waiting for this period's payment is
 * COMPLETED with the PaymentIntent as its transaction. This repairs a crash between the charge and
 * the attempt's write; the consumed attempt number is counted so the next key is a fresh one.
 */
export function decidePaymentSucceeded(record: BillingRecord, input: PaymentIntentOutcome, now: Date, ids: IdGenerator): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.billing_status === 'COMPLETED' || record.billing_status === 'REFUNDED') {
    // Another PaymentIntent completed this period: a second charge (an operator must refund it).
    return { kind: 'ignore', reason: record.transaction_id === input.payment_intent_id ? 'already_applied' : 'transaction_mismatch' };
  }
  if (record.billing_status !== 'PENDING' && record.billing_status !== 'FAILED') return { kind: 'ignore', reason: 'status' };
  // This payment's success was recorded and then disputed: a late or repeated delivery must not undo the dispute.
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
  return { kind: 'apply', after, tx: withNextPeriod(record, after, now, ids) };
}

/**
 * payment_intent.payment_failed: a PENDING record whose attempt crashed before its write becomes
 * FAILED with the curated decline. A FAILED record already shows a failure (the attempt writes its
 * own declines); anything further along is not set back.
 */
export function decidePaymentFailed(record: BillingRecord, input: PaymentIntentFailure, now: Date, ids: IdGenerator): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.billing_status === 'FAILED') {
    return { kind: 'ignore', reason: record.transaction_id === input.payment_intent_id ? 'already_applied' : 'status' };
  }
  if (record.billing_status !== 'PENDING') return { kind: 'ignore', reason: 'status' };
  const at = formatInstant(now);
  const after = applyBillingEvent(record, 'DECLINED', now, {
    set: {
      transaction_id: input.payment_intent_id,
      payment_error: input.message,
      payment_attempts: record.payment_attempts + 1,
      last_attempt_date: at,
      first_attempt_date: record.first_attempt_date ?? at,
    },
  });
  return { kind: 'apply', after, tx: withNextPeriod(record, after, now, ids) };
}

export interface ChargeRefunded extends PaymentIntentOutcome {
  /** Stripe's `refunded`: the whole amount was refunded. */
  readonly fully_refunded: boolean;
}

/** charge.refunded: COMPLETED → REFUNDED when the whole charge was refunded; a partial refund changes nothing. */
export function decideChargeRefunded(record: BillingRecord, input: ChargeRefunded, now: Date): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.transaction_id !== input.payment_intent_id) return { kind: 'ignore', reason: 'transaction_mismatch' };
  if (record.billing_status === 'REFUNDED') return { kind: 'ignore', reason: 'already_applied' };
  if (record.billing_status !== 'COMPLETED') return { kind: 'ignore', reason: 'status' };
  if (!input.fully_refunded) return { kind: 'ignore', reason: 'partial_refund' };
  const after = applyBillingEvent(record, 'REFUNDED', now, { updatedEvent: 'REFUNDED' });
  return { kind: 'apply', after, tx: update(record, after) };
}

/**
 * charge.dispute.created: the money is withdrawn, so COMPLETED → FAILED (the transition table's
 * CHARGED_BACK). updated_event is removed: 2.4 has no card-dispute tag and ACH_CHARGEBACK would
 * claim an ACH return. `card_disputed` keeps every automatic path from charging the card again.
 */
export function decideDisputeCreated(record: BillingRecord, input: PaymentIntentOutcome, now: Date): CardDecision {
  if (record.subscription_id !== input.reference.subscription_id) return { kind: 'ignore', reason: 'subscription_mismatch' };
  if (record.transaction_id !== input.payment_intent_id) return { kind: 'ignore', reason: 'transaction_mismatch' };
  if (record.billing_status === 'FAILED' && record.card_disputed === true) return { kind: 'ignore', reason: 'already_applied' };
  if (record.billing_status !== 'COMPLETED') return { kind: 'ignore', reason: 'status' };
  const after = applyBillingEvent(record, 'CHARGED_BACK', now, {
    set: { payment_error: DISPUTED_PAYMENT_ERROR, card_disputed: true, updated_event: undefined },
  });
  delete after.updated_event;
  return { kind: 'apply', after, tx: update(record, after) };
}

function update(read: BillingRecord, after: BillingRecord): BillingTransaction {
  return { writes: [{ kind: 'update', record: after, expectedVersion: read.version }], history: [historyRowOf(after)] };
}

/** As the attempt does: the period that just left PENDING opens the next one, unless it exists. */
function withNextPeriod(read: BillingRecord, after: BillingRecord, now: Date, ids: IdGenerator): BillingTransaction {
  if (read.billing_status !== 'PENDING') return update(read, after);
  const next = successorRecord(after, now, ids, after.last_run_date);
  return next ? { ...update(read, after), createIfAbsent: { record: next, history: historyRowOf(next) } } : update(read, after);
}

