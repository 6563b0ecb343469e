import type { DeclineClassification } from './declines.js';
import type { BillingRecord, CardNetwork, DeclineClass, PaymentMethod, Process } from './records.js';
import { formatInstant } from './time.js';

/**
 * The dunning policy (DESIGN 5b): what a decline says about the next automatic attempt of a
 * declined period. Pure: one classification table, the retry schedule, the card networks' reattempt
 * ceilings, and the state they leave on the record. A decline is an outcome, not a system failure
 * (that is the ladder of DESIGN 5).
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Automatic attempts of a `retry_later` period, in days after its first decline (Stripe's Smart
 * Retries budget, DESIGN 5b): the first attempt plus these seven, at most 8 attempts in 14 days.
 */
export const DUNNING_RETRY_DAYS: readonly number[] = [1, 2, 3, 5, 7, 10, 14];
export const MAX_DUNNING_ATTEMPTS = DUNNING_RETRY_DAYS.length + 1;
/**
 * How late a run may still take the last slot (day 14). Slots fall on the first decline's instant,
 * and the run that reaches one comes after it (every 15 minutes in production): without a grace the
 * day-14 slot could never be taken and a cycle would get 7 attempts, not the schedule's 8. An hour
 * covers a late or retried run; a run later than that (the schedule down for longer) presents nothing.
 */
export const DUNNING_LATE_RUN_GRACE_MS = 60 * 60 * 1000;
/**
 * The cycle's window: no automatic attempt later than this after the first decline (Smart Retries'
 * 8 attempts in 14 days, the last slot taken by a run at most DUNNING_LATE_RUN_GRACE_MS late). A
 * run that comes later spends nothing and records the exhaustion.
 */
export const DUNNING_WINDOW_MS = DUNNING_RETRY_DAYS[DUNNING_RETRY_DAYS.length - 1]! * DAY_MS + DUNNING_LATE_RUN_GRACE_MS;

/** A FAILED period that is not in dunning (a closed balance gate, an ACH return) waits this long after its last attempt (DESIGN 3). */
export const DAILY_RETRY_MS = DAY_MS;

export interface NetworkCeiling {
  readonly windowMs: number;
  readonly max: number;
}

/**
 * Reattempts of one card the networks allow (DESIGN 5b): Visa 20 in 30 days (none after a
 * category-1 decline: classified do_not_retry above); Mastercard 10 in 24 hours and 35 in 30 days.
 * A card whose network is not known gets both networks' ceilings.
 */
export const NETWORK_CEILINGS: Readonly<Record<CardNetwork, readonly NetworkCeiling[]>> = {
  visa: [{ windowMs: 30 * DAY_MS, max: 20 }],
  mastercard: [
    { windowMs: DAY_MS, max: 10 },
    { windowMs: 30 * DAY_MS, max: 35 },
  ],
  other: [
    { windowMs: DAY_MS, max: 10 },
    { windowMs: 30 * DAY_MS, max: 20 },
  ],
};
const LONGEST_WINDOW_MS = 30 * DAY_MS;

/** Paths a customer starts (DESIGN 2.3): everything else is merchant-initiated and counts against the ceilings. */
export function isCustomerInitiated(process: Process): boolean {
  return process === 'MANUAL';
}

/** The rails whose reattempts the card networks count. */
function isCardRail(rail: PaymentMethod): boolean {
  return rail === 'card' || rail === 'pinless';
}

/** The dunning attributes of a period (docs/decisions.md names them). */
export type DunningFields = Pick<
  BillingRecord,
  | 'decline_code'
  | 'decline_class'
  | 'dunning_first_declined_at'
  | 'dunning_attempts'
  | 'dunning_next_attempt_at'
  | 'dunning_presented_at'
  | 'card_network'
>;

/** Every dunning attribute removed (a success, an operator reset keeps only the ceiling memory). */
export const CLEARED_DUNNING: { [K in keyof DunningFields]: undefined } = {
  decline_code: undefined,
  decline_class: undefined,
  dunning_first_declined_at: undefined,
  dunning_attempts: undefined,
  dunning_next_attempt_at: undefined,
  dunning_presented_at: undefined,
  card_network: undefined,
};

type DunningInputs = Pick<BillingRecord, keyof DunningFields | 'billing_status' | 'payment_method' | 'last_attempt_date' | 'billing_date'>;

/** Merchant-initiated presentments of this card within the longest ceiling window before `now`. */
function recentPresentments(record: Pick<BillingRecord, 'dunning_presented_at'>, now: Date): number[] {
  const from = now.getTime() - LONGEST_WINDOW_MS;
  return (record.dunning_presented_at ?? []).map((t) => Date.parse(t)).filter((t) => t > from && t <= now.getTime()).sort((a, b) => a - b);
}

/** The earliest instant at or after `at` at which one more presentment stays within every ceiling. */
export function ceilingFreeAt(presented: readonly number[], network: CardNetwork | undefined, at: number): number {
  let free = at;
  for (const ceiling of NETWORK_CEILINGS[network ?? 'other']) {
    // One more is allowed at x when fewer than `max` presentments lie in (x - window, x].
    if (presented.length >= ceiling.max) free = Math.max(free, presented[presented.length - ceiling.max]! + ceiling.windowMs);
  }
  return free;
}

/** True when one more merchant-initiated presentment now would exceed a network ceiling. */
export function atNetworkCeiling(record: DunningInputs, now: Date): boolean {
  if (!isCardRail(record.payment_method)) return false;
  return ceilingFreeAt(recentPresentments(record, now), record.card_network, now.getTime()) > now.getTime();
}

/** The next scheduled slot strictly after `now` for a cycle with `attempts` used, no earlier than `notBefore`. */
function nextSlot(firstDeclinedAt: number, attempts: number, now: number, notBefore: number): number | undefined {
  if (attempts >= MAX_DUNNING_ATTEMPTS) return undefined;
  for (let k = Math.max(0, attempts - 1); k < DUNNING_RETRY_DAYS.length; k++) {
    const slot = firstDeclinedAt + DUNNING_RETRY_DAYS[k]! * DAY_MS;
    if (slot > now && slot >= notBefore) return slot;
  }
  return undefined;
}

export interface DeclineInput {
  readonly classification: DeclineClassification;
  readonly card_network?: CardNetwork | undefined;
  readonly process: Process;
  /** False when nothing reached the bank (a closed balance gate): the slot is spent, no presentment counted. */
  readonly presented: boolean;
}

/**
 * The dunning attributes after a decline at `now` (the record as read). The first decline of the
 * period starts the cycle; a merchant-initiated decline spends a slot and is counted against the
 * card's ceilings; a customer-initiated one (manual pay) records the codes but spends nothing.
 * Any class but `retry_later`, or no slot left, ends automatic attempts: exhausted.
 */
export function dunningAfterDecline(record: DunningInputs, input: DeclineInput, now: Date): DunningFields {
  const at = now.getTime();
  const merchant = !isCustomerInitiated(input.process);
  const inCycle = record.dunning_first_declined_at !== undefined;
  const first = inCycle ? Date.parse(record.dunning_first_declined_at!) : at;
  const attempts = (inCycle ? (record.dunning_attempts ?? 0) : 0) + (merchant || !inCycle ? 1 : 0);
  const network = input.card_network ?? record.card_network;
  const presented = recentPresentments(record, now);
  if (merchant && input.presented && isCardRail(record.payment_method)) presented.push(at);
  const cls = input.classification.decline_class;
  const slot = cls === 'retry_later' ? nextSlot(first, attempts, at, isCardRail(record.payment_method) ? ceilingFreeAt(presented, network, at) : at) : undefined;
  return {
    decline_code: input.classification.decline_code,
    decline_class: cls,
    dunning_first_declined_at: formatInstant(new Date(first)),
    dunning_attempts: attempts,
    dunning_next_attempt_at: slot === undefined ? undefined : formatInstant(new Date(slot)),
    dunning_presented_at: presented.length > 0 ? presented.map((t) => formatInstant(new Date(t))) : undefined,
    card_network: network,
  };
}

/**
 * Operator retry (DESIGN 5b): the schedule starts again with the next decline. The codes and the
 * cycle go; the card's presentments stay, since the networks' ceilings do not reset for us.
 */
export function resetDunning(record: Pick<BillingRecord, 'dunning_presented_at' | 'card_network'>): DunningFields {
  return { ...CLEARED_DUNNING, dunning_presented_at: record.dunning_presented_at, card_network: record.card_network };
}

/** A period in a dunning cycle: FAILED after a classified decline. */
export function isInDunning(record: Pick<BillingRecord, 'billing_status' | 'decline_class'>): boolean {
  return record.billing_status === 'FAILED' && record.decline_class !== undefined;
}

export type DunningState = 'retrying' | 'exhausted';

type StateInputs = Pick<BillingRecord, 'billing_status' | 'decline_class' | 'dunning_next_attempt_at' | 'dunning_first_declined_at'>;

/**
 * The period's dunning state. Without `now`, as stored (what the last write left: the index
 * partitions, a history row's own instant); with `now`, as it is then: a stored `retrying` cycle
 * whose window has ended is `exhausted` even before a run records it (`dunningLapsed`).
 */
export function dunningState(record: StateInputs, now?: Date): DunningState | undefined {
  if (!isInDunning(record)) return undefined;
  if (record.decline_class !== 'retry_later' || record.dunning_next_attempt_at === undefined) return 'exhausted';
  return now !== undefined && dunningLapsed(record, now) ? 'exhausted' : 'retrying';
}

/** The last instant of the period's cycle (its first decline + 14 days + the late-run grace), or undefined outside a cycle. */
export function dunningWindowEndsAt(record: Pick<BillingRecord, 'dunning_first_declined_at'>): number | undefined {
  if (record.dunning_first_declined_at === undefined) return undefined;
  return Date.parse(record.dunning_first_declined_at) + DUNNING_WINDOW_MS;
}

/**
 * The stored schedule still names a next attempt but the cycle's window is over at `now` (no run
 * came between the slot and the window's end): no automatic path presents it, and the first one to
 * read it records the exhaustion (collect.ts), which takes it out of the due-index.
 */
export function dunningLapsed(record: StateInputs, now: Date): boolean {
  if (!isInDunning(record) || record.decline_class !== 'retry_later' || record.dunning_next_attempt_at === undefined) return false;
  const end = dunningWindowEndsAt(record);
  return end !== undefined && now.getTime() > end;
}

/** The first instant at which a stored `retrying` cycle has lapsed (its window's end + 1 ms), or undefined. */
export function dunningLapsesAt(record: StateInputs): number | undefined {
  if (!isInDunning(record) || record.decline_class !== 'retry_later' || record.dunning_next_attempt_at === undefined) return undefined;
  const end = dunningWindowEndsAt(record);
  return end === undefined ? undefined : end + 1;
}

/** The dunning attributes once a lapsed cycle is recorded exhausted: no next attempt; codes, count and ceilings stay. */
export const EXHAUSTED_DUNNING: Pick<DunningFields, 'dunning_next_attempt_at'> = { dunning_next_attempt_at: undefined };

/**
 * When an automatic path may next attempt a FAILED period: the dunning slot, never for an exhausted
 * one, or 24 h after the last attempt for a FAILED period that is not in dunning. Undefined for an
 * exhausted period; not meaningful for other statuses. The gate and the planner's index both use it.
 */
export function nextAutomaticAttemptAt(record: DunningInputs): string | undefined {
  const state = dunningState(record);
  if (state === 'retrying') return record.dunning_next_attempt_at;
  if (state === 'exhausted') return undefined;
  if (record.last_attempt_date === undefined) return record.billing_date;
  return formatInstant(new Date(Date.parse(record.last_attempt_date) + DAILY_RETRY_MS));
}

export type DunningHold = 'not_yet_due' | 'exhausted' | 'network_ceiling';

/**
 * Why dunning keeps `process` from attempting the FAILED period now, or undefined. A customer's
 * manual pay skips the schedule; an operator retry (it resets the schedule first) and every
 * automatic path stay within the networks' ceilings. A do_not_retry decline is a hold on every
 * path (collectible.ts `holdOf`, 409 `payment_method_required` for a person).
 */
export function dunningGate(record: DunningInputs, now: Date, process: Process): DunningHold | undefined {
  if (record.billing_status !== 'FAILED') return undefined;
  if (isCustomerInitiated(process)) return undefined;
  if (process !== 'OPERATOR_RETRY') {
    // The window is over (a run that came late): nothing is presented, whatever slot is stored.
    if (dunningLapsed(record, now)) return 'exhausted';
    const next = nextAutomaticAttemptAt(record);
    if (next === undefined) return 'exhausted';
    if (Date.parse(next) > now.getTime()) return 'not_yet_due';
  }
  if (atNetworkCeiling(record, now)) return 'network_ceiling';
  return undefined;
}

/** `dunning` as every read of a declined period shows it (DESIGN 5b), or undefined. */
export interface DunningView {
  readonly state: DunningState;
  readonly attempts: number;
  readonly next_attempt_at: string | null;
  readonly decline_code: string;
  readonly decline_class: DeclineClass;
}

/** At `now` (a read): a cycle whose window has ended reads `exhausted` with no next attempt, recorded or not; without it, as written. */
export function dunningView(record: Pick<BillingRecord, 'billing_status' | keyof DunningFields>, now?: Date): DunningView | undefined {
  const state = dunningState(record, now);
  if (!state) return undefined;
  return {
    state,
    attempts: record.dunning_attempts ?? 0,
    next_attempt_at: state === 'retrying' ? record.dunning_next_attempt_at! : null,
    decline_code: record.decline_code ?? '',
    decline_class: record.decline_class!,
  };
}
