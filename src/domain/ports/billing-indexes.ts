import type { DunningState } from '../dunning.js';
import type { BillingRecord } from '../records.js';
import type { Page, PageRequest } from './page.js';

/** The sparse indexes the planner and the API list read: eventually consistent, re-read before acting. */
export interface BillingIndexes {
  /** Records whose saved billing failure is live (retrying or parked), oldest failure first. */
  listFailing(page?: PageRequest): Promise<Page<BillingRecord>>;
  /** Records carrying an ACH or card exception (DESIGN 4.1, 6.1), oldest exception first. */
  listExceptions(page?: PageRequest): Promise<Page<BillingRecord>>;
  /** Records whose next eligible instant (due-work.ts) is at or before the bound, oldest first, read page by page. */
  streamDue(dueAtOrBefore: string, options?: { readonly pageSize?: number }): AsyncIterable<readonly BillingRecord[]>;
  /** Periods a hold keeps off the schedule (DESIGN 3.2), longest held first: what the daily sweep reads. */
  listHeld(page?: PageRequest): Promise<Page<BillingRecord>>;
  /** Declined periods in dunning `state`, soonest next attempt first; optionally only those due before a bound. */
  listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>>;
}
