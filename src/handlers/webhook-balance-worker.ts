import { actedBy, eventActor } from '../domain/actors.js';
import { balanceEventSchema, type BalanceEvent } from '../domain/balance-events.js';
import { collectOnBalanceEvent } from '../domain/use-cases/collect-on-balance-event.js';
import type { UseCaseDeps } from '../domain/use-cases/deps.js';
import type { AppDeps } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import { outcomeFields, perUserSqsHandler, shouldRetryOutcome } from './shared/batch.js';

export { balanceEventSchema, type BalanceEvent } from '../domain/balance-events.js';

/** Collects the user's due records through the balance gate; true when the message must be retried. */
async function collectOnBalance(deps: AppDeps, attemptDeps: UseCaseDeps, event: BalanceEvent, owner: string, logger: Logger): Promise<boolean> {
  let retry = false;
  const done = await collectOnBalanceEvent({ ...attemptDeps, billing: actedBy(attemptDeps.billing, eventActor('balance', event.event_id)) }, {
    event,
    thresholdCents: deps.settings.balanceThresholdCents,
    owner,
    stopAfter: ({ record, outcome }) => {
      retry = shouldRetryOutcome(outcome);
      logger.info(
        { user_id: record.user_id, subscription_id: record.subscription_id, process: 'BALANCE_WEBHOOK', ...outcomeFields(outcome), retry },
        'balance collection attempt',
      );
      return retry;
    },
  });
  if (done.length === 0) logger.info({ user_id: event.user_id, process: 'BALANCE_WEBHOOK', outcome: 'nothing_due' }, 'balance event');
  return retry;
}

/**
 * Balance-events queue → a fresh balance arrived: collect the user's due records now if they pass
 * the balance gate (a closed gate writes nothing). Same partial-batch semantics as the batch-worker.
 */
export function createBalanceWorkerHandler(deps: AppDeps) {
  return perUserSqsHandler(deps, 'webhook-balance-worker', balanceEventSchema, (balance, { owner, logger, attemptDeps }) =>
    collectOnBalance(deps, attemptDeps, balance, owner, logger.child({ balance_event_id: balance.event_id })),
  );
}

