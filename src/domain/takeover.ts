import { dueKey } from './ladder.js';
import type { AccountSnapshot } from './ports.js';
import type { BillingRecord } from './records.js';
import { COLLECTIBLE_STATUSES } from './statuses.js';
import { toDate } from './time.js';

/**
 * Dead-holder takeover: what an attempt may conclude when its lock replaced an expired lease, and
 * when a failed attempt left a presented key unrecorded. The processor may hold a charge no record shows.
 */

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
