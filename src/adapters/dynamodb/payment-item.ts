import { safeParseCold } from '../../domain/lazy-schema.js';
import { loanPaymentHistoryRowSchema, loanPaymentSchema, type LoanPayment, type LoanPaymentHistoryRow } from '../../domain/loan-payments.js';
import { unmarshallItem, type Item } from './attribute-codec.js';
import { CorruptItemError, InvalidTransactionError } from './errors.js';
import { shardOf } from './sharding.js';

/** A payments-table item: its keys (DESIGN 2.7), and the payment or an audit row read back, key attributes dropped. */

/** Key attributes of a payment item (GSI2 sharded, DESIGN 2.7). */
export interface PaymentKeys {
  PK: string;
  SK: string;
  GSI1PK: string;
  GSI1SK: string;
  GSI2PK: string;
  GSI2SK: string;
  GSI3PK?: string;
  GSI3SK?: string;
  GSI4PK: string;
  GSI4SK: string;
}

/** The GSI2 sort key of a RETRY payment orders by its next attempt (a legacy item without one is due at its last update). */
export function retrySortKey(payment: Pick<LoanPayment, 'loc_payment_id' | 'loc_next_attempt_at' | 'loc_last_updated'>): string {
  return `STATUS#RETRY#AT#${payment.loc_next_attempt_at ?? payment.loc_last_updated}#PAYMENT#${payment.loc_payment_id}`;
}

/**
 * Audit rows live beside their payment (same PK), one per version: the version orders them and
 * makes the key unique, so an audit row is never overwritten. They carry no GSI keys, so no index
 * (and no list of payments) ever sees them.
 */
export function historySortKey(payment: Pick<LoanPayment, 'loc_loan_id' | 'loc_payment_id' | 'version'>): string {
  return `${historyPrefix(payment.loc_loan_id, payment.loc_payment_id)}${String(payment.version).padStart(10, '0')}`;
}

export function historyPrefix(loanId: string, paymentId: string): string {
  return `LOAN#${loanId}#PAYMENT#${paymentId}#HISTORY#`;
}

function assertKeyPart(value: string, what: string): void {
  // '#' separates key segments; an id containing it could match another loan's prefix.
  if (value.includes('#')) throw new InvalidTransactionError(`${what} must not contain '#': ${value}`);
}

export function paymentKeys(payment: LoanPayment, shardCount: number): PaymentKeys {
  const { loc_user_id: user, loc_loan_id: loan, loc_payment_id: id, loc_status: status } = payment;
  assertKeyPart(user, 'loc_user_id');
  assertKeyPart(loan, 'loc_loan_id');
  assertKeyPart(id, 'loc_payment_id');
  const keys: PaymentKeys = {
    PK: `USER#${user}`,
    SK: `LOAN#${loan}#PAYMENT#${id}`,
    GSI1PK: `USER#${user}`,
    GSI1SK: `LOAN#${loan}#STATUS#${status}#PAYMENT#${id}`,
    GSI2PK: `PAYMENT#${shardOf(id, shardCount)}`,
    GSI2SK: status === 'RETRY' ? retrySortKey(payment) : `STATUS#${status}#PAYMENT#${id}`,
    GSI4PK: `USER#${user}#LOAN#${loan}`,
    GSI4SK: `CREATED#${payment.loc_created_date}#PAYMENT#${id}`,
  };
  if (payment.loc_confirmation_id) {
    keys.GSI3PK = `USER#${user}`;
    keys.GSI3SK = `CONFIRMATION#${payment.loc_confirmation_id}`;
  }
  return keys;
}


const KEY_ATTRIBUTES = ['PK', 'SK', 'GSI1PK', 'GSI1SK', 'GSI2PK', 'GSI2SK', 'GSI3PK', 'GSI3SK', 'GSI4PK', 'GSI4SK'] as const;

export function paymentFromItem(item: Item, table: string): LoanPayment {
  const raw = unmarshallItem(item);
  for (const name of KEY_ATTRIBUTES) delete raw[name];
  const parsed = safeParseCold(loanPaymentSchema, raw);
  if (!parsed.success) throw corrupt(item, table, parsed.error.issues);
  return parsed.data;
}

export function paymentHistoryFromItem(item: Item, table: string): LoanPaymentHistoryRow {
  const raw = unmarshallItem(item);
  delete raw.PK;
  delete raw.SK;
  const parsed = safeParseCold(loanPaymentHistoryRowSchema, raw);
  if (!parsed.success) throw corrupt(item, table, parsed.error.issues);
  return parsed.data;
}

function corrupt(item: Item, table: string, issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[]): CorruptItemError {
  const text = issues.map((i) => `${i.path.map(String).join('.') || '(item)'}: ${i.message}`).join('; ');
  return new CorruptItemError(`${table} item (PK=${item.PK?.S ?? '?'}, SK=${item.SK?.S ?? '?'}) is corrupt: ${text}`);
}
