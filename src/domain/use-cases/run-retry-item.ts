import { isCollectibleAndDue } from '../collectible.js';
import { IllegalTransitionError, LockedError, NotFoundError, PaymentHoldError } from '../errors.js';
import { isFailureLive } from '../ladder.js';
import { withUserLock } from '../lock.js';
import type { RetryRunStore } from '../ports.js';
import { ITEM_CLAIM_STALE_MS, type RetryItemResult, type RetryRunMessage } from '../retry-runs.js';
import { formatInstant } from '../time.js';
import type { UseCaseDeps } from './deps.js';
import { retryBilling } from './retry-billing.js';

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
 * One item of a bulk retry run (DESIGN 8): claim it (a conditional pending → processing), run
 * retry-billing's own path under the run's actor and reason with the audit rows carrying `run_id`,
 * and record the result with the run's count in one transaction. A hold (DESIGN 3.1) is `skipped`
 * with its code; a period that is no longer open (the schedule or another action settled it) is
 * `skipped` `not_open`. Exactly-once: a finished item is never run again; a claim taken again (a
 * redelivery after a crash) first looks for the run's own audit row and records what it did
 * instead of retrying twice; the attempt's idempotency key covers a crash inside the attempt.
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
      result = { result: retried.outcome, detail: retried.attempt };
    } catch (error) {
      if (error instanceof PaymentHoldError) result = { result: 'skipped', detail: error.code };
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

/**
 * What an earlier delivery of this item did, when its audit rows show it ran: the period as it is
 * now says the result. Undefined when this run never touched the period (retry it now).
 */
async function earlierResult(deps: RetryItemDeps, message: RetryRunMessage): Promise<{ result: RetryItemResult; detail: string } | undefined> {
  const rows = await deps.billing.history(message.subscription_id, { limit: RECENT_ROWS });
  if (!rows.items.some((row) => row.run_id === message.run_id)) return undefined;
  const record = await deps.billing.findBySubscriptionId(message.subscription_id);
  if (!record || !isCollectibleAndDue(record, deps.clock.now())) return { result: 'billed', detail: 'recorded_earlier' };
  if (isFailureLive(record) || record.billing_status === 'FAILED') return { result: 'failed', detail: 'recorded_earlier' };
  return { result: 'still_due', detail: 'recorded_earlier' };
}
