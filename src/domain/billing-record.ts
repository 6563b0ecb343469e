import { nextBillingDate } from './calendar.js';
import { INTENT_KEYS, intentOf, successorPlan, type IntentKey, type MembershipIntent } from './intent.js';
import type { BillingFailureFields } from './ladder.js';
import type { BillingEvent, BillingRecord, DecisionContext, HistoryRow, Process, UpdatedEvent } from './records.js';
import { TERMINAL_STATUSES } from './statuses.js';
import { formatInstant, toDate } from './time.js';
import { billingTransitions } from './transitions.js';

/** Source of fresh identifiers (subscription ids, lock versions, claim tokens). */
export interface IdGenerator {
  newId(): string;
}

const STAMP_SEQUENCE = 1_000_000;
// Per process; the runtime starts it at random so two processes rarely share a sequence (a shared stamp is refused, never overwritten).
let stampCounter = 0;

/** Where this process's stamps start their sub-millisecond sequence: the composition draws it at random. */
export function startStampSequence(start: number): void {
  stampCounter = ((Math.trunc(start) % STAMP_SEQUENCE) + STAMP_SEQUENCE) % STAMP_SEQUENCE;
}

/**
 * A fresh `last_run_date` for a write of a record last stamped `previous`: not before now, in a
 * later millisecond than `previous`, with the sub-millisecond digits from a per-process counter.
 * Every stamp this process hands out is distinct, so two records of one user written at the same
 * (simulated) instant still get distinct history keys; across processes a clash is refused by the
 * history row's `attribute_not_exists` and retried, never an overwritten audit row.
 */
export function freshStamp(now: Date, previous?: string): string {
  stampCounter = (stampCounter + 1) % STAMP_SEQUENCE;
  let ms = now.getTime();
  if (previous !== undefined) {
    const previousMs = toDate(previous).getTime();
    if (previousMs >= ms) ms = previousMs + 1;
  }
  return formatInstant(new Date(ms), stampCounter);
}

/** Attributes no writer's `set` may name: the membership intent (DESIGN 2.9) and the chain identity (chain.ts). */
type ProtectedKey = IntentKey | 'chain_id';

/** Attributes any writer may change: everything but the membership intent (DESIGN 2.9) and the chain identity. */
export type WritableAttributes = Partial<Omit<BillingRecord, ProtectedKey>>;

export interface ChangeOptions {
  readonly process?: Process;
  readonly updatedEvent?: UpdatedEvent;
  /** Attribute changes beyond status, stamp and version. `undefined` values remove the attribute. Intent cannot be named here. */
  readonly set?: WritableAttributes;
}

/**
 * The after-image of `record` once `event` is applied: status from the transition table (an event
 * not allowed from the current status throws IllegalTransitionError), a fresh stamp, version + 1.
 * The membership intent is carried forward unchanged.
 */
export function applyBillingEvent(record: BillingRecord, event: BillingEvent, now: Date, options: ChangeOptions = {}): BillingRecord {
  return applyChange(record, event, now, options, undefined);
}

/**
 * As `applyBillingEvent`, for the writers that own the intent (membership events; a due-date change
 * moving the anchor): `intent` replaces the record's intent as a whole.
 */
export function applyIntentChange(
  record: BillingRecord,
  event: BillingEvent,
  now: Date,
  intent: MembershipIntent,
  options: ChangeOptions = {},
): BillingRecord {
  return applyChange(record, event, now, options, intent);
}

function applyChange(record: BillingRecord, event: BillingEvent, now: Date, options: ChangeOptions, intent: MembershipIntent | undefined): BillingRecord {
  const billing_status = billingTransitions.apply(record.billing_status, event);
  const after: BillingRecord = {
    ...withoutIntent(record),
    ...intentOfRecord(record, intent),
    ...stripIntent(options.set),
    billing_status,
    last_run_date: freshStamp(now, record.last_run_date),
    version: record.version + 1,
  };
  if (options.process) after.process = options.process;
  if (options.updatedEvent) after.updated_event = options.updatedEvent;
  if (isTerminalAfter(record, after)) after.completed_date ??= formatInstant(now);
  return madeBy(after, event);
}

/**
 * The event each after-image was made by, kept beside the image rather than on it (the primary
 * item never carries it) until `historyRowOf` writes it on the audit row as `billing_event`. A copy
 * of the image is a new write's business and carries no event.
 */
const madeByEvent = new WeakMap<BillingRecord, BillingEvent>();

function madeBy<T extends BillingRecord>(after: T, event: BillingEvent): T {
  madeByEvent.set(after, event);
  return after;
}

const INTENT_KEY_SET: ReadonlySet<string> = new Set<string>(INTENT_KEYS);

function withoutIntent(record: BillingRecord): BillingRecord {
  const copy: Record<string, unknown> = { ...record };
  for (const key of INTENT_KEY_SET) delete copy[key];
  return copy as BillingRecord;
}

function intentOfRecord(record: BillingRecord, replacement: MembershipIntent | undefined): MembershipIntent {
  return intentOf(replacement ?? record);
}

/** The type already forbids intent and chain keys in `set`; this keeps an untyped caller from dropping them too. */
function stripIntent(set: WritableAttributes | undefined): WritableAttributes {
  if (!set) return {};
  const copy: Record<string, unknown> = { ...set };
  for (const key of INTENT_KEY_SET) delete copy[key];
  delete copy.chain_id;
  return copy as WritableAttributes;
}

function isTerminalAfter(before: BillingRecord, after: BillingRecord): boolean {
  return before.billing_status !== after.billing_status && TERMINAL_STATUSES.has(after.billing_status);
}

/** The after-image of a saved failure: only the five attributes, the stamp and the version move. */
export function withFailure(record: BillingRecord, failure: BillingFailureFields, now: Date): BillingRecord & BillingFailureFields {
  return madeBy(
    {
      ...record,
      ...failure,
      last_run_date: freshStamp(now, record.last_run_date),
      version: record.version + 1,
    },
    'BILLING_FAILURE_RECORDED',
  );
}

/**
 * The after-image of `record` once its successor was moved to `successorDate` (a due-date change
 * of that period): only the chain link, the stamp and the version move; the status does not.
 */
export function withSuccessorLink(record: BillingRecord, successorDate: string, now: Date): BillingRecord {
  return {
    ...record,
    successor_billing_date: successorDate,
    updated_event: 'DUE_DATE_CHANGED',
    last_run_date: freshStamp(now, record.last_run_date),
    version: record.version + 1,
  };
}

/** The audit row for an after-image, with decision context and who/why where known. */
export function historyRowOf(
  after: BillingRecord,
  extra: DecisionContext & { actor?: string | undefined; reason?: string | undefined; run_id?: string | undefined; billing_event?: BillingEvent | undefined } = {},
): HistoryRow {
  const event = madeByEvent.get(after);
  const row: HistoryRow = { ...after, ...(event ? { billing_event: event } : {}) };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) (row as Record<string, unknown>)[k] = v;
  return row;
}

/** The due date of the period after `record` by its term, Friday billing and anchor day (no pause). */
export function nextPeriodDate(record: Pick<BillingRecord, 'billing_date' | 'term' | 'friday_billing' | 'billing_anchor_day'>): string {
  return formatInstant(
    nextBillingDate(toDate(record.billing_date), record.term, { fridayBilling: record.friday_billing, anchorDay: record.billing_anchor_day }),
  );
}

/**
 * The next period's record after `record` was attempted, skipped or written off: a new
 * subscription id, nothing attempted yet, status and date from the one successor rule
 * (`successorPlan`: PENDING, or still PAUSED while pause months remain), the intent inherited.
 * Undefined when the member's intent ends the chain there (a cancel request).
 */
export function successorRecord(
  record: BillingRecord,
  now: Date,
  ids: IdGenerator,
  stampAfter: string,
  overrides: { readonly process?: Process; readonly updated_event?: UpdatedEvent } = {},
): BillingRecord | undefined {
  const plan = successorPlan(record);
  if (!plan) return undefined;
  return {
    user_id: record.user_id,
    billing_date: plan.billing_date,
    subscription_id: ids.newId(),
    amount_cents: record.amount_cents,
    billing_status: plan.billing_status,
    last_run_date: freshStamp(now, stampAfter),
    created_date: formatInstant(now),
    process: overrides.process ?? record.process,
    term: record.term,
    tier: record.tier,
    payment_method: record.payment_method,
    payment_attempts: 0,
    version: 0,
    ...(record.account_last_four !== undefined ? { account_last_four: record.account_last_four } : {}),
    ...(record.friday_billing !== undefined ? { friday_billing: record.friday_billing } : {}),
    // The chain identity is inherited (chain.ts); a legacy chain's successor stays legacy.
    ...(record.chain_id !== undefined ? { chain_id: record.chain_id } : {}),
    ...(overrides.updated_event !== undefined ? { updated_event: overrides.updated_event } : {}),
    ...plan.intent,
  };
}

/** `successorRecord` with the member's intent changed on it (a membership event landing on a new period). */
export function withIntent(record: BillingRecord, intent: MembershipIntent, change: { readonly billing_status?: 'PENDING' | 'PAUSED'; readonly updated_event?: UpdatedEvent } = {}): BillingRecord {
  return { ...withoutIntent(record), ...intent, ...change };
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
  /** The membership event that opens the chain (NEW), remembered for replays. */
  readonly membership_event?: { readonly event_id: string; readonly occurred_at: string } | undefined;
  readonly process?: Process;
}

/** The first PENDING record of a new member: it opens a chain, whose id is its subscription id (chain.ts). */
export function firstBillingRecord(plan: NewMembershipPlan, now: Date, ids: IdGenerator): BillingRecord {
  const created = formatInstant(now);
  const subscriptionId = ids.newId();
  return {
    user_id: plan.user_id,
    billing_date: plan.first_billing_date,
    subscription_id: subscriptionId,
    chain_id: subscriptionId,
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
    ...(plan.membership_event !== undefined
      ? { membership_event_ids: [plan.membership_event.event_id], membership_event_at: plan.membership_event.occurred_at }
      : {}),
  };
}
