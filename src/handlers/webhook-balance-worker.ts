import * as z from 'zod';
import { runCollectionAttempt, type AttemptDeps, type AttemptOutcome, type BalanceObservation } from '../domain/attempt.js';
import type { BillingStore } from '../domain/ports.js';
import type { BillingRecord } from '../domain/records.js';
import { instantSchema } from '../domain/time.js';
import type { AppDeps } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import { outcomeFields, perUserSqsHandler, shouldRetryOutcome } from './shared/batch.js';
import { lambdaEntry } from './shared/lambda.js';

const balanceCents = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** DESIGN 8 `POST /webhooks/balance`, as the API enqueues it. Balances may be negative (overdrawn). */
export const balanceEventSchema = z.object({
  event_id: z.string().min(1).max(256),
  user_id: z.string().min(1).max(256),
  institution_id: z.string().min(1),
  available_balance_cents: balanceCents,
  current_balance_cents: balanceCents,
  calc_available_balance_cents: balanceCents.optional(),
  occurred_at: instantSchema,
});
export type BalanceEvent = z.infer<typeof balanceEventSchema>;

/** Records of the user scanned for due work (newest first): a year of monthly periods and then some. */
const RECENT_RECORDS = 24;
/** Outcomes after which the next (newer) due record is still tried with the remaining balance. */
const CONTINUE_AFTER: ReadonlySet<AttemptOutcome['kind']> = new Set(['collected', 'submitted', 'cancelled', 'not_due']);

/** The user's collectible records that are due now, oldest first. */
export async function dueCollectibleRecords(billing: Pick<BillingStore, 'listByUser'>, userId: string, now: Date): Promise<BillingRecord[]> {
  const page = await billing.listByUser(userId, { limit: RECENT_RECORDS });
  return page.items
    .filter((r) => (r.billing_status === 'PENDING' || r.billing_status === 'FAILED') && Date.parse(r.billing_date) <= now.getTime())
    .sort((a, b) => (a.billing_date < b.billing_date ? -1 : a.billing_date > b.billing_date ? 1 : 0));
}

function observationOf(event: BalanceEvent, thresholdCents: number): BalanceObservation {
  return {
    institution_id: event.institution_id,
    available_balance_cents: event.available_balance_cents,
    current_balance_cents: event.current_balance_cents,
    ...(event.calc_available_balance_cents !== undefined ? { calc_available_balance_cents: event.calc_available_balance_cents } : {}),
    threshold_cents: thresholdCents,
  };
}

/** What is left of the observed balance after a collection: the next record must not spend it twice. */
function spend(balance: BalanceObservation, cents: number): BalanceObservation {
  return {
    ...balance,
    available_balance_cents: balance.available_balance_cents - cents,
    current_balance_cents: balance.current_balance_cents - cents,
    ...(balance.calc_available_balance_cents !== undefined ? { calc_available_balance_cents: balance.calc_available_balance_cents - cents } : {}),
  };
}

/** Collects the user's due records, oldest first, through the balance gate; true when the message must be retried. */
async function collectOnBalance(deps: AppDeps, attemptDeps: AttemptDeps, event: BalanceEvent, owner: string, logger: Logger): Promise<boolean> {
  const due = await dueCollectibleRecords(deps.billing, event.user_id, deps.clock.now());
  if (due.length === 0) {
    logger.info({ user_id: event.user_id, process: 'BALANCE_WEBHOOK', outcome: 'nothing_due' }, 'balance event');
    return false;
  }
  let balance = observationOf(event, deps.settings.balanceThresholdCents);
  for (const record of due) {
    const outcome = await runCollectionAttempt(attemptDeps, {
      key: record,
      process: 'BALANCE_WEBHOOK',
      owner,
      balance,
    });
    const retry = shouldRetryOutcome(outcome);
    logger.info(
      { user_id: record.user_id, subscription_id: record.subscription_id, process: 'BALANCE_WEBHOOK', ...outcomeFields(outcome), retry },
      'balance collection attempt',
    );
    if (retry) return true;
    if (!CONTINUE_AFTER.has(outcome.kind)) return false;
    if (outcome.kind === 'collected' || outcome.kind === 'submitted') balance = spend(balance, outcome.record.amount_cents);
  }
  return false;
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

export const handler = lambdaEntry('webhook-balance-worker', createBalanceWorkerHandler);
