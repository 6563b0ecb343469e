import { runCollectionAttempt } from '../domain/use-cases/collect.js';
import { collectionMessageSchema } from '../domain/collections.js';
import type { AppDeps } from '../runtime/deps.js';
import { outcomeFields, perUserSqsHandler, shouldRetryOutcome } from './shared/batch.js';
import { lambdaEntry } from './shared/lambda.js';

/**
 * Collections queue → one collection attempt per message (DESIGN 3). Messages of one user run in
 * order, users concurrently; the batch answer names exactly the messages to deliver again.
 */
export function createBatchWorkerHandler(deps: AppDeps) {
  return perUserSqsHandler(deps, 'batch-worker', collectionMessageSchema, async (message, { owner, logger, attemptDeps }) => {
    const { user_id, subscription_id, billing_date, process } = message;
    const outcome = await runCollectionAttempt(attemptDeps, { key: { user_id, billing_date }, process, owner });
    const retry = shouldRetryOutcome(outcome);
    logger.info({ user_id, subscription_id, process, ...outcomeFields(outcome), retry }, 'collection attempt');
    return retry;
  });
}

export const handler = lambdaEntry('batch-worker', createBatchWorkerHandler);
