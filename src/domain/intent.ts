import { nextBillingDate } from './calendar.js';
import type { BillingRecord } from './records.js';
import { OPEN_CHAIN_STATUSES } from './statuses.js';
import { formatInstant, toDate } from './time.js';

/**
 * Membership intent (DESIGN 2.9): what the member asked for, in attributes no other writer's `set` can
 * name, so every write carries it forward and every successor inherits it. No rule reads `updated_event`.
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

/** Older ones are covered by `membership_event_at`. */
export const REMEMBERED_EVENT_IDS = 32;

/** At most one open chain per user. */
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

export function appliedEventIds(record: Pick<BillingRecord, 'membership_event_ids' | 'membership_event_id'>): readonly string[] {
  const ids = record.membership_event_ids ?? [];
  return record.membership_event_id !== undefined && !ids.includes(record.membership_event_id) ? [...ids, record.membership_event_id] : ids;
}

export function rememberEvent(record: BillingRecord, event: { readonly event_id: string; readonly occurred_at: string }): MembershipIntent {
  const ids = appliedEventIds(record).filter((id) => id !== event.event_id);
  const at = record.membership_event_at !== undefined && record.membership_event_at > event.occurred_at ? record.membership_event_at : event.occurred_at;
  return { ...intentOf(record), membership_event_ids: [...ids, event.event_id].slice(-REMEMBERED_EVENT_IDS), membership_event_at: at };
}

/** The one place that reads `paused_months` to decide a status. */
export function resumedStatus(intent: Pick<MembershipIntent, 'paused_months'>): 'PENDING' | 'PAUSED' {
  return (intent.paused_months ?? 0) > 0 ? 'PAUSED' : 'PENDING';
}

/**
 * A ban keeps the intent and what was owed: a period attempted before the ban comes back FAILED (its
 * dunning, holds and waits still bind), one whose pause is not over PAUSED.
 */
export function reactivationEvent(record: Pick<BillingRecord, 'paused_months' | 'last_attempt_date'>): 'REACTIVATED' | 'REACTIVATED_PAUSED' | 'REACTIVATED_FAILED' {
  if (record.last_attempt_date !== undefined) return 'REACTIVATED_FAILED';
  return resumedStatus(record) === 'PAUSED' ? 'REACTIVATED_PAUSED' : 'REACTIVATED';
}

export interface SuccessorPlan {
  readonly billing_date: string;
  readonly billing_status: 'PENDING' | 'PAUSED';
  readonly intent: MembershipIntent;
}

/**
 * The one successor rule: none after a cancel request; one calendar month on while paused (a pause of N
 * months moves an ANNUAL chain N months); else by the calendar, or where a due-date change moved it.
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
