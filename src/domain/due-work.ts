import { holdOf, isCollectibleAndDue, type HoldCode } from './collectible.js';
import type { BillingPeriodMessage, CollectionProcess } from './collections.js';
import { dunningGate, dunningLapsed, dunningLapsesAt, nextAutomaticAttemptAt, type DunningHold } from './dunning.js';
import { failureState, isHeldByLadder } from './ladder.js';
import type { BillingRecord, BillingStatus, Process } from './records.js';
import { processorOfRail } from './processor-budget.js';
import { COLLECTIBLE_STATUSES } from './statuses.js';
import { formatInstant } from './time.js';

/** What the collections job selects as due, decided once for the planner, the attempt's gate and the due-index key. */

/** The statuses a run collects, and the process a record of each gets. */
export const COLLECTION_SCANS: readonly { readonly status: BillingStatus; readonly process: CollectionProcess; readonly by: 'billing_date' | 'next_attempt' }[] = [
  { status: 'PENDING', process: 'SCHEDULED', by: 'billing_date' },
  { status: 'FAILED', process: 'RETRY', by: 'next_attempt' },
  { status: 'PAUSED', process: 'PAUSE', by: 'billing_date' },
];

export type CollectionDecision =
  | { readonly kind: 'enqueue'; readonly message: BillingPeriodMessage }
  | { readonly kind: 'skip'; readonly reason: 'waiting' | 'parked' | 'not_due' };

/** What the run does with one record the due-index returned; skipping only saves a message, the attempt checks again. */
export function decideCollection(record: BillingRecord, process: CollectionProcess, now: Date): CollectionDecision {
  if (Date.parse(record.billing_date) > now.getTime()) return { kind: 'skip', reason: 'not_due' };
  if (COLLECTIBLE_STATUSES.has(record.billing_status)) {
    const held = dueGate(record, now, process);
    if (held === 'waiting' || held === 'parked') return { kind: 'skip', reason: held };
    // A lapsed dunning cycle is sent: its attempt presents nothing and records the exhaustion.
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
      payment_method: record.payment_method,
      enqueued_at: formatInstant(now),
      processor: processorOfRail(record.payment_method),
    },
  };
}

export type NotDueReason = 'not_found' | 'status' | 'not_yet_due' | 'waiting' | 'parked' | 'exception' | HoldCode | DunningHold;

/** A person may skip the daily-retry and ladder waits, never a hold. */
const PERSON_INITIATED: ReadonlySet<Process> = new Set(['MANUAL', 'OPERATOR_RETRY']);
/** A payment path never skips a period. */
const PAUSE_RUNS: ReadonlySet<Process> = new Set(['PAUSE', 'BATCH']);

export function mayAdvancePause(process: Process): boolean {
  return PAUSE_RUNS.has(process);
}

/**
 * Why `process` may not attempt the record now, or undefined when it may. `recordHolds: false`: the
 * attempt judges the record's holds against the instrument it would use, once the account is read.
 */
export function dueGate(record: BillingRecord, now: Date, process: Process, options: { readonly recordHolds?: boolean } = {}): NotDueReason | undefined {
  if (!COLLECTIBLE_STATUSES.has(record.billing_status)) return 'status';
  if (!isCollectibleAndDue(record, now)) return 'not_yet_due';
  // Before any other refusal, which would leave a lapsed cycle keyed and unwritten.
  if (!PERSON_INITIATED.has(process) && dunningLapsed(record, now)) return 'exhausted';
  const hold = options.recordHolds === false ? undefined : holdOf(record, now);
  if (hold) return hold;
  // A person is refused too: the period already received money, and charging it in full would take it twice.
  if (hasCardException(record)) return 'exception';
  const dunning = dunningGate(record, now, process);
  if (PERSON_INITIATED.has(process)) return dunning;
  if (isHeldByLadder(record, now)) return failureState(record) === 'parked' ? 'parked' : 'waiting';
  return dunning;
}

/**
 * The due-index key: the next instant the run may act on the record without a write first, or
 * undefined when only a write can make it due. Holds only grow with time, so a record held then stays held.
 */
export function nextEligibleAt(record: BillingRecord): string | undefined {
  const eligible = eligibleAt(record);
  // A lapsed cycle is read once, whatever else keeps it away: that run records the exhaustion and unkeys it.
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
  if (hasCardException(record) || record.held_on !== undefined) return undefined;
  // A network ceiling frees up with time alone: due again then, not read before.
  if (record.ceiling_until !== undefined) at = Math.max(at, Date.parse(record.ceiling_until));
  const when = new Date(at);
  if (holdOf(record, when)) return undefined;
  return at === Date.parse(record.billing_date) ? record.billing_date : formatInstant(when);
}

/** A payment for another amount or currency was received: no charge on any path until an operator resolves it. */
export function hasCardException(record: Pick<BillingRecord, 'card_exception'>): boolean {
  return record.card_exception !== undefined && record.card_exception.code !== 'dispute_inquiry';
}
