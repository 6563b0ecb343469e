import { applyBillingEvent, historyRowOf, successorRecord, type IdGenerator } from './billing-record.js';
import { DomainError } from './errors.js';
import { PERIOD_CURRENCY } from './card-outcomes.js';
import type { BillingTransaction } from './ports/billing-ledger.js';
import type { ProcessorRefund } from './ports/processor.js';
import type { BillingEvent, BillingRecord } from './records.js';

/** How an operator closes an exception (DESIGN 12); each is one transition of the table from PENDING, FAILED or ACHSENT. */
export const EXCEPTION_RESOLUTIONS = ['accept', 'waive', 'refunded_retry'] as const;
export type ExceptionResolution = (typeof EXCEPTION_RESOLUTIONS)[number];

export const RESOLUTION_EVENTS: Readonly<Record<ExceptionResolution, BillingEvent>> = {
  accept: 'EXCEPTION_ACCEPTED',
  waive: 'EXCEPTION_WAIVED',
  refunded_retry: 'EXCEPTION_REFUNDED',
};

export const REFUNDED_PAYMENT_ERROR = 'The payment received was refunded; the period is owed in full.';

/** 409 with its code: the resolution would book money the period did not receive, or charge it twice. */
export class ExceptionResolutionError extends DomainError {
  override readonly name = 'ExceptionResolutionError';
  constructor(
    readonly code: 'no_exception' | 'refund_not_found' | 'refund_mismatch' | 'currency_mismatch',
    message: string,
  ) {
    super(message);
  }
}

/** The money an exception received: which processor transaction, how much, in what currency. */
export interface ReceivedMoney {
  readonly source: 'ach' | 'card';
  readonly code: string;
  readonly transaction_id: string | undefined;
  readonly received_cents: number;
  readonly currency: string;
}

/** The newer of the period's exceptions that received money; a dispute inquiry received none. */
export function receivedMoneyOf(record: BillingRecord): ReceivedMoney | undefined {
  const ach = record.ach_exception;
  const card = record.card_exception?.received_cents !== undefined ? record.card_exception : undefined;
  if (ach && (!card || ach.at >= card.at)) {
    return { source: 'ach', code: ach.code, transaction_id: ach.confirmation_id ?? record.transaction_id, received_cents: ach.received_cents, currency: PERIOD_CURRENCY };
  }
  if (!card) return undefined;
  return { source: 'card', code: card.code, transaction_id: card.payment_intent_id, received_cents: card.received_cents!, currency: card.currency ?? PERIOD_CURRENCY };
}

/** Refused unless the processor's refund returned exactly the money this exception received. */
export function checkRefund(money: ReceivedMoney, refundId: string, refund: ProcessorRefund | undefined): void {
  if (!refund) throw new ExceptionResolutionError('refund_not_found', `the processor knows no refund ${refundId}`);
  if (refund.status === 'failed' || refund.status === 'canceled') throw new ExceptionResolutionError('refund_mismatch', `refund ${refundId} is ${refund.status}: no money went back`);
  if (refund.transaction_id !== money.transaction_id || refund.amount_cents !== money.received_cents) {
    throw new ExceptionResolutionError('refund_mismatch', `refund ${refundId} is not a full refund of the ${money.received_cents} cents received on ${money.transaction_id ?? 'this period'}`);
  }
}

export interface Resolution {
  readonly resolution: ExceptionResolution;
  readonly actor?: string | undefined;
  readonly reason: string;
  /** refunded_retry only, checked by `checkRefund` first. */
  readonly refund_id?: string | undefined;
}

/** The transaction that resolves the period's exception: the status from the table, the exception gone, the money on the audit row. */
export function resolveException(read: BillingRecord, money: ReceivedMoney, request: Resolution, now: Date, ids: IdGenerator): { after: BillingRecord; tx: BillingTransaction } {
  if (request.resolution === 'accept' && money.currency !== PERIOD_CURRENCY) {
    throw new ExceptionResolutionError('currency_mismatch', `${money.currency} cannot settle a ${PERIOD_CURRENCY} period: refund it and retry`);
  }
  const after = applyBillingEvent(read, RESOLUTION_EVENTS[request.resolution], now, { set: { ach_exception: undefined, card_exception: undefined, ...settled(request.resolution, money) } });
  const row = historyRowOf(after, {
    actor: request.actor,
    reason: request.reason,
    resolution: request.resolution,
    refund_id: request.refund_id,
    amount_difference_cents: request.resolution === 'refunded_retry' ? undefined : money.received_cents - read.amount_cents,
  });
  // The period leaves PENDING here as after an attempt: its successor opens (a waive of a cancel-requested period opens none).
  const next = read.billing_status === 'PENDING' ? successorRecord(read, now, ids, after.last_run_date) : undefined;
  const tx: BillingTransaction = { writes: [{ kind: 'update', read, record: after }], history: [row], ...(next ? { createIfAbsent: { record: next, history: historyRowOf(next) } } : {}) };
  return { after, tx };
}

function settled(resolution: ExceptionResolution, money: ReceivedMoney): Partial<BillingRecord> {
  if (resolution === 'refunded_retry') return { payment_error: REFUNDED_PAYMENT_ERROR };
  return { amount_received_cents: money.received_cents, payment_error: '', ...(money.transaction_id !== undefined ? { transaction_id: money.transaction_id } : {}) };
}
