import { nextBillingDate } from './calendar.js';
import type { BillingFailureFields } from './ladder.js';
import type { BillingRecord, DecisionContext, HistoryRow, Process, UpdatedEvent } from './records.js';
import { formatInstant, toDate } from './time.js';
import { billingTransitions, type BillingEvent } from './transitions.js';

/** Source of fresh identifiers (subscription ids, lock versions, claim tokens). */
export interface IdGenerator {
  newId(): string;
}

// Starts anywhere so that two processes rarely share a sequence; a shared stamp is refused, never overwritten.
let stampCounter = Math.floor(Math.random() * 1_000_000);

/**
 * A fresh `last_run_date` for a write of a record last stamped `previous`: not before now, in a
 * later millisecond than `previous`, with the sub-millisecond digits from a per-process counter.
 * Every stamp this process hands out is distinct, so two records of one user written at the same
 * (simulated) instant still get distinct history keys; across processes a clash is refused by the
 * history row's `attribute_not_exists` and retried, never an overwritten audit row.
 */
export function freshStamp(now: Date, previous?: string): string {
  stampCounter = (stampCounter + 1) % 1_000_000;
  let ms = now.getTime();
  if (previous !== undefined) {
    const previousMs = toDate(previous).getTime();
    if (previousMs >= ms) ms = previousMs + 1;
  }
  return formatInstant(new Date(ms), stampCounter);
}

export interface ChangeOptions {
  readonly process?: Process;
  readonly updatedEvent?: UpdatedEvent;
  /** Attribute changes beyond status, stamp and version. `undefined` values remove the attribute. */
  readonly set?: Partial<BillingRecord>;
}

/**
 * The after-image of `record` once `event` is applied: status from the transition table (an event
 * not allowed from the current status throws IllegalTransitionError), a fresh stamp, version + 1.
 */
export function applyBillingEvent(record: BillingRecord, event: BillingEvent, now: Date, options: ChangeOptions = {}): BillingRecord {
  const billing_status = billingTransitions.apply(record.billing_status, event);
  const after: BillingRecord = {
    ...record,
    ...options.set,
    billing_status,
    last_run_date: freshStamp(now, record.last_run_date),
    version: record.version + 1,
  };
  if (options.process) after.process = options.process;
  if (options.updatedEvent) after.updated_event = options.updatedEvent;
  if (isTerminalAfter(record, after)) after.completed_date ??= formatInstant(now);
  return after;
}

function isTerminalAfter(before: BillingRecord, after: BillingRecord): boolean {
  return before.billing_status !== after.billing_status && ['COMPLETED', 'WAIVED', 'CANCELLED', 'SKIPPED', 'REFUNDED'].includes(after.billing_status);
}

/** The after-image of a saved failure: only the five attributes, the stamp and the version move. */
export function withFailure(record: BillingRecord, failure: BillingFailureFields, now: Date): BillingRecord & BillingFailureFields {
  return {
    ...record,
    ...failure,
    last_run_date: freshStamp(now, record.last_run_date),
    version: record.version + 1,
  };
}

/** The audit row for an after-image, with decision context and who/why where known. */
export function historyRowOf(
  after: BillingRecord,
  extra: DecisionContext & { actor?: string | undefined; reason?: string | undefined } = {},
): HistoryRow {
  const row: HistoryRow = { ...after };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) (row as Record<string, unknown>)[k] = v;
  return row;
}

/** The due date of the period after `record`, per its term, Friday billing and anchor day. */
export function nextPeriodDate(record: BillingRecord): string {
  return formatInstant(
    nextBillingDate(toDate(record.billing_date), record.term, {
      fridayBilling: record.friday_billing,
      anchorDay: record.billing_anchor_day,
    }),
  );
}

/**
 * The next period's record after `record` was attempted (or skipped): a new subscription id,
 * PENDING (or still PAUSED while pause months remain), nothing attempted yet.
 */
export function nextPeriodRecord(
  record: BillingRecord,
  now: Date,
  ids: IdGenerator,
  stampAfter: string,
  overrides: Partial<BillingRecord> = {},
): BillingRecord {
  const created = formatInstant(now);
  const next: BillingRecord = {
    user_id: record.user_id,
    billing_date: nextPeriodDate(record),
    subscription_id: ids.newId(),
    amount_cents: record.amount_cents,
    billing_status: 'PENDING',
    last_run_date: freshStamp(now, stampAfter),
    created_date: created,
    process: record.process,
    term: record.term,
    tier: record.tier,
    payment_method: record.payment_method,
    payment_attempts: 0,
    version: 0,
    ...(record.account_last_four !== undefined ? { account_last_four: record.account_last_four } : {}),
    ...(record.friday_billing !== undefined ? { friday_billing: record.friday_billing } : {}),
    ...(record.billing_anchor_day !== undefined ? { billing_anchor_day: record.billing_anchor_day } : {}),
    ...overrides,
  };
  return next;
}

export interface NewMembershipPlan {
  readonly user_id: string;
  readonly amount_cents: number;
  readonly term: BillingRecord['term'];
  readonly tier: string;
  readonly payment_method: BillingRecord['payment_method'];
  readonly account_last_four?: string | undefined;
  readonly first_billing_date: string;
  readonly friday_billing?: number | undefined;
  readonly membership_event_id?: string | undefined;
  readonly process?: Process;
}

/** The first PENDING record of a new member. */
export function firstBillingRecord(plan: NewMembershipPlan, now: Date, ids: IdGenerator): BillingRecord {
  const created = formatInstant(now);
  return {
    user_id: plan.user_id,
    billing_date: plan.first_billing_date,
    subscription_id: ids.newId(),
    amount_cents: plan.amount_cents,
    billing_status: 'PENDING',
    last_run_date: freshStamp(now),
    created_date: created,
    process: plan.process ?? 'UNKNOWN',
    term: plan.term,
    tier: plan.tier,
    payment_method: plan.payment_method,
    payment_attempts: 0,
    version: 0,
    billing_anchor_day: toDate(plan.first_billing_date).getUTCDate(),
    ...(plan.account_last_four !== undefined ? { account_last_four: plan.account_last_four } : {}),
    ...(plan.friday_billing !== undefined ? { friday_billing: plan.friday_billing } : {}),
    ...(plan.membership_event_id !== undefined ? { membership_event_id: plan.membership_event_id } : {}),
  };
}
