import { nextBillingDate } from './calendar.js';
import type { BillingRecord } from './records.js';
import { OPEN_CHAIN_STATUSES } from './statuses.js';
import { formatInstant, toDate } from './time.js';

/**
 * Membership intent (DESIGN 2.9): what the member asked for is a fact of the billing chain, not a
 * lifecycle tag. It lives in dedicated attributes that only membership events and an operator
 * action that says so (a due-date change moves the anchor) change. Every other writer goes through
 * `applyBillingEvent`, whose `set` cannot name these keys, so it carries them forward; a successor
 * period inherits them through `successorPlan`. `updated_event` is only the tag of the last write:
 * nothing in the domain reads it to decide.
 */

export const INTENT_KEYS = [
  'billing_anchor_day',
  'paused_months',
  'cancel_requested_at',
  'membership_event_ids',
  'membership_event_at',
] as const;
export type IntentKey = (typeof INTENT_KEYS)[number];
export type MembershipIntent = Pick<BillingRecord, IntentKey>;

/** Applied membership event ids remembered per chain; older ones are also covered by `membership_event_at`. */
export const REMEMBERED_EVENT_IDS = 32;

/** At most one open chain per user: true when one of the user's records is open. */
export function hasOpenChain(records: readonly Pick<BillingRecord, 'billing_status'>[]): boolean {
  return records.some((r) => OPEN_CHAIN_STATUSES.has(r.billing_status));
}

export function isCancelRequested(record: Pick<BillingRecord, 'cancel_requested_at'>): boolean {
  return record.cancel_requested_at !== undefined;
}

export function intentOf(record: MembershipIntent): MembershipIntent {
  const intent: Record<string, unknown> = {};
  for (const key of INTENT_KEYS) if (record[key] !== undefined) intent[key] = record[key];
  return intent as MembershipIntent;
}

/** The event ids this record's chain has applied (the legacy single id included). */
export function appliedEventIds(record: Pick<BillingRecord, 'membership_event_ids' | 'membership_event_id'>): readonly string[] {
  const ids = record.membership_event_ids ?? [];
  return record.membership_event_id !== undefined && !ids.includes(record.membership_event_id) ? [...ids, record.membership_event_id] : ids;
}

/** The intent after a membership event was applied to `record`: its id remembered, its time the newest. */
export function rememberEvent(record: BillingRecord, event: { readonly event_id: string; readonly occurred_at: string }): MembershipIntent {
  const ids = appliedEventIds(record).filter((id) => id !== event.event_id);
  const at = record.membership_event_at !== undefined && record.membership_event_at > event.occurred_at ? record.membership_event_at : event.occurred_at;
  return { ...intentOf(record), membership_event_ids: [...ids, event.event_id].slice(-REMEMBERED_EVENT_IDS), membership_event_at: at };
}

/**
 * The status a period takes when nothing but the member's intent holds it (a successor, a
 * reactivation): PAUSED while pause months remain, otherwise PENDING. The one place that reads
 * `paused_months` to decide a status.
 */
export function resumedStatus(intent: Pick<MembershipIntent, 'paused_months'>): 'PENDING' | 'PAUSED' {
  return (intent.paused_months ?? 0) > 0 ? 'PAUSED' : 'PENDING';
}

/** The transition that reactivates an INACTIVE period: back to PAUSED when its pause is not over (a ban keeps the intent). */
export function reactivationEvent(record: Pick<BillingRecord, 'paused_months'>): 'REACTIVATED' | 'REACTIVATED_PAUSED' {
  return resumedStatus(record) === 'PAUSED' ? 'REACTIVATED_PAUSED' : 'REACTIVATED';
}

/** What the period after `record` is, by the member's intent; undefined when the chain ends there. */
export interface SuccessorPlan {
  readonly billing_date: string;
  readonly billing_status: 'PENDING' | 'PAUSED';
  readonly intent: MembershipIntent;
}

/**
 * The one successor rule. A cancel-requested period has none. A paused period (months left) is
 * followed one calendar month later, whatever the term, with a month less to skip (PAUSED while
 * months remain, then PENDING): a pause of N months moves an ANNUAL chain N months, never a year.
 * Otherwise the next period per term, Friday billing and anchor day. When the chain already has
 * its next period at another date (`successor_billing_date`, set by a due-date change of that
 * period), the successor is that one: a create finds it there and opens nothing.
 */
export function successorPlan(record: BillingRecord): SuccessorPlan | undefined {
  const plan = calendarSuccessor(record);
  return plan && record.successor_billing_date !== undefined ? { ...plan, billing_date: record.successor_billing_date } : plan;
}

function calendarSuccessor(record: BillingRecord): SuccessorPlan | undefined {
  if (isCancelRequested(record)) return undefined;
  const date = toDate(record.billing_date);
  const calendar = { fridayBilling: record.friday_billing, anchorDay: record.billing_anchor_day };
  const intent = intentOf(record);
  const pausedMonths = record.paused_months ?? 0;
  if (pausedMonths > 0) {
    const left = pausedMonths - 1;
    const { paused_months: _months, ...rest } = intent;
    const next: MembershipIntent = left > 0 ? { ...rest, paused_months: left } : rest;
    return { billing_date: formatInstant(nextBillingDate(date, 'MONTHLY', calendar)), billing_status: resumedStatus(next), intent: next };
  }
  return { billing_date: formatInstant(nextBillingDate(date, record.term, calendar)), billing_status: 'PENDING', intent };
}
