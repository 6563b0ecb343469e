import type { BillingStore } from './ports.js';

/** Audit-row pages read at most to learn whether a period ever recorded a transaction (its history is short). */
const MAX_PAGES = 10;

/**
 * Whether one of the period's audit rows recorded `transactionId` (DESIGN 2.5: every write of the
 * item has its row, so a transaction the record ever showed is on one). Tells an older entry's
 * late outcome (a harmless replay) from a payment the record never booked (an exception). Rare
 * path: a payment outcome for a period written off; one Query per page.
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
