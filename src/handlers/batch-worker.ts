import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { CorruptItemError } from '../runtime/stored-items.js';
import { collectionMessageSchema, isLoanPaymentRetry, processorOfMessage, type BillingPeriodMessage, type LoanPaymentRetryMessage } from '../domain/collections.js';
import { ProcessorOutageError, ProcessorThrottledError } from '../domain/errors.js';
import { actedBy, scheduledActor } from '../domain/actors.js';
import { runCollectionAttempt } from '../domain/use-cases/collect.js';
import { retryLoanPayment } from '../domain/use-cases/retry-loan-payment.js';
import type { AppDeps } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import type { ProcessorId } from '../domain/processor-budget.js';
import { outcomeFields, parseSqsBody, perUserSqsHandler, shouldRetryOutcome } from './shared/batch.js';
import { PresentingStops, stopOf } from './shared/stop-presenting.js';

/**
 * Collections queue → one collection attempt per message (DESIGN 3): a billing period, or a due
 * loan payment retry (DESIGN 2.7). Messages of one user run in order, users concurrently; the
 * batch answer names exactly the messages to deliver again.
 */
export function createBatchWorkerHandler(deps: AppDeps) {
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const stops = new PresentingStops();
    const handler = perUserSqsHandler(deps, 'batch-worker', collectionMessageSchema, async (message, { owner, logger, attemptDeps }) => {
      // After a throttled answer nothing more is presented: the message is done, the period stays due.
      if (stops.stopped) {
        stops.leave();
        logger.info({ user_id: message.user_id, outcome: 'not_presented', stopped_by: stops.stopped.reason, retry: false }, 'collection attempt');
        return false;
      }
      if (isLoanPaymentRetry(message)) return loanRetry(deps, message, owner, logger, stops);
      const { user_id, subscription_id, billing_date, process } = message;
      if (await outageHolds(deps, message)) {
        logger.warn({ user_id, subscription_id, process, payment_method: message.payment_method, outcome: 'dropped_outage', retry: false }, 'collection attempt');
        return false;
      }
      const outcome = await runCollectionAttempt({ ...attemptDeps, billing: actedBy(attemptDeps.billing, scheduledActor(process)) }, { key: { user_id, billing_date }, process, owner, namedAtLock: true });
      const stop = stopOf(outcome);
      if (stop) stops.stop(stop);
      const retry = !stop && shouldRetryOutcome(outcome) && !lockedWhilePaced(deps, outcome.kind);
      logger.info({ user_id, subscription_id, process, ...outcomeFields(outcome), retry }, 'collection attempt');
      return retry;
    });
    const limiter = deps.processorLimiter;
    const response = limiter ? await limiter.withBlock(plannedTokens(event), () => handler(event, context)) : await handler(event, context);
    await reportStops(deps, stops);
    return response;
  };
}

/**
 * Paced (DESIGN 13), a message whose user was locked is done: the next run plans the period again,
 * while a redelivery would sit hidden for the visibility timeout and the planner would pass over
 * its period at the head of the due-index as still queued.
 */
function lockedWhilePaced(deps: AppDeps, kind: string): boolean {
  return kind === 'skipped_locked' && deps.processorLimiter !== undefined;
}

/** The batch's tokens by processor (loan retries' too): one lease per processor per batch. */
function plannedTokens(event: SQSEvent): Partial<Record<ProcessorId, number>> {
  const planned: Partial<Record<ProcessorId, number>> = {};
  for (const record of event.Records) {
    const parsed = parseSqsBody(record, collectionMessageSchema);
    if (!parsed.ok) continue;
    const processor = processorOfMessage(parsed.body);
    planned[processor] = (planned[processor] ?? 0) + 1;
  }
  return planned;
}

/** The messages a stop left, counted for the planner's next quota (one request per stopped processor). */
async function reportStops(deps: AppDeps, stops: PresentingStops): Promise<void> {
  for (const { stop, messages } of stops.left()) {
    deps.logger.warn({ fn: 'batch-worker', processor: stop.processor, reason: stop.reason, messages }, 'stopped presenting; the periods stay due');
    try {
      await deps.processorLimiter?.reportThrottled(stop.processor, messages);
    } catch (error) {
      // The report only tunes the next quota: a failed one is logged, the batch's answer stands.
      deps.logger.error({ err: error, processor: stop.processor }, 'throttle report failed');
    }
  }
}

/**
 * Our outage (DESIGN 15): while the circuit of the period's processor (or of the account directory)
 * is open, the message is dropped unread and nothing is written; the period stays due in the
 * due-index and the planner sends it again once the circuit closes. A pause run presents nothing.
 */
async function outageHolds(deps: AppDeps, message: BillingPeriodMessage): Promise<boolean> {
  if (!deps.circuits || message.payment_method === undefined || message.process === 'PAUSE') return false;
  return deps.circuits.blocks(message.payment_method);
}

/**
 * One loan payment retry. Delivered again: a held lock and a lost race (the redelivery re-reads and
 * decides), and anything thrown (transient or interrupted: nothing was written). A corrupt stored
 * payment is logged and reported as this message's failure, never repaired; the queue's
 * maxReceiveCount moves it to the DLQ, and the other messages of the batch proceed.
 */
async function loanRetry(deps: AppDeps, message: LoanPaymentRetryMessage, owner: string, logger: Logger, stops: PresentingStops): Promise<boolean> {
  const ids = { user_id: message.user_id, loan_id: message.loan_id, payment_id: message.payment_id };
  try {
    const outcome = await retryLoanPayment(
      {
        payments: deps.payments,
        processor: deps.processor,
        accounts: deps.accounts,
        locks: deps.locks,
        clock: deps.clock,
        ids: deps.ids,
        onError: (error, context) => logger.warn({ err: error, ...context }, 'loan payment retry error'),
      },
      { ...ids, owner },
    );
    const retry = (outcome.kind === 'skipped_locked' && !lockedWhilePaced(deps, outcome.kind)) || outcome.kind === 'raced';
    const fields: Record<string, unknown> = { ...ids, outcome: outcome.kind, retry };
    if (outcome.kind === 'not_due') fields.reason = outcome.reason;
    if ('payment' in outcome && outcome.payment) {
      fields.loc_status = outcome.payment.loc_status;
      fields.loc_payment_attempts = outcome.payment.loc_payment_attempts;
    }
    logger.info(fields, 'loan payment retry');
    return retry;
  } catch (error) {
    if (error instanceof ProcessorOutageError) {
      // Our outage, not the payment's: it stays due in RETRY and the planner sends it again.
      logger.warn({ ...ids, outcome: 'dropped_outage', service: error.service, retry: false }, 'loan payment retry');
      return false;
    }
    if (error instanceof ProcessorThrottledError) {
      // Throttled is not a failure (DESIGN 13): nothing written, the payment stays due in RETRY, nothing more presented.
      stops.stop({ processor: error.processor, reason: 'throttled' });
      logger.info({ ...ids, outcome: 'throttled', retry: false }, 'loan payment retry');
      return false;
    }
    if (error instanceof CorruptItemError) {
      logger.error({ err: error, ...ids, retry: true }, 'loan payment item is corrupt; not retried here (the DLQ takes it)');
      return true;
    }
    throw error;
  }
}

