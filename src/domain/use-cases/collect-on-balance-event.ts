import type { BalanceEvent } from '../balance-events.js';
import { isCollectibleAndDue, type BalanceObservation } from '../collectible.js';
import type { BillingStore } from '../ports/billing-store.js';
import type { BillingRecord } from '../records.js';
import { runCollectionAttempt, type AttemptOutcome } from './collect.js';
import type { UseCaseDeps } from './deps.js';

/** Records of the user scanned for due work (newest first): a year of monthly periods and then some. */
const RECENT_RECORDS = 24;
/** Outcomes after which the next (newer) due record is still tried with the remaining balance. */
const CONTINUE_AFTER: ReadonlySet<AttemptOutcome['kind']> = new Set(['collected', 'submitted', 'cancelled', 'not_due']);

export interface BalanceCollection {
  readonly record: BillingRecord;
  readonly outcome: AttemptOutcome;
}

export interface CollectOnBalanceRequest {
  readonly event: BalanceEvent;
  readonly thresholdCents: number;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  /** Asked after each attempt: true stops the run (the message is retried). */
  readonly stopAfter: (collection: BalanceCollection) => boolean;
}

/** The user's collectible records that are due now, oldest first. */
export async function dueCollectibleRecords(billing: Pick<BillingStore, 'listByUser'>, userId: string, now: Date): Promise<BillingRecord[]> {
  const page = await billing.listByUser(userId, { limit: RECENT_RECORDS });
  return page.items
    .filter((r) => isCollectibleAndDue(r, now))
    .sort((a, b) => (a.billing_date < b.billing_date ? -1 : a.billing_date > b.billing_date ? 1 : 0));
}

/** Attempts the user's due periods, oldest first, each through the balance gate; answers them in order. */
export async function collectOnBalanceEvent(deps: UseCaseDeps, request: CollectOnBalanceRequest): Promise<BalanceCollection[]> {
  const due = await dueCollectibleRecords(deps.billing, request.event.user_id, deps.clock.now());
  const done: BalanceCollection[] = [];
  let balance = observationOf(request.event, request.thresholdCents);
  for (const record of due) {
    const outcome = await runCollectionAttempt(deps, { key: record, process: 'BALANCE_WEBHOOK', owner: request.owner, balance });
    const collection = { record, outcome };
    done.push(collection);
    if (request.stopAfter(collection) || !CONTINUE_AFTER.has(outcome.kind)) break;
    if (outcome.kind === 'collected' || outcome.kind === 'submitted') balance = spend(balance, outcome.record.amount_cents);
  }
  return done;
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
