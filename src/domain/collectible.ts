import { dunningGate, dunningLapsed, type DunningHold } from './dunning.js';
import { dueKey, isHeldByLadder, failureState } from './ladder.js';
import { classifyReturnCode, MAX_ACH_REPRESENTMENTS, pastRepresentmentWindow } from './nacha.js';
import type { AccountSnapshot } from './ports.js';
import { COLLECTIBLE_STATUSES, type BillingRecord, type DecisionContext, type Process } from './records.js';
import { toDate } from './time.js';

/**
 * The gate of the collection attempt (DESIGN 3 step 3): the one "collectible and due" predicate,
 * the holds, and the balance gate. The collections planner, the balance webhook, memberships and
 * the operator actions all ask these, never an inline copy.
 */

/** Balances observed by a balance webhook (DESIGN 8 `POST /webhooks/balance`). */
export interface BalanceObservation {
  readonly institution_id?: string | undefined;
  readonly available_balance_cents: number;
  readonly current_balance_cents: number;
  readonly calc_available_balance_cents?: number | undefined;
  readonly threshold_cents: number;
}

/**
 * Holds that protect the payer or the rails (DESIGN 3.1). They bind every path: a person asking
 * (manual pay, retry-billing) may skip the waits of the ladder and of the daily retry, never these.
 * The code is the API's 409 code.
 */
export const HOLD_CODES = ['ach_authorization_required', 'ach_account_invalid', 'ach_representment_limit', 'card_disputed', 'payment_method_required'] as const;
export type HoldCode = (typeof HOLD_CODES)[number];

/** Customer-safe texts of the 409 answers. */
export const HOLD_MESSAGES: Readonly<Record<HoldCode, string>> = {
  ach_authorization_required: 'the account holder reported an ACH debit of this period as unauthorized: a new authorization is required before it is debited again',
  ach_account_invalid: 'the bank returned an ACH debit of this period for an account error (closed, missing or invalid account): a new account is required',
  ach_representment_limit: 'this ACH debit was already presented again as often as NACHA allows (twice within 180 days of the original entry)',
  card_disputed: 'the cardholder disputed a payment of this period: the card is not charged again',
  payment_method_required: 'the card on file was declined as one that will never be approved (lost, stolen, closed, ...): a new payment method is required',
};

export type NotDueReason = 'not_found' | 'status' | 'not_yet_due' | 'waiting' | 'parked' | 'exception' | HoldCode | DunningHold;

const HOLD_CODE_SET: ReadonlySet<string> = new Set(HOLD_CODES);
export function isHoldCode(reason: string): reason is HoldCode {
  return HOLD_CODE_SET.has(reason);
}

/** Paths started by a person: they bypass the daily-retry wait and the ladder's wait, never a hold. */
const PERSON_INITIATED: ReadonlySet<Process> = new Set(['MANUAL', 'OPERATOR_RETRY']);
/** Paths whose balance gate is the account's balance against the amount. */
const SCHEDULED_GATE: ReadonlySet<Process> = new Set(['SCHEDULED', 'RETRY']);
/** Paths that may advance an expired pause window (a payment path never skips a period). */
const PAUSE_RUNS: ReadonlySet<Process> = new Set(['PAUSE', 'BATCH']);

export function mayAdvancePause(process: Process): boolean {
  return PAUSE_RUNS.has(process);
}

export const GATE_CLOSED_ERROR = 'Insufficient available balance.';

/** Collectible (PENDING or FAILED) and its billing date has come: the period is owed now. */
export function isCollectibleAndDue(record: Pick<BillingRecord, 'billing_status' | 'billing_date'>, now: Date): boolean {
  return COLLECTIBLE_STATUSES.has(record.billing_status) && Date.parse(record.billing_date) <= now.getTime();
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
  // A card payment for another amount or currency was received (DESIGN 6.1): no automatic charge until a person looks.
  if (record.card_exception !== undefined && record.card_exception.code !== 'dispute_inquiry') return 'exception';
  if (isHeldByLadder(record, now)) return failureState(record) === 'parked' ? 'parked' : 'waiting';
  return dunning;
}

/**
 * The hold on a record, whatever path asks (DESIGN 3.1, 4): an unauthorized ACH return, an
 * account-error return, the R01/R09 re-presentment limit (two within 180 days of the original
 * entry, counted when each return is applied, so every path's presentment counts), an open card
 * dispute, a do_not_retry card decline.
 */
export function holdOf(record: BillingRecord, now: Date): HoldCode | undefined {
  if (record.payment_method === 'ach') {
    if (record.ach_unauthorized) return 'ach_authorization_required';
    if (record.ach_blocked) return blockedByRepresentmentLimit(record, now) ? 'ach_representment_limit' : 'ach_account_invalid';
    if (representedPastWindow(record, now)) return 'ach_representment_limit';
  }
  if (record.card_disputed) return 'card_disputed';
  // A do_not_retry card decline (DESIGN 5b): only a new payment method restarts it.
  if (record.billing_status === 'FAILED' && record.decline_class === 'do_not_retry') return 'payment_method_required';
  return undefined;
}

/** Why ACH is blocked: the last return's code; a record blocked before the code was kept is judged by its counters. */
function blockedByRepresentmentLimit(record: BillingRecord, now: Date): boolean {
  if (record.ach_return_code !== undefined) return classifyReturnCode(record.ach_return_code) === 'represent';
  return (record.ach_represented ?? 0) >= MAX_ACH_REPRESENTMENTS || representedPastWindow(record, now);
}

/** A returned debit may be re-presented only within 180 days of the original entry (NACHA). */
function representedPastWindow(record: BillingRecord, now: Date): boolean {
  if (!record.ach_represented || record.ach_original_entry_date === undefined) return false;
  return pastRepresentmentWindow(record.ach_original_entry_date, now);
}

export interface BalanceDecision {
  readonly open: boolean;
  readonly context: DecisionContext;
}

/** The balance gate and the decision context it observed (DESIGN 2.5); consults nothing new. */
export function balanceDecision(record: BillingRecord, account: AccountSnapshot, process: Process, balance?: BalanceObservation): BalanceDecision {
  const context: DecisionContext = { data_payment_method: record.payment_method };
  const observe = <K extends keyof DecisionContext>(key: K, value: DecisionContext[K] | undefined) => {
    if (value !== undefined) context[key] = value;
  };
  if (balance) {
    observe('data_institution_id', balance.institution_id ?? account.institution_id);
    observe('data_available_balance_cents', balance.available_balance_cents);
    observe('data_current_balance_cents', balance.current_balance_cents);
    observe('data_calc_available_balance_cents', balance.calc_available_balance_cents);
    observe('data_threshold_cents', balance.threshold_cents);
    observe('data_debit_card_valid', account.debit_card_valid);
    observe('data_blocklisted', account.blocklisted);
    const source = balance.calc_available_balance_cents !== undefined ? 'calc_available' : 'available';
    const observed = source === 'calc_available' ? balance.calc_available_balance_cents! : balance.available_balance_cents;
    context.data_balance_source = source;
    const open = observed >= Math.max(balance.threshold_cents, record.amount_cents) && account.blocklisted !== true;
    return { open, context };
  }
  if (SCHEDULED_GATE.has(process) && record.payment_method !== 'card') {
    observe('data_institution_id', account.institution_id);
    observe('data_available_balance_cents', account.available_balance_cents);
    observe('data_current_balance_cents', account.current_balance_cents);
    observe('data_institution_unreliable', account.institution_unreliable);
    const source = account.available_balance_cents !== undefined ? 'available' : account.current_balance_cents !== undefined ? 'current' : undefined;
    if (source === undefined) return { open: true, context };
    context.data_balance_source = source;
    const observed = source === 'available' ? account.available_balance_cents! : account.current_balance_cents!;
    let open = observed >= record.amount_cents;
    if (!open && process === 'SCHEDULED' && account.ml_override !== undefined) {
      context.data_ml_override = account.ml_override;
      open = account.ml_override;
    }
    return { open, context };
  }
  if (process === 'MANUAL') {
    observe('data_institution_id', account.institution_id);
    observe('data_debit_card_valid', account.debit_card_valid);
  }
  return { open: true, context };
}


/**
 * The attempt's lock replaced an expired lease whose holder was attempting this period (or held the
 * user for a use case that attempts several, so no purpose): that holder died or lost its release,
 * and the processor may already hold a charge under this period's key that no record shows. The
 * attempt then resends that same key before the balance gate is consulted: the processor answers
 * with the charge it took (never a second one for one key), and a closed gate cannot hide it.
 */
export function repairsUnrecordedAttempt(
  takenOver: { readonly purpose?: string; readonly lease_expires_at?: number } | undefined,
  record: Pick<BillingRecord, 'billing_date' | 'billing_status' | 'payment_attempts' | 'billing_presented_for'>,
): boolean {
  return (takenOver !== undefined && (takenOver.purpose === undefined || leaseNames(takenOver, record))) || isPresentedUnrecorded(record);
}

/**
 * The dead lease named this period's current work: its billing date (an attempt's own lock, released
 * by its commit, so a dead one committed nothing) or its due key (a holder attempting several periods
 * under one lock names each before its attempt; a later attempt number means that one was recorded).
 * Only while the period was due: no path presents a period before its billing date, so a holder whose
 * lease ran out before that date (a manual pay of a period not yet due that died) presented nothing,
 * and a BAN after it must not leave the period owed (long run 9, seed 999000152).
 */
function leaseNames(
  takenOver: { readonly purpose?: string; readonly lease_expires_at?: number },
  record: Pick<BillingRecord, 'billing_date' | 'payment_attempts'>,
): boolean {
  if (takenOver.purpose !== record.billing_date && takenOver.purpose !== dueKey(record)) return false;
  return takenOver.lease_expires_at === undefined || toDate(record.billing_date).getTime() <= takenOver.lease_expires_at;
}

/**
 * A failed attempt presented this period's current key to the processor and no result is recorded
 * for it (`billing_presented_for` is the due key, DESIGN 5): the processor may hold a charge under
 * `{subscription_id}:{payment_attempts + 1}`. Only an attempt resending that key can tell.
 */
export function isPresentedUnrecorded(record: Pick<BillingRecord, 'billing_date' | 'billing_status' | 'payment_attempts' | 'billing_presented_for'>): boolean {
  return COLLECTIBLE_STATUSES.has(record.billing_status) && record.billing_presented_for !== undefined && record.billing_presented_for === dueKey(record);
}

export const ATTEMPT_OUTCOME_UNKNOWN = 'attempt_outcome_unknown';
export const ATTEMPT_OUTCOME_UNKNOWN_MESSAGE =
  'an attempt of this period reached the payment processor and its outcome is not recorded: the processor may hold the payment. ' +
  'retry-billing resolves it with the same idempotency key (never a second charge: a payment the processor took is recorded, otherwise the period is charged now); ' +
  'the scheduled retry does the same. Then the period can be waived (a taken payment is refunded as usual).';

/**
 * The one rule for a write that closes a period without collecting it (waive, cancel): it must not
 * close blind a period whose current key the processor may hold — a failed attempt presented it
 * (`isPresentedUnrecorded`), or the lock this write took replaced a dead holder's lease naming this
 * period (it died between the processor and its write). Closing it would leave a charge the
 * processor took on no record; resending the key to find out would charge a period being closed.
 */
export function mayHoldUnrecordedCharge(
  record: Pick<BillingRecord, 'billing_date' | 'billing_status' | 'payment_attempts' | 'billing_presented_for'>,
  takenOver?: { readonly purpose?: string; readonly lease_expires_at?: number },
): boolean {
  if (!COLLECTIBLE_STATUSES.has(record.billing_status)) return false;
  return isPresentedUnrecorded(record) || (takenOver?.purpose !== undefined && leaseNames(takenOver, record));
}

/**
 * How far the account directory's clock may run behind ours: a status change this close to a
 * lease's `held_since` is taken as possibly after the holder's account check.
 */
export const ACCOUNT_CLOCK_SKEW_MS = 1_000;

/**
 * The account gate of an attempt whose lock replaced a dead holder's lease (`takenOver`), with the
 * account not active now: may that holder have presented the period's key? Every path checks the
 * account under its lock before it presents (the one attempt), and a holder that resends a dead
 * one's key past the gate carries that lease's `held_since` (`carryHeldSince`). So when the account
 * has been in its status since before the dead lease was held (`status_since` before `held_since` less
 * the clock skew), its holder found the account not active and presented nothing: the lease is no
 * evidence for this gate, and the period is deactivated rather than charged (long run of stop 24,
 * seed 374700011: a NEW after a BAN, the attempt died after the account answered, its redelivery
 * resent the key and charged the banned member). Without either instant the lease counts (F11).
 */
export function deadHolderFoundAccountInactive(
  takenOver: { readonly held_since?: number } | undefined,
  account: Pick<AccountSnapshot, 'status' | 'status_since'>,
  skewMs = ACCOUNT_CLOCK_SKEW_MS,
): boolean {
  if (account.status === 'active' || takenOver?.held_since === undefined || account.status_since === undefined) return false;
  const since = Date.parse(account.status_since);
  return Number.isFinite(since) && since < takenOver.held_since - skewMs;
}
