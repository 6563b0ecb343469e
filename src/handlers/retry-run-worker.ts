import { actedBy } from '../domain/actors.js';
import { retryRunMessageSchema } from '../domain/retry-runs.js';
import { runRetryItem } from '../domain/use-cases/run-retry-item.js';
import type { AppDeps } from '../runtime/deps.js';
import { perUserSqsHandler } from './shared/batch.js';

/**
 * Retry-runs queue → one item of a bulk retry run per message (DESIGN 8): retry-billing's own path
 * under the run's actor and reason. Delivered again: an item another message holds, a held user
 * lock, anything thrown; a message that names no item is reported (the DLQ keeps it).
 */
export function createRetryRunWorkerHandler(deps: AppDeps) {
  return perUserSqsHandler(deps, 'retry-run-worker', retryRunMessageSchema, async (message, { owner, messageId, logger, attemptDeps }) => {
    const outcome = await runRetryItem({ ...attemptDeps, billing: actedBy(attemptDeps.billing, message.actor), retryRuns: deps.retryRuns }, message, { owner, claimId: messageId });
    const retry = outcome.kind === 'redeliver' || outcome.kind === 'missing';
    const ids = { run_id: message.run_id, subscription_id: message.subscription_id, user_id: message.user_id, process: 'OPERATOR_RETRY' };
    if (outcome.kind === 'missing') logger.error({ ...ids, retry }, 'retry run item not found');
    else logger.info({ ...ids, ...outcome, retry }, 'retry run item');
    return retry;
  });
}
