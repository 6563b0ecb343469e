import type { BillingRecord } from './records.js';
import { addNanos, toDate } from './time.js';

/**
 * Chain identity (docs/decisions.md, F10). Records are keyed user_id + billing_date, so two chains
 * of one user (a new membership after the old chain closed) can want the same key: a Friday plan
 * bills on the same Nth Friday as the plan before it. Which chain a period belongs to is a fact of
 * its own, `chain_id` (the first period's subscription_id), set when a chain opens, inherited by
 * every successor (`successorRecord`), and out of reach of every writer's `set`
 * (`applyBillingEvent`), as the membership intent is. A period whose key holds a record of another
 * chain takes the next free instant instead: 1 ns later, its due instant unchanged to the
 * millisecond. A record of the same chain at the key is that period already (created ahead by a
 * PAUSE or CANCEL, or linked by a due-date change): nothing is created.
 *
 * Items written before `chain_id` existed carry none; two such records count as one chain (the
 * old rule: a record at the key is the successor), and a legacy record is never of a chain that
 * has an id (every record of a chain opened since carries it).
 */

/** True when both records belong to one chain (both legacy counts as one: the old rule). */
export function sameChain(a: Pick<BillingRecord, 'chain_id'>, b: Pick<BillingRecord, 'chain_id'>): boolean {
  return a.chain_id === b.chain_id;
}

/** Where a period goes when its key holds another chain's record: the next nanosecond (the same millisecond). */
export function nextFreeInstant(billingDate: string): string {
  return addNanos(billingDate, 1);
}

/**
 * Instants tried for one new period before the write gives up (each try after the first costs a
 * read and a transaction). Two chains' records on one date is already rare; eight is plenty.
 */
export const MAX_PLACEMENT_PROBES = 8;

/** True when `record` is the period due at `date` (to the millisecond: a displaced period included). */
export function isPeriodAt(record: Pick<BillingRecord, 'billing_date'>, date: string): boolean {
  return toDate(record.billing_date).getTime() === toDate(date).getTime();
}

/** The period of `member`'s chain due at `date` among `records` (the same chain, the same millisecond), if any. */
export function chainPeriodAt<R extends Pick<BillingRecord, 'billing_date' | 'chain_id'>>(
  records: readonly R[],
  member: Pick<BillingRecord, 'chain_id'>,
  date: string,
): R | undefined {
  return records.find((r) => sameChain(r, member) && isPeriodAt(r, date));
}
