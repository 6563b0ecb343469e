import { CorruptItemError } from '../runtime/stored-items.js';
import { collectionMessageSchema, isLoanPaymentRetry, type LoanPaymentRetryMessage } from '../domain/collections.js';
import { actedBy, scheduledActor } from '../domain/actors.js';
import { runCollectionAttempt } from '../domain/use-cases/collect.js';
import { retryLoanPayment } from '../domain/use-cases/retry-loan-payment.js';
import type { AppDeps } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import { outcomeFields, perUserSqsHandler, shouldRetryOutcome } from './shared/batch.js';

/**
 * Collections queue → one collection attempt per message (DESIGN 3): a billing period, or a due
 * loan payment retry (DESIGN 2.7). Messages of one user run in order, users concurrently; the
 * batch answer names exactly the messages to deliver again.
 */
export function createBatchWorkerHandler(deps: AppDeps) {
  return perUserSqsHandler(deps, 'batch-worker', collectionMessageSchema, async (message, { owner, logger, attemptDeps }) => {
    if (isLoanPaymentRetry(message)) return loanRetry(deps, message, owner, logger);
    const { user_id, subscription_id, billing_date, process } = message;
    const outcome = await runCollectionAttempt({ ...attemptDeps, billing: actedBy(attemptDeps.billing, scheduledActor(process)) }, { key: { user_id, billing_date }, process, owner });
    const retry = shouldRetryOutcome(outcome);
    logger.info({ user_id, subscription_id, process, ...outcomeFields(outcome), retry }, 'collection attempt');
    return retry;
  });
}

/**
 * One loan payment retry. Delivered again: a held lock and a lost race (the redelivery re-reads and
 * decides), and anything thrown (transient or interrupted: nothing was written). A corrupt stored
 * payment is logged and reported as this message's failure, never repaired; the queue's
 * maxReceiveCount moves it to the DLQ, and the other messages of the batch proceed.
 */
async function loanRetry(deps: AppDeps, message: LoanPaymentRetryMessage, owner: string, logger: Logger): Promise<boolean> {
  const ids = { user_id: message.user_id, loan_id: message.loan_id, payment_id: message.payment_id };
  try {
    const outcome = await retryLoanPayment(
      {
        payments: deps.payments,
        processor: deps.processor,
        accounts: deps.accounts,
        instruments: deps.instruments,
        locks: deps.locks,
        clock: deps.clock,
        ids: deps.ids,
        onError: (error, context) => logger.warn({ err: error, ...context }, 'loan payment retry error'),
      },
      { ...ids, owner },
    );
    const retry = outcome.kind === 'skipped_locked' || outcome.kind === 'raced';
    const fields: Record<string, unknown> = { ...ids, outcome: outcome.kind, retry };
    if (outcome.kind === 'not_due') fields.reason = outcome.reason;
    if ('payment' in outcome && outcome.payment) {
      fields.loc_status = outcome.payment.loc_status;
      fields.loc_payment_attempts = outcome.payment.loc_payment_attempts;
    }
    logger.info(fields, 'loan payment retry');
    return retry;
  } catch (error) {
    if (error instanceof CorruptItemError) {
      logger.error({ err: error, ...ids, retry: true }, 'loan payment item is corrupt; not retried here (the DLQ takes it)');
      return true;
    }
    throw error;
  }
}

