import { holdOf, isCollectibleAndDue, type HoldCode } from './collectible.js';
import type { BillingPeriodMessage, CollectionProcess } from './collections.js';
import { dunningGate, dunningLapsed, dunningLapsesAt, nextAutomaticAttemptAt, type DunningHold } from './dunning.js';
import { failureState, isHeldByLadder } from './ladder.js';
import type { BillingRecord, BillingStatus, Process } from './records.js';
import { COLLECTIBLE_STATUSES } from './statuses.js';
import { formatInstant } from './time.js';

/**
 * What the collections job selects as due, decided here once: the run's decision per record
 * (`decideCollection`), the gate the attempt checks again after its read (`dueGate`), and the
 * due-index key the writers store (`nextEligibleAt`).
 */

/**
 * The statuses a run collects and the process each one's record gets: first attempts, retries,
 * expiring pauses (pending cancels are PENDING). The run reads them together from the due-index
 * (one partition per shard for every status), keyed on each record's next eligible instant (the
 * billing date, or for FAILED the next automatic attempt, `next_attempt`; later when the ladder
 * holds it), so a record waiting for a later slot, parked, exhausted or held is never read; the
 * record's own status picks its entry here.
 */
export const COLLECTION_SCANS: readonly { readonly status: BillingStatus; readonly process: CollectionProcess; readonly by: 'billing_date' | 'next_attempt' }[] = [
  { status: 'PENDING', process: 'SCHEDULED', by: 'billing_date' },
  { status: 'FAILED', process: 'RETRY', by: 'next_attempt' },
  { status: 'PAUSED', process: 'PAUSE', by: 'billing_date' },
];

export type CollectionDecision =
  | { readonly kind: 'enqueue'; readonly message: BillingPeriodMessage }
  | { readonly kind: 'skip'; readonly reason: 'waiting' | 'parked' | 'not_due' };

/**
 * What the run does with one record the due-index returned. The attempt checks all of this
 * again after its own read; skipping here only saves a message (ADR-119's gate).
 */
export function decideCollection(record: BillingRecord, process: CollectionProcess, now: Date): CollectionDecision {
  if (Date.parse(record.billing_date) > now.getTime()) return { kind: 'skip', reason: 'not_due' };
  if (COLLECTIBLE_STATUSES.has(record.billing_status)) {
    const held = dueGate(record, now, process);
    if (held === 'waiting' || held === 'parked') return { kind: 'skip', reason: held };
    // A dunning cycle whose window is over is sent: its attempt presents nothing and records the exhaustion.
    if (held && !(held === 'exhausted' && dunningLapsed(record, now))) return { kind: 'skip', reason: 'not_due' };
  }
  return {
    kind: 'enqueue',
    message: {
      kind: 'billing_period',
      user_id: record.user_id,
      billing_date: record.billing_date,
      subscription_id: record.subscription_id,
      process,
      enqueued_at: formatInstant(now),
    },
  };
}

export type NotDueReason = 'not_found' | 'status' | 'not_yet_due' | 'waiting' | 'parked' | 'exception' | HoldCode | DunningHold;

/** Paths started by a person: they bypass the daily-retry wait and the ladder's wait, never a hold. */
const PERSON_INITIATED: ReadonlySet<Process> = new Set(['MANUAL', 'OPERATOR_RETRY']);
/** Paths that may advance an expired pause window (a payment path never skips a period). */
const PAUSE_RUNS: ReadonlySet<Process> = new Set(['PAUSE', 'BATCH']);

export function mayAdvancePause(process: Process): boolean {
  return PAUSE_RUNS.has(process);
}

/**
 * Why a collectible record is not to be attempted now by `process`, or undefined when it is. The
 * collections-job plans with the same rule (ADR-119's gate); the attempt checks it again after its read.
 */
export function dueGate(record: BillingRecord, now: Date, process: Process): NotDueReason | undefined {
  if (!COLLECTIBLE_STATUSES.has(record.billing_status)) return 'status';
  if (!isCollectibleAndDue(record, now)) return 'not_yet_due';
  // A dunning cycle whose 14-day window is over (DESIGN 5b): no automatic path presents it, and the
  // attempt records the exhaustion, before any other refusal that would leave it keyed and unwritten.
  if (!PERSON_INITIATED.has(process) && dunningLapsed(record, now)) return 'exhausted';
  const hold = holdOf(record, now);
  if (hold) return hold;
  // The dunning schedule (every automatic path, the balance webhook included) and the networks' ceilings.
  const dunning = dunningGate(record, now, process);
  if (PERSON_INITIATED.has(process)) return dunning;
  if (hasCardException(record)) return 'exception';
  if (isHeldByLadder(record, now)) return failureState(record) === 'parked' ? 'parked' : 'waiting';
  return dunning;
}

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
  if (hasCardException(record)) return undefined;
  const when = new Date(at);
  if (holdOf(record, when)) return undefined;
  return at === Date.parse(record.billing_date) ? record.billing_date : formatInstant(when);
}

/** A card payment for another amount or currency was received (DESIGN 6.1): no automatic charge until a person looks. */
function hasCardException(record: Pick<BillingRecord, 'card_exception'>): boolean {
  return record.card_exception !== undefined && record.card_exception.code !== 'dispute_inquiry';
}
