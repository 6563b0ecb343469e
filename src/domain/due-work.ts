import { holdOf } from './collectible.js';
import { dunningLapsesAt, nextAutomaticAttemptAt } from './dunning.js';
import { failureState } from './ladder.js';
import type { BillingRecord, BillingStatus } from './records.js';
import { formatInstant } from './time.js';

/** The statuses the collections run plans: a first attempt, a retry of a decline, a pause to advance. */
export const PLANNED_STATUSES: readonly BillingStatus[] = ['PENDING', 'FAILED', 'PAUSED'];

/**
 * The next instant at which the collections run may act on a record without anyone writing it
 * first, or undefined when only a write can make it due again (the planner never reads it):
 *
 * - PENDING: its billing date; FAILED: its next automatic attempt (the daily retry 24 h after the
 *   last attempt, or the dunning schedule's next attempt; none once the schedule is exhausted);
 *   PAUSED: its billing date (the pause run advances it);
 * - a live billing failure (DESIGN 5) moves it to the ladder's next attempt, and parks it for good;
 * - a hold (DESIGN 3.1) or a card exception (DESIGN 6.1) keeps every automatic path away until a
 *   write clears it. Holds only grow with time (the ACH re-presentment window closes, never
 *   reopens), so a record held at its eligible instant stays held.
 *
 * - a dunning cycle (DESIGN 5b) is keyed no later than the instant its 14-day window is over, even
 *   when parked, held or waiting on the ladder: the run that reads it then records the exhaustion,
 *   which unkeys it (so a lapsed cycle is read once, never by every run).
 *
 * The attempt re-checks all of this after its own read; this only decides what the planner reads.
 * Time-bounded refusals that lapse on their own (a card network's ceiling) keep the record keyed.
 */
export function nextEligibleAt(record: BillingRecord): string | undefined {
  const eligible = eligibleAt(record);
  // A stored dunning cycle is read once its window is over, whatever else keeps it away (a later
  // ladder slot, a park, a hold, an exception): that run records the exhaustion and unkeys it.
  const lapses = record.billing_status === 'FAILED' ? dunningLapsesAt(record) : undefined;
  if (lapses === undefined || (eligible !== undefined && Date.parse(eligible) <= lapses)) return eligible;
  return formatInstant(new Date(Math.max(lapses, Date.parse(record.billing_date))));
}

function eligibleAt(record: BillingRecord): string | undefined {
  if (record.billing_status === 'PAUSED') return record.billing_date;
  let at: number;
  if (record.billing_status === 'PENDING') at = Date.parse(record.billing_date);
  else if (record.billing_status === 'FAILED') {
    const next = nextAutomaticAttemptAt(record);
    if (next === undefined) return undefined;
    at = Math.max(Date.parse(next), Date.parse(record.billing_date));
  } else return undefined;
  const ladder = failureState(record);
  if (ladder === 'parked') return undefined;
  if (ladder === 'retrying') at = Math.max(at, Date.parse(record.billing_next_attempt_at!));
  if (record.card_exception !== undefined && record.card_exception.code !== 'dispute_inquiry') return undefined;
  const when = new Date(at);
  if (holdOf(record, when)) return undefined;
  return at === Date.parse(record.billing_date) ? record.billing_date : formatInstant(when);
}
