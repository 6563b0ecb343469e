import type { AchEvent } from './ach-outcomes.js';
import type { LoanPayment } from './loan-payments.js';
import type { PaymentReference } from './ports/processor.js';
import type { BillingRecord, PaymentMethod } from './records.js';
import { formatInstant, normalizeInstant, type Instant } from './time.js';

/**
 * Our side of reconciliation (DESIGN 14): one append-only row per processor interaction that moves
 * money or reports a movement, written in the transaction of its effect.
 */

export const MOVEMENT_KINDS = ['debit', 'settlement', 'return', 'refund', 'chargeback', 'dispute_reinstated'] as const;
export type MovementKind = (typeof MOVEMENT_KINDS)[number];

/** A 4.1/6.1 exception the record already carries for this money: reconciliation knows it, it is not new. */
export type KnownException = 'amount_mismatch' | 'unowed_payment';

export interface MoneyMovement {
  /** Stable: the same interaction written twice is one row. */
  readonly movement_id: string;
  readonly rail: PaymentMethod;
  readonly kind: MovementKind;
  /** The processor's id of the money itself: the debit's for a debit; absent when the outcome does not name its own. */
  readonly transaction_id?: string;
  /** The debit a settlement, return, refund or chargeback belongs to. */
  readonly original_transaction_id?: string;
  /** Positive cents; the kind says which way the money went. */
  readonly amount_cents: number;
  /** The UTC instant the money moved: its day is the row's reconciliation day. */
  readonly occurred_at: Instant;
  readonly user_id: string;
  /** The record it belongs to: `sub#{subscription_id}` or `loan#{loan_id}#{payment_id}`. */
  readonly record_key: string;
  /** The presentment's idempotency key (a debit only). */
  readonly idempotency_key?: string;
  readonly return_code?: string;
  readonly known_exception?: KnownException;
  /** The amount is a running total the processor reported (a card's refunded total): the largest row counts. */
  readonly cumulative?: boolean;
  /** What wrote it: `attempt`, `ach:<event id>`, `stripe:<event id>`. */
  readonly source: string;
}

/** The UTC day (`YYYY-MM-DD`) a movement is reconciled on. */
export function movementDay(occurredAt: Instant): string {
  return normalizeInstant(occurredAt).slice(0, 10);
}

/** Money into our account is +, out is −; a settlement confirms a debit's money and moves none of its own. */
export function signedAmount(movement: Pick<MoneyMovement, 'kind' | 'amount_cents'>): number {
  if (movement.kind === 'settlement') return 0;
  return movement.kind === 'return' || movement.kind === 'refund' || movement.kind === 'chargeback' ? -movement.amount_cents : movement.amount_cents;
}

export function subscriptionRecordKey(record: Pick<BillingRecord, 'subscription_id'>): string {
  return `sub#${record.subscription_id}`;
}

export function loanRecordKey(payment: Pick<LoanPayment, 'loc_loan_id' | 'loc_payment_id'>): string {
  return `loan#${payment.loc_loan_id}#${payment.loc_payment_id}`;
}

export function referenceRecordKey(reference: PaymentReference): string {
  return reference.kind === 'subscription' ? `sub#${reference.subscription_id}` : `loan#${reference.loan_id}#${reference.payment_id}`;
}

/** A presentment the processor accepted (approved or submitted): the debit, dated when it was presented. */
export function debitMovement(input: {
  readonly rail: PaymentMethod;
  readonly transaction_id: string;
  readonly amount_cents: number;
  readonly presented_at: Date;
  readonly user_id: string;
  readonly record_key: string;
  readonly idempotency_key: string;
}): MoneyMovement {
  return {
    movement_id: `debit:${input.idempotency_key}`,
    rail: input.rail,
    kind: 'debit',
    transaction_id: input.transaction_id,
    amount_cents: input.amount_cents,
    occurred_at: formatInstant(input.presented_at),
    user_id: input.user_id,
    record_key: input.record_key,
    idempotency_key: input.idempotency_key,
    source: 'attempt',
  };
}

const ACH_KIND: Readonly<Record<AchEvent['type'], MovementKind>> = {
  settled: 'settlement',
  returned: 'return',
  refunded: 'refund',
  chargeback: 'chargeback',
};

/** What an ACH outcome reports, for a period or a loan payment, dated by the bank's event time. */
export function achMovement(event: AchEvent, rail: PaymentMethod, recordKey: string, known?: KnownException): MoneyMovement {
  return {
    movement_id: `ach:${event.event_id}`,
    rail,
    kind: ACH_KIND[event.type],
    original_transaction_id: event.confirmation_id,
    amount_cents: event.amount_cents,
    occurred_at: normalizeInstant(event.occurred_at),
    user_id: event.reference.user_id,
    record_key: recordKey,
    ...(event.return_code !== undefined ? { return_code: event.return_code } : {}),
    ...(known ? { known_exception: known } : {}),
    source: `ach:${event.event_id}`,
  };
}

/** A card outcome reported by a Stripe event (its PaymentIntent is the original transaction). */
export function cardMovement(input: {
  readonly event_id: string;
  readonly kind: MovementKind;
  readonly payment_intent_id: string;
  readonly transaction_id?: string;
  readonly amount_cents: number;
  readonly occurred_at: Date;
  readonly user_id: string;
  readonly record_key: string;
  readonly known_exception?: KnownException;
}): MoneyMovement {
  return {
    movement_id: `stripe:${input.event_id}`,
    rail: 'card',
    kind: input.kind,
    ...(input.kind === 'debit' ? { transaction_id: input.payment_intent_id } : { original_transaction_id: input.payment_intent_id }),
    ...(input.transaction_id !== undefined && input.kind !== 'debit' ? { transaction_id: input.transaction_id } : {}),
    amount_cents: input.amount_cents,
    occurred_at: formatInstant(input.occurred_at),
    user_id: input.user_id,
    record_key: input.record_key,
    ...(input.known_exception ? { known_exception: input.known_exception } : {}),
    source: `stripe:${input.event_id}`,
  };
}
