import type { BillingStore } from './ports/billing-store.js';
import type { PaymentsStore } from './ports/loan-payments.js';
import type { LoanPayment } from './loan-payments.js';

/** A period's history is short. */
const MAX_PAGES = 10;

/** Every write has its audit row: tells an older entry's late outcome (a replay) from a payment never booked. */
export async function everRecorded(billing: Pick<BillingStore, 'history'>, subscriptionId: string, transactionId: string): Promise<boolean> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const rows = await billing.history(subscriptionId, cursor !== undefined ? { cursor, limit: 100 } : { limit: 100 });
    if (rows.items.some((row) => row.transaction_id === transactionId)) return true;
    if (rows.next === undefined || rows.next === null) return false;
    cursor = rows.next;
  }
  return false;
}

/** The instrument the audit rows recorded for an entry (an older entry's return sets its hold there). */
export async function recordedInstrument(billing: Pick<BillingStore, 'history'>, subscriptionId: string, transactionId: string): Promise<string | undefined> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const rows = await billing.history(subscriptionId, cursor !== undefined ? { cursor, limit: 100 } : { limit: 100 });
    const row = rows.items.find((r) => r.transaction_id === transactionId && r.instrument_id !== undefined);
    if (row) return row.instrument_id;
    if (rows.next === undefined || rows.next === null) return undefined;
    cursor = rows.next;
  }
  return undefined;
}

export async function loanEverRecorded(
  payments: Pick<PaymentsStore, 'listHistory'>,
  payment: Pick<LoanPayment, 'loc_user_id' | 'loc_loan_id' | 'loc_payment_id'>,
  confirmationId: string,
): Promise<boolean> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const rows = await payments.listHistory(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id, cursor !== undefined ? { cursor, limit: 100 } : { limit: 100 });
    if (rows.items.some((row) => row.loc_confirmation_id === confirmationId)) return true;
    if (rows.next === undefined || rows.next === null) return false;
    cursor = rows.next;
  }
  return false;
}
