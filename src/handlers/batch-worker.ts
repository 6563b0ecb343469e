import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runCollectionAttempt } from '../domain/attempt.js';
import { collectionMessageSchema } from '../domain/collections.js';
import type { AppDeps } from '../runtime/deps.js';
import {
  attemptDepsOf,
  batchItemFailure,
  invocationOwner,
  outcomeFields,
  parseSqsBody,
  runGroupedSequentially,
  shouldRetryOutcome,
} from './shared/batch.js';
import { lambdaEntry } from './shared/lambda.js';

/**
 * Collections queue → one collection attempt per message (DESIGN 3). Messages of one user run in
 * order, users concurrently; the batch answer names exactly the messages to deliver again.
 */
export function createBatchWorkerHandler(deps: AppDeps) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const owner = invocationOwner(context);
    const logger = deps.logger.child({ fn: 'batch-worker', request_id: owner });
    const attemptDeps = attemptDepsOf(deps, logger);
    const parsed = event.Records.map((record) => parseSqsBody(record, collectionMessageSchema));

    const retry = await runGroupedSequentially(
      parsed,
      (item) => (item.ok ? `user:${item.body.user_id}` : `message:${item.record.messageId}`),
      async (item): Promise<boolean> => {
        const messageId = item.record.messageId;
        if (!item.ok) {
          // Nothing is written; after maxReceiveCount deliveries the queue moves it to its DLQ.
          logger.error({ message_id: messageId, issues: item.issues }, 'invalid collections message');
          return true;
        }
        const { user_id, subscription_id, billing_date, process } = item.body;
        const fields = { message_id: messageId, user_id, subscription_id, process };
        try {
          const outcome = await runCollectionAttempt(attemptDeps, { key: { user_id, billing_date }, process, owner });
          const retryIt = shouldRetryOutcome(outcome);
          logger.info({ ...fields, ...outcomeFields(outcome), retry: retryIt }, 'collection attempt');
          return retryIt;
        } catch (error) {
          logger.error({ ...fields, err: error, retry: true }, 'collection attempt raised');
          return true;
        }
      },
    );

    return {
      batchItemFailures: event.Records.filter((_, i) => retry[i]).map((r) => batchItemFailure(r.messageId)),
    };
  };
}

export const handler = lambdaEntry('batch-worker', createBatchWorkerHandler);
