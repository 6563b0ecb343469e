import { dueKey } from './ladder.js';
import type { AccountSnapshot } from './ports/account-directory.js';
import type { BillingRecord } from './records.js';
import { COLLECTIBLE_STATUSES } from './statuses.js';
import { toDate } from './time.js';

/** Dead-holder takeover: when the processor may hold a charge no record shows, and what a later holder does about it. */

/**
 * A dead holder's lease on this period: resend its key before the balance gate and the holds, which
 * cannot hide a charge taken. Every path names the period before it presents, so a lease naming none
 * (a membership change, a refused manual pay, a loan retry) presented no period.
 */
export function repairsUnrecordedAttempt(
  takenOver: { readonly purpose?: string; readonly lease_expires_at?: number } | undefined,
  record: Pick<BillingRecord, 'billing_date' | 'billing_status' | 'payment_attempts' | 'billing_presented_for'>,
): boolean {
  return (takenOver?.purpose !== undefined && leaseNames(takenOver, record)) || isPresentedUnrecorded(record);
}

/**
 * The dead lease named this period's current work (its billing date or its due key) while it was due:
 * no path presents a period before its billing date, so an earlier lease presented nothing.
 */
function leaseNames(
  takenOver: { readonly purpose?: string; readonly lease_expires_at?: number },
  record: Pick<BillingRecord, 'billing_date' | 'payment_attempts'>,
): boolean {
  if (takenOver.purpose !== record.billing_date && takenOver.purpose !== dueKey(record)) return false;
  return takenOver.lease_expires_at === undefined || toDate(record.billing_date).getTime() <= takenOver.lease_expires_at;
}

/** A failed attempt presented the current key and recorded no result: only resending that key can tell what was charged. */
export function isPresentedUnrecorded(record: Pick<BillingRecord, 'billing_date' | 'billing_status' | 'payment_attempts' | 'billing_presented_for'>): boolean {
  return COLLECTIBLE_STATUSES.has(record.billing_status) && record.billing_presented_for !== undefined && record.billing_presented_for === dueKey(record);
}

export const ATTEMPT_OUTCOME_UNKNOWN = 'attempt_outcome_unknown';
export const ATTEMPT_OUTCOME_UNKNOWN_MESSAGE =
  'an attempt of this period reached the payment processor and its outcome is not recorded: the processor may hold the payment. ' +
  'retry-billing resolves it with the same idempotency key (never a second charge: a payment the processor took is recorded, otherwise the period is charged now); ' +
  'the scheduled retry does the same. Then the period can be waived (a taken payment is refunded as usual).';

/**
 * A waive or cancel must not close a period whose current key the processor may hold: closing would
 * leave a charge on no record, and resending the key to find out would charge a period being closed.
 */
export function mayHoldUnrecordedCharge(
  record: Pick<BillingRecord, 'billing_date' | 'billing_status' | 'payment_attempts' | 'billing_presented_for'>,
  takenOver?: { readonly purpose?: string; readonly lease_expires_at?: number },
): boolean {
  if (!COLLECTIBLE_STATUSES.has(record.billing_status)) return false;
  return isPresentedUnrecorded(record) || (takenOver?.purpose !== undefined && leaseNames(takenOver, record));
}

/** How far the account directory's clock may run behind ours. */
export const ACCOUNT_CLOCK_SKEW_MS = 1_000;

/**
 * Every path checks the account before it presents: an account inactive since before the dead lease was
 * held (less the clock skew) means its holder presented nothing, so the period is deactivated, not charged.
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
