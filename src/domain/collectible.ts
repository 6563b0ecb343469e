import { classifyReturnCode, MAX_ACH_REPRESENTMENTS, pastRepresentmentWindow } from './nacha.js';
import type { AccountSnapshot } from './ports/account-directory.js';
import type { BillingRecord, DecisionContext, Process } from './records.js';
import { COLLECTIBLE_STATUSES } from './statuses.js';

/** Whether a period is owed now, its holds, and the balance gate (DESIGN 3): every path asks these, never a copy. */

/** Balances observed by a balance webhook. */
export interface BalanceObservation {
  readonly institution_id?: string | undefined;
  readonly available_balance_cents: number;
  readonly current_balance_cents: number;
  readonly calc_available_balance_cents?: number | undefined;
  readonly threshold_cents: number;
}

/** Holds protect the payer or the rails (DESIGN 3.1): they bind every path, a person's included (409). */
export { HOLD_CODES, HOLD_MESSAGES, isHoldCode, type HoldCode } from './instruments/holds.js';
import type { HoldCode } from './instruments/holds.js';

/** Not a hold on the payer: the period received a payment that does not match it, for an operator to resolve (409). */
export const PAYMENT_EXCEPTION_CODE = 'payment_exception';
export const PAYMENT_EXCEPTION_MESSAGE =
  'this period received a card payment for another amount or currency: an operator resolves it (refund or waive) before it is charged again';

const SCHEDULED_GATE: ReadonlySet<Process> = new Set(['SCHEDULED', 'RETRY']);
export const GATE_CLOSED_ERROR = 'Insufficient available balance.';

/** Collectible and its billing date has come: the period is owed now. */
export function isCollectibleAndDue(record: Pick<BillingRecord, 'billing_status' | 'billing_date'>, now: Date): boolean {
  return COLLECTIBLE_STATUSES.has(record.billing_status) && Date.parse(record.billing_date) <= now.getTime();
}

/** Re-presentments are counted when each return is applied, so every path's presentment counts toward the limit. */
export function holdOf(record: BillingRecord, now: Date): HoldCode | undefined {
  if (record.payment_method === 'ach') {
    if (record.ach_unauthorized) return 'ach_authorization_required';
    if (record.ach_blocked) return blockedByRepresentmentLimit(record, now) ? 'ach_representment_limit' : 'ach_account_invalid';
    if (representedPastWindow(record, now)) return 'ach_representment_limit';
  }
  if (record.card_disputed) return 'card_disputed';
  // Only a new payment method restarts it.
  if (record.billing_status === 'FAILED' && record.decline_class === 'do_not_retry') return 'payment_method_required';
  return undefined;
}

/** By the last return's code; a record blocked before the code was kept is judged by its counters. */
function blockedByRepresentmentLimit(record: BillingRecord, now: Date): boolean {
  if (record.ach_return_code !== undefined) return classifyReturnCode(record.ach_return_code) === 'represent';
  return (record.ach_represented ?? 0) >= MAX_ACH_REPRESENTMENTS || representedPastWindow(record, now);
}

function representedPastWindow(record: BillingRecord, now: Date): boolean {
  if (!record.ach_represented || record.ach_original_entry_date === undefined) return false;
  return pastRepresentmentWindow(record.ach_original_entry_date, now);
}

export interface BalanceDecision {
  readonly open: boolean;
  readonly context: DecisionContext;
}

/** The balance gate and the decision context it observed (DESIGN 2.5). */
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
