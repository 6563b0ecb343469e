import { BILLING_STATUSES, type BillingRecord, type BillingStatus, type DisplayStatus } from './records.js';
import type { LoanPaymentStatus } from './loan-payments.js';
import { billingTransitions, loanPaymentTransitions } from './transitions.js';

/** The named status sets, read off the transition tables so that a change of a table moves them. */

const statusesWhere = (keep: (status: BillingStatus) => boolean): ReadonlySet<BillingStatus> => new Set(BILLING_STATUSES.filter(keep));
const allows = (status: BillingStatus, event: Parameters<typeof billingTransitions.allows>[1]) => billingTransitions.allows(status, event);

/** A collection attempt may present a payment: the statuses a collection leaves (PENDING, FAILED). */
export const COLLECTIBLE_STATUSES: ReadonlySet<BillingStatus> = new Set(billingTransitions.sourcesOf('COLLECTED'));

/** Money taken or on its way for the period (COMPLETED, ACHSENT, REFUNDED). */
export const COLLECTED_STATUSES: ReadonlySet<BillingStatus> = new Set(
  (['COLLECTED', 'ACH_SUBMITTED'] as const).map((event) => billingTransitions.apply('PENDING', event)).concat(billingTransitions.apply('COMPLETED', 'REFUNDED')),
);

/** Closed: no settlement is pending and no account closure applies (COMPLETED, WAIVED, CANCELLED, SKIPPED, REFUNDED). */
export const TERMINAL_STATUSES = statusesWhere((status) => !allows(status, 'ACH_SETTLED') && !allows(status, 'ACCOUNT_CLOSED'));

/** A chain is open while one of its periods is not closed (INACTIVE can be reactivated). */
export const OPEN_CHAIN_STATUSES = statusesWhere((status) => !TERMINAL_STATUSES.has(status));

/** Open, or open again after some event (COMPLETED reopens as FAILED on a return or chargeback). */
export const MAY_BE_OPEN_STATUSES = statusesWhere(
  (status) => OPEN_CHAIN_STATUSES.has(status) || billingTransitions.exitsOf(status).some((event) => OPEN_CHAIN_STATUSES.has(billingTransitions.apply(status, event))),
);

/** Written off (WAIVED, CANCELLED, SKIPPED): a payment arriving there can only raise an exception (`unowed_payment`). */
export const UNBOOKABLE_STATUSES = statusesWhere((status) => {
  const exits = billingTransitions.exitsOf(status);
  return exits.length === 1 && exits[0] === 'EXCEPTION_RAISED';
});

/** Owed or paid, so a payment outcome books there (PENDING, FAILED, ACHSENT, COMPLETED). */
export const OWED_OR_PAID_STATUSES = statusesWhere((status) => allows(status, 'EXCEPTION_RAISED') && !UNBOOKABLE_STATUSES.has(status));

/** Left by a ban or an inactive account, and back when the member is reactivated (INACTIVE). */
export const REACTIVATABLE_STATUSES: ReadonlySet<BillingStatus> = new Set(billingTransitions.sourcesOf('REACTIVATED'));

/** Can still record a submission it does not show: its repair attempt, or its reactivation's, sends the same key. */
export const MAY_RECORD_SUBMISSION_STATUSES: ReadonlySet<BillingStatus> = new Set([...COLLECTIBLE_STATUSES, ...REACTIVATABLE_STATUSES]);

/** A loan payment that records an ACH outcome's unrecorded submission itself (PENDING, FAILED): nothing resends its key. */
export const LOAN_LOST_SUBMISSION_STATUSES: ReadonlySet<LoanPaymentStatus> = new Set(loanPaymentTransitions.sourcesOf('SUBMISSION_RECORDED'));

const PAST_DUE_MS = 30 * 24 * 60 * 60 * 1000;

/** PASTDUE on read for PENDING/FAILED records more than 30 days past billing_date (DESIGN 2.2). */
export function displayStatus(record: Pick<BillingRecord, 'billing_status' | 'billing_date'>, now: Date): DisplayStatus {
  if (COLLECTIBLE_STATUSES.has(record.billing_status) && now.getTime() - Date.parse(record.billing_date) > PAST_DUE_MS) {
    return 'PASTDUE';
  }
  return record.billing_status;
}
