import { nextBillingDate } from './calendar.js';
import { INTENT_KEYS, intentOf, successorPlan, type IntentKey, type MembershipIntent } from './intent.js';
import type { BillingFailureFields } from './ladder.js';
import type { BillingEvent, BillingRecord, DecisionContext, HistoryRow, Process, UpdatedEvent } from './records.js';
import { TERMINAL_STATUSES } from './statuses.js';
import { formatInstant, toDate } from './time.js';
import { billingTransitions } from './transitions.js';

/** An exception's resolution, on its audit row only. */
type ResolutionFields = Partial<Pick<HistoryRow, 'resolution' | 'refund_id' | 'amount_difference_cents'>>;

/** Source of fresh identifiers (subscription ids, lock versions, claim tokens). */
export interface IdGenerator {
  newId(): string;
}

const STAMP_SEQUENCE = 1_000_000;
let stampCounter = 0;

/** The runtime starts each process at random, so two rarely share a sequence (a shared stamp is refused, never overwritten). */
export function startStampSequence(start: number): void {
  stampCounter = ((Math.trunc(start) % STAMP_SEQUENCE) + STAMP_SEQUENCE) % STAMP_SEQUENCE;
}

/** A `last_run_date` after `previous` and not before now; distinct within the process, so history keys never collide. */
export function freshStamp(now: Date, previous?: string): string {
  stampCounter = (stampCounter + 1) % STAMP_SEQUENCE;
  let ms = now.getTime();
  if (previous !== undefined) {
    const previousMs = toDate(previous).getTime();
    if (previousMs >= ms) ms = previousMs + 1;
  }
  return formatInstant(new Date(ms), stampCounter);
}

/** No writer's `set` may name the membership intent or the chain identity. */
type ProtectedKey = IntentKey | 'chain_id';

export type WritableAttributes = Partial<Omit<BillingRecord, ProtectedKey>>;

export interface ChangeOptions {
  readonly process?: Process;
  readonly updatedEvent?: UpdatedEvent;
  /** `undefined` removes the attribute. */
  readonly set?: WritableAttributes;
}

/** The after-image once `event` is applied: status from the transition table, a fresh stamp, version + 1, the intent kept. */
export function applyBillingEvent(record: BillingRecord, event: BillingEvent, now: Date, options: ChangeOptions = {}): BillingRecord {
  return applyChange(record, event, now, options, undefined);
}

/** For the writers that own the intent (membership events, a due-date change): `intent` replaces it whole. */
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

/** Beside the image, not on it: the primary item never carries `billing_event`, only its audit row. */
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

/** Keeps an untyped caller from dropping intent or chain keys the type already forbids. */
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

/** Its successor was moved by a due-date change: only the chain link, the stamp and the version move. */
export function withSuccessorLink(record: BillingRecord, successorDate: string, now: Date): BillingRecord {
  return {
    ...record,
    successor_billing_date: successorDate,
    updated_event: 'DUE_DATE_CHANGED',
    last_run_date: freshStamp(now, record.last_run_date),
    version: record.version + 1,
  };
}

export function historyRowOf(
  after: BillingRecord,
  extra: DecisionContext &
    Partial<Pick<HistoryRow, 'held_instrument_id' | 'hold_code' | 'hold_since'>> & { actor?: string | undefined; reason?: string | undefined; run_id?: string | undefined; billing_event?: BillingEvent | undefined } & ResolutionFields = {},
): HistoryRow {
  const event = madeByEvent.get(after);
  const row: HistoryRow = { ...after, ...(event ? { billing_event: event } : {}) };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) (row as Record<string, unknown>)[k] = v;
  return row;
}

/** The next period's date by the calendar alone (no pause). */
export function nextPeriodDate(record: Pick<BillingRecord, 'billing_date' | 'term' | 'friday_billing' | 'billing_anchor_day'>): string {
  return formatInstant(
    nextBillingDate(toDate(record.billing_date), record.term, { fridayBilling: record.friday_billing, anchorDay: record.billing_anchor_day }),
  );
}

/** The next period's record by the one successor rule (`successorPlan`); undefined when the intent ends the chain. */
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
    ...(record.chain_id !== undefined ? { chain_id: record.chain_id } : {}),
    ...(overrides.updated_event !== undefined ? { updated_event: overrides.updated_event } : {}),
    ...plan.intent,
  };
}

/** A membership event landing on a new period. */
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
  readonly membership_event?: { readonly event_id: string; readonly occurred_at: string } | undefined;
  readonly process?: Process;
}

/** The first record of a new member opens a chain named by its subscription id. */
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
