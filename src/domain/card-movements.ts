import type { CardDecision, ChargeRefunded, DisputeClosed, DisputeCreated, PaymentIntentSuccess } from './card-outcomes.js';
import { isDisputeInquiry } from './card-outcomes.js';
import { cardMovement, subscriptionRecordKey, type MoneyMovement } from './money-movements.js';
import type { BillingRecord } from './records.js';

/** Which money a Stripe event reports (DESIGN 14), given the record and what was decided about it. */
export type CardMovementOf = (record: BillingRecord, decision: CardDecision) => MoneyMovement | undefined;

/** The Stripe event a movement comes from: its id and the instant Stripe created it. */
export interface StripeEventStamp {
  readonly event_id: string;
  readonly occurred_at: Date;
}

/** A success the period takes (a lost submission, an unowed payment, another amount) is a debit; replays and a second PaymentIntent are not ours. */
export function paymentSucceededMovement(stamp: StripeEventStamp, input: PaymentIntentSuccess): CardMovementOf {
  return (record, decision) => {
    if (decision.kind !== 'apply') return undefined;
    const known = decision.exception === 'amount_mismatch' || decision.exception === 'unowed_payment' ? decision.exception : undefined;
    return cardMovement({
      ...stamp,
      kind: 'debit',
      payment_intent_id: input.payment_intent_id,
      amount_cents: input.received_cents,
      user_id: record.user_id,
      record_key: subscriptionRecordKey(record),
      ...(known ? { known_exception: known } : {}),
    });
  };
}

/**
 * Any refund of the period's own payment moved money, the period refunded or not (partial, waived,
 * cancelled). Stripe reports the refunded total: the row carries it, one row per total.
 */
export function chargeRefundedMovement(stamp: StripeEventStamp, input: ChargeRefunded & { readonly refunded_cents: number }): CardMovementOf {
  return (record, decision) => {
    // A refund of another PaymentIntent of the period (an unowed payment on a written-off period) moved money too.
    if (decision.kind === 'ignore' && (decision.reason === 'already_applied' || decision.reason === 'subscription_mismatch')) return undefined;
    return {
      ...cardMovement({ ...stamp, kind: 'refund', payment_intent_id: input.payment_intent_id, amount_cents: input.refunded_cents, user_id: record.user_id, record_key: subscriptionRecordKey(record) }),
      movement_id: `stripe-refund:${input.payment_intent_id}:${input.refunded_cents}`,
      cumulative: true,
    };
  };
}

/** A dispute with funds withdrawn is a chargeback, whatever the period's status; an inquiry moves nothing. */
export function disputeCreatedMovement(stamp: StripeEventStamp, input: DisputeCreated): CardMovementOf {
  return (record, decision) => {
    if (isDisputeInquiry(input.status)) return undefined;
    if (decision.kind === 'ignore' && decision.reason !== 'status' && decision.reason !== 'transaction_mismatch') return undefined;
    return {
      ...cardMovement({ ...stamp, kind: 'chargeback', payment_intent_id: input.payment_intent_id, amount_cents: input.amount_cents ?? record.amount_cents, user_id: record.user_id, record_key: subscriptionRecordKey(record) }),
      movement_id: `stripe-dispute:${input.dispute_id}`,
    };
  };
}

/**
 * A dispute won gives the money back: the row of the first event that lifts it (closed `won` or
 * funds reinstated), or of one the period could not take; a later one for the same dispute writes none.
 */
export function disputeClosedMovement(stamp: StripeEventStamp, input: DisputeClosed): CardMovementOf {
  return (record, decision) => {
    if (!input.won) return undefined;
    if (decision.kind === 'ignore' && decision.reason !== 'status' && decision.reason !== 'transaction_mismatch') return undefined;
    return {
      ...cardMovement({ ...stamp, kind: 'dispute_reinstated', payment_intent_id: input.payment_intent_id, amount_cents: input.amount_cents ?? record.amount_cents, user_id: record.user_id, record_key: subscriptionRecordKey(record) }),
      movement_id: `stripe-dispute-won:${input.dispute_id}`,
    };
  };
}
