import type { DunningState } from '../dunning.js';
import type { BillingRecord } from '../records.js';
import type { Page, PageRequest } from './page.js';

/**
 * The sparse, sharded indexes of billing-activity the planner and the API list read. All eventually
 * consistent: a caller re-reads a record (BillingLedger.get) before acting on it.
 */
export interface BillingIndexes {
  /** Records whose saved billing failure is live (retrying or parked), oldest failure first. */
  listFailing(page?: PageRequest): Promise<Page<BillingRecord>>;
  /** Records carrying an ACH or card exception (DESIGN 4.1, 6.1), oldest exception first. */
  listExceptions(page?: PageRequest): Promise<Page<BillingRecord>>;
  /**
   * Every record whose next eligible instant (due-work.ts `nextEligibleAt`) is at or before
   * `dueAtOrBefore`, oldest first, in pages read only as they are asked for. Parked, exhausted and
   * held records are never returned.
   */
  streamDue(dueAtOrBefore: string, options?: { readonly pageSize?: number }): AsyncIterable<readonly BillingRecord[]>;
  /**
   * Declined periods in dunning `state` (retrying: soonest next attempt first); with
   * `nextAttemptBefore`, only those whose stored next attempt is earlier.
   */
  listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>>;
}
