import type { BillingStore, PaymentsStore } from './ports.js';
import type { LoanPayment } from './loan-payments.js';

/** Audit-row pages read at most to learn whether a period ever recorded a transaction (its history is short). */
const MAX_PAGES = 10;

/**
 * Whether one of the period's audit rows recorded `transactionId` (DESIGN 2.5: every write of the
 * item has its row, so a transaction the record ever showed is on one). Tells an older entry's
 * late outcome (a harmless replay) from a payment the record never booked (an exception, or an
 * attempt's submission not recorded yet). Rare paths: a payment outcome for a period written off,
 * or for another transaction than the one an owing period shows; one Query per page.
 */
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

/** Whether one of a loan payment's audit rows recorded `confirmationId` (every change of a payment writes its row, DESIGN 2.7). */
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
