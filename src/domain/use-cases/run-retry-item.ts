import { isCollectibleAndDue } from '../collectible.js';
import { IllegalTransitionError, LockedError, NotFoundError, PaymentHoldError } from '../errors.js';
import { isFailureLive } from '../ladder.js';
import { withUserLock } from '../lock.js';
import type { RetryRunStore } from '../ports/retry-runs.js';
import { ITEM_CLAIM_STALE_MS, type RetryItemResult, type RetryRunMessage } from '../retry-runs.js';
import { COLLECTED_STATUSES } from '../statuses.js';
import { formatInstant } from '../time.js';
import type { UseCaseDeps } from './deps.js';
import { retryBilling } from './retry-billing.js';
import { DailyDebitLimitError } from '../person-debits.js';

export type RetryItemDeps = UseCaseDeps & { readonly retryRuns: RetryRunStore };

export type RetryItemOutcome =
  /** The item has its result now (this call, or an earlier delivery that crashed before recording it). */
  | { readonly kind: 'finished'; readonly result: RetryItemResult; readonly detail?: string | undefined }
  /** Finished before this delivery: nothing done. */
  | { readonly kind: 'already_finished'; readonly result: string }
  /** Deliver the message again later: another claim is live, or the user's lock is held. */
  | { readonly kind: 'redeliver'; readonly why: 'busy' | 'locked' }
  /** The message names no item of a run: nothing to do here (reported, the DLQ keeps it). */
  | { readonly kind: 'missing' };

/**
 * One item of a bulk retry run: claim it, run retry-billing under the run's actor and reason, record
 * the result. A claim taken again after a crash first looks for the run's own audit row, so an item
 * is never retried twice.
 */
export async function runRetryItem(deps: RetryItemDeps, message: RetryRunMessage, context: { owner: string; claimId: string }): Promise<RetryItemOutcome> {
  const now = deps.clock.now();
  const claim = await deps.retryRuns.claimItem(
    message.run_id,
    message.subscription_id,
    context.claimId,
    formatInstant(now),
    formatInstant(new Date(now.getTime() - ITEM_CLAIM_STALE_MS)),
  );
  if (claim.kind === 'missing') return { kind: 'missing' };
  if (claim.kind === 'busy') return { kind: 'redeliver', why: 'busy' };
  if (claim.kind === 'finished') return { kind: 'already_finished', result: claim.item.outcome };

  let result: { result: RetryItemResult; detail?: string | undefined } | undefined;
  try {
    // Under the user's lock, so an earlier delivery still at work (it holds the lock) is not judged halfway.
    if (!claim.fresh) result = await withUserLock(deps, message.user_id, context.owner, () => earlierResult(deps, message));
  } catch (error) {
    if (error instanceof LockedError) return { kind: 'redeliver', why: 'locked' };
    throw error;
  }
  if (!result) {
    try {
      const retried = await retryBilling(deps, {
        subscriptionId: message.subscription_id,
        owner: context.owner,
        actor: message.actor,
        reason: message.reason,
        runId: message.run_id,
      });
      // Nothing charged and nothing owed now: not a billed period in the run's counts.
      result = { result: retried.outcome === 'not_billed' ? 'skipped' : retried.outcome, detail: retried.attempt };
    } catch (error) {
      if (error instanceof PaymentHoldError) result = { result: 'skipped', detail: error.code };
      else if (error instanceof DailyDebitLimitError) result = { result: 'skipped', detail: 'daily_debit_limit' };
      else if (error instanceof IllegalTransitionError) result = { result: 'skipped', detail: 'not_open' };
      else if (error instanceof NotFoundError) result = { result: 'skipped', detail: 'not_found' };
      else if (error instanceof LockedError) return { kind: 'redeliver', why: 'locked' };
      else throw error;
    }
  }
  // A lost claim means another delivery took the item over; it finds this run's audit row and records it.
  await deps.retryRuns.finishItem(message.run_id, message.subscription_id, context.claimId, result.result, result.detail, formatInstant(deps.clock.now()));
  return { kind: 'finished', ...result };
}

/** Audit rows read back to find this run's own (its clear is the newest few rows of the period). */
const RECENT_ROWS = 10;

/** What an earlier delivery did, read from the period as it is now; undefined when this run never touched it. */
async function earlierResult(deps: RetryItemDeps, message: RetryRunMessage): Promise<{ result: RetryItemResult; detail: string } | undefined> {
  const rows = await deps.billing.history(message.subscription_id, { limit: RECENT_ROWS });
  if (!rows.items.some((row) => row.run_id === message.run_id)) return undefined;
  const record = await deps.billing.findBySubscriptionId(message.subscription_id);
  if (!record || !isCollectibleAndDue(record, deps.clock.now())) {
    return { result: record && COLLECTED_STATUSES.has(record.billing_status) ? 'billed' : 'skipped', detail: 'recorded_earlier' };
  }
  if (isFailureLive(record) || record.billing_status === 'FAILED') return { result: 'failed', detail: 'recorded_earlier' };
  return { result: 'still_due', detail: 'recorded_earlier' };
}
