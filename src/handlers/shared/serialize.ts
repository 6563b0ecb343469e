import { dunningView, type DunningView } from '../../domain/dunning.js';
import { billingFailureView, type BillingFailureView } from '../../domain/ladder.js';
import { centsToDollars } from '../../domain/money.js';
import type { Page } from '../../domain/ports/page.js';
import type { BillingRecord, DisplayStatus, HistoryRow } from '../../domain/records.js';
import type { LoanPayment, LoanPaymentHistoryRow } from '../../domain/loan-payments.js';
import { displayStatus } from '../../domain/statuses.js';

/**
 * What the API answers (DESIGN 8): the table's attribute names, `amount` as "19.99" plus
 * `amount_cents`, `billing_failure` when live, `dunning` on a declined period, PASTDUE on read.
 * Internal bookkeeping (version, markers, counters) is left out: clients cannot act on it and it
 * would read as business data. Absent attributes are left out, not null.
 */

export interface SubscriptionView {
  readonly user_id: string;
  readonly billing_date: string;
  readonly subscription_id: string;
  readonly amount: string;
  readonly amount_cents: number;
  readonly billing_status: DisplayStatus;
  readonly billing_failure?: BillingFailureView;
  readonly dunning?: DunningView;
  readonly [attribute: string]: unknown;
}

/** DESIGN 2.1 attributes shown as stored, in table order (amount and status are handled apart). */
const RECORD_ATTRIBUTES = [
  'transaction_id',
  'payment_error',
  'first_attempt_date',
  'completed_date',
  'last_run_date',
  'created_date',
  'process',
  'updated_event',
  'term',
  'account_last_four',
  'tier',
  'payment_method',
  'friday_billing',
  'paused_months',
  'payment_attempts',
  'last_attempt_date',
  'ach_exception',
  'card_exception',
  'decline_code',
  'decline_class',
  'amount_received_cents',
] as const satisfies readonly (keyof BillingRecord)[];

const HISTORY_ATTRIBUTES = [
  'data_payment_method',
  'data_institution_id',
  'data_available_balance_cents',
  'data_current_balance_cents',
  'data_calc_available_balance_cents',
  'data_balance_source',
  'data_threshold_cents',
  'data_debit_card_valid',
  'data_blocklisted',
  'data_ml_override',
  'data_institution_unreliable',
  'actor',
  'reason',
  'run_id',
  'billing_event',
  'resolution',
  'refund_id',
  'amount_difference_cents',
] as const satisfies readonly (keyof HistoryRow)[];

function copyPresent<T extends object>(target: Record<string, unknown>, source: T, names: readonly (keyof T)[]): void {
  for (const name of names) {
    const value = source[name];
    if (value !== undefined) target[name as string] = value;
  }
}

/** `now`: dunning as it is then (a read); absent: as written (an audit row). */
function recordView(record: BillingRecord, status: DisplayStatus, now?: Date): Record<string, unknown> {
  const view: Record<string, unknown> = {
    user_id: record.user_id,
    billing_date: record.billing_date,
    subscription_id: record.subscription_id,
    amount: centsToDollars(record.amount_cents),
    amount_cents: record.amount_cents,
    billing_status: status,
  };
  copyPresent(view, record, RECORD_ATTRIBUTES);
  const failure = billingFailureView(record);
  if (failure) view.billing_failure = failure;
  const dunning = dunningView(record, now);
  if (dunning) view.dunning = dunning;
  return view;
}

/** A billing record as every subscription read shows it, PASTDUE judged at `now`. */
export function serializeSubscription(record: BillingRecord, now: Date): SubscriptionView {
  return recordView(record, displayStatus(record, now), now) as SubscriptionView;
}

/**
 * An audit row: the record as it was written (stored status, the failure as it stood then),
 * plus the decision context and who did it and why.
 */
export function serializeHistoryRow(row: HistoryRow): Record<string, unknown> {
  const view = recordView(row, row.billing_status);
  copyPresent(view, row, HISTORY_ATTRIBUTES);
  return view;
}

const LOAN_PAYMENT_ATTRIBUTES = [
  'loc_user_id',
  'loc_loan_id',
  'loc_payment_id',
  'loc_amount',
  'loc_status',
  'loc_payment_method',
  'loc_process',
  'loc_confirmation_id',
  'loc_account_last_four',
  'loc_intended_installment_id',
  'loc_payment_attempts',
  'loc_applications',
  'loc_update_reason',
  'loc_created_date',
  'loc_last_updated',
  'loc_next_attempt_at',
  'loc_first_declined_at',
  'loc_decline_code',
  'loc_decline_class',
  'loc_return_code',
  'loc_error_count',
] as const satisfies readonly (keyof LoanPayment)[];

/** A loan payment with the payments table's `loc_*` names; amounts in integer cents. */
export function serializeLoanPayment(payment: LoanPayment): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  copyPresent(view, payment, LOAN_PAYMENT_ATTRIBUTES);
  return view;
}

/** A loan payment's audit row: the payment's view plus who changed it, why and when. */
export function serializeLoanPaymentHistoryRow(row: LoanPaymentHistoryRow): Record<string, unknown> {
  const view = serializeLoanPayment(row);
  view.actor = row.actor;
  if (row.reason !== undefined) view.reason = row.reason;
  view.recorded_at = row.recorded_at;
  return view;
}

/** `{"items":[...],"next":<token>|null}` */
export function serializePage<T>(page: Page<T>, serialize: (item: T) => unknown): { items: unknown[]; next: string | null } {
  return { items: page.items.map(serialize), next: page.next };
}
