import type { BillingRecord } from './records.js';
import { addNanos, toDate } from './time.js';

/**
 * Chain identity (docs/decisions.md): two chains of one user can want the same user_id + billing_date
 * key, so a period whose key holds another chain's record takes the next nanosecond instead.
 */

/** Two legacy records count as one chain (the old rule). */
export function sameChain(a: Pick<BillingRecord, 'chain_id'>, b: Pick<BillingRecord, 'chain_id'>): boolean {
  return a.chain_id === b.chain_id;
}

export function nextFreeInstant(billingDate: string): string {
  return addNanos(billingDate, 1);
}

/** Each try after the first costs a read and a transaction; two chains on one date is already rare. */
export const MAX_PLACEMENT_PROBES = 8;

/** To the millisecond, so a displaced period counts. */
export function isPeriodAt(record: Pick<BillingRecord, 'billing_date'>, date: string): boolean {
  return toDate(record.billing_date).getTime() === toDate(date).getTime();
}

export function chainPeriodAt<R extends Pick<BillingRecord, 'billing_date' | 'chain_id'>>(
  records: readonly R[],
  member: Pick<BillingRecord, 'chain_id'>,
  date: string,
): R | undefined {
  return records.find((r) => sameChain(r, member) && isPeriodAt(r, date));
}
