import type { DeclineClassification } from './declines.js';
import type { BillingRecord, CardNetwork, DeclineClass, PaymentMethod, Process } from './records.js';
import { formatInstant } from './time.js';

/**
 * The dunning policy (DESIGN 5b): the retry schedule of a declined period, the card networks'
 * reattempt ceilings, and the state they leave. A decline is an outcome; system failures climb the ladder.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** Days after the first decline (Stripe's Smart Retries budget): at most 8 attempts in 14 days. */
export const DUNNING_RETRY_DAYS: readonly number[] = [1, 2, 3, 5, 7, 10, 14];
export const MAX_DUNNING_ATTEMPTS = DUNNING_RETRY_DAYS.length + 1;
/** The run reaching the day-14 slot always comes after it: without a grace a cycle would get 7 attempts, not 8. */
export const DUNNING_LATE_RUN_GRACE_MS = 60 * 60 * 1000;
/** No automatic attempt later than this after the first decline: a later run records the exhaustion. */
export const DUNNING_WINDOW_MS = DUNNING_RETRY_DAYS[DUNNING_RETRY_DAYS.length - 1]! * DAY_MS + DUNNING_LATE_RUN_GRACE_MS;

/** The wait of a FAILED period outside dunning (a closed balance gate, an ACH return). */
export const DAILY_RETRY_MS = DAY_MS;

export interface NetworkCeiling {
  readonly windowMs: number;
  readonly max: number;
}

/** Reattempts of one card the networks allow; an unknown network gets the stricter of both. */
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

/** Everything else is merchant-initiated and counts against the ceilings. */
export function isCustomerInitiated(process: Process): boolean {
  return process === 'MANUAL';
}

function isCardRail(rail: PaymentMethod): boolean {
  return rail === 'card' || rail === 'pinless';
}

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

/** A success removes every dunning attribute. */
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

function recentPresentments(record: Pick<BillingRecord, 'dunning_presented_at'>, now: Date): number[] {
  const from = now.getTime() - LONGEST_WINDOW_MS;
  return (record.dunning_presented_at ?? []).map((t) => Date.parse(t)).filter((t) => t > from && t <= now.getTime()).sort((a, b) => a - b);
}

export function ceilingFreeAt(presented: readonly number[], network: CardNetwork | undefined, at: number): number {
  let free = at;
  for (const ceiling of NETWORK_CEILINGS[network ?? 'other']) {
    // One more is allowed at x when fewer than `max` presentments lie in (x - window, x].
    if (presented.length >= ceiling.max) free = Math.max(free, presented[presented.length - ceiling.max]! + ceiling.windowMs);
  }
  return free;
}

export function atNetworkCeiling(record: DunningInputs, now: Date): boolean {
  if (!isCardRail(record.payment_method)) return false;
  return ceilingFreeAt(recentPresentments(record, now), record.card_network, now.getTime()) > now.getTime();
}

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
  /** False for a closed balance gate: the slot is spent, no presentment counted. */
  readonly presented: boolean;
}

/** A merchant-initiated decline spends a slot and counts against the ceilings; a manual pay's records the codes only. */
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

/** An operator retry restarts the schedule; the card's presentments stay (the networks do not reset for us). */
export function resetDunning(record: Pick<BillingRecord, 'dunning_presented_at' | 'card_network'>): DunningFields {
  return { ...CLEARED_DUNNING, dunning_presented_at: record.dunning_presented_at, card_network: record.card_network };
}

export function isInDunning(record: Pick<BillingRecord, 'billing_status' | 'decline_class'>): boolean {
  return record.billing_status === 'FAILED' && record.decline_class !== undefined;
}

export type DunningState = 'retrying' | 'exhausted';

type StateInputs = Pick<BillingRecord, 'billing_status' | 'decline_class' | 'dunning_next_attempt_at' | 'dunning_first_declined_at'>;

/** Without `now`, as stored; with `now`, a cycle whose window has ended is `exhausted` before a run records it. */
export function dunningState(record: StateInputs, now?: Date): DunningState | undefined {
  if (!isInDunning(record)) return undefined;
  if (record.decline_class !== 'retry_later' || record.dunning_next_attempt_at === undefined) return 'exhausted';
  return now !== undefined && dunningLapsed(record, now) ? 'exhausted' : 'retrying';
}

export function dunningWindowEndsAt(record: Pick<BillingRecord, 'dunning_first_declined_at'>): number | undefined {
  if (record.dunning_first_declined_at === undefined) return undefined;
  return Date.parse(record.dunning_first_declined_at) + DUNNING_WINDOW_MS;
}

/** The stored schedule names a next attempt but the window is over: the first run to read it records the exhaustion. */
export function dunningLapsed(record: StateInputs, now: Date): boolean {
  if (!isInDunning(record) || record.decline_class !== 'retry_later' || record.dunning_next_attempt_at === undefined) return false;
  const end = dunningWindowEndsAt(record);
  return end !== undefined && now.getTime() > end;
}

export function dunningLapsesAt(record: StateInputs): number | undefined {
  if (!isInDunning(record) || record.decline_class !== 'retry_later' || record.dunning_next_attempt_at === undefined) return undefined;
  const end = dunningWindowEndsAt(record);
  return end === undefined ? undefined : end + 1;
}

export const EXHAUSTED_DUNNING: Pick<DunningFields, 'dunning_next_attempt_at'> = { dunning_next_attempt_at: undefined };

/** When an automatic path may next attempt a FAILED period: its dunning slot, or the daily retry outside dunning. */
export function nextAutomaticAttemptAt(record: DunningInputs): string | undefined {
  const state = dunningState(record);
  if (state === 'retrying') return record.dunning_next_attempt_at;
  if (state === 'exhausted') return undefined;
  if (record.last_attempt_date === undefined) return record.billing_date;
  return formatInstant(new Date(Date.parse(record.last_attempt_date) + DAILY_RETRY_MS));
}

export type DunningHold = 'not_yet_due' | 'exhausted' | 'network_ceiling';

/** Why dunning keeps `process` from the FAILED period now: a manual pay skips it, everything else keeps the ceilings. */
export function dunningGate(record: DunningInputs, now: Date, process: Process): DunningHold | undefined {
  if (record.billing_status !== 'FAILED') return undefined;
  if (isCustomerInitiated(process)) return undefined;
  if (process !== 'OPERATOR_RETRY') {
    if (dunningLapsed(record, now)) return 'exhausted';
    const next = nextAutomaticAttemptAt(record);
    if (next === undefined) return 'exhausted';
    if (Date.parse(next) > now.getTime()) return 'not_yet_due';
  }
  if (atNetworkCeiling(record, now)) return 'network_ceiling';
  return undefined;
}

/** `dunning` as every read of a declined period shows it. */
export interface DunningView {
  readonly state: DunningState;
  readonly attempts: number;
  readonly next_attempt_at: string | null;
  readonly decline_code: string;
  readonly decline_class: DeclineClass;
}

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
