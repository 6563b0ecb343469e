import { attemptDepsOf } from '../../src/handlers/shared/attempt-deps.js';
import { randomUUID } from 'node:crypto';
import { runCollectionAttempt, type AttemptOutcome } from '../../src/domain/use-cases/collect.js';
import { ConcurrentModificationError, IllegalTransitionError, LockedError } from '../../src/domain/errors.js';
import { manualPay } from '../../src/domain/use-cases/manual-pay.js';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import type { FunctionName } from '../../src/manifest/index.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import { sqsEvent, sqsRecord } from './aws-events.js';
import { httpEvent } from './http-events.js';

/**
 * Every way a collection attempt can start, as one call each: the domain entry points and the
 * handlers that wrap them. The reliability suites race them against each other on one record.
 */

export const ATTEMPT_PATHS = [
  'scheduled',
  'retry',
  'balance',
  'manual',
  'operator',
  'batch-worker',
  'balance-worker',
  'api-pay',
  'api-retry',
] as const;
export type AttemptPath = (typeof ATTEMPT_PATHS)[number];

export interface PathCall {
  readonly path: AttemptPath;
  /** Balance webhooks: whether the observed balance clears the gate. */
  readonly balanceOpen?: boolean;
  /** Manual pay: the Idempotency-Key (a small pool makes replays). */
  readonly requestKey?: string;
}

/** What one call ended in: an attempt outcome kind, an HTTP status, a batch answer, or an error. */
export type PathResult =
  | { readonly kind: 'outcome'; readonly outcome: AttemptOutcome['kind'] }
  | { readonly kind: 'http'; readonly status: number; readonly body: string }
  | { readonly kind: 'batch'; readonly retry: boolean }
  | { readonly kind: 'refused'; readonly error: string }
  | { readonly kind: 'error'; readonly error: unknown };


function balanceOf(open: boolean) {
  return open
    ? { available_balance_cents: 1_000_000, current_balance_cents: 1_000_000 }
    : { available_balance_cents: 10, current_balance_cents: 10 };
}

/** The function each path runs in: its deps are that function's. */
const FUNCTION_OF: Record<AttemptPath, FunctionName> = {
  scheduled: 'batch-worker',
  retry: 'batch-worker',
  'batch-worker': 'batch-worker',
  balance: 'webhook-balance-worker',
  'balance-worker': 'webhook-balance-worker',
  manual: 'api',
  operator: 'api',
  'api-pay': 'api',
  'api-retry': 'api',
};

/** Runs one path against `record` with the deps `depsFor` gives its function (which may carry fault-injecting ports). */
export async function runPath(depsFor: (name: FunctionName) => AppDeps, record: BillingRecord, call: PathCall): Promise<PathResult> {
  const deps = depsFor(FUNCTION_OF[call.path]);
  const attemptDeps = attemptDepsOf(deps, deps.logger);
  const owner = `${call.path}-${randomUUID().slice(0, 8)}`;
  try {
    switch (call.path) {
      case 'scheduled':
      case 'retry': {
        const outcome = await runCollectionAttempt(attemptDeps, { key: record, process: call.path === 'scheduled' ? 'SCHEDULED' : 'RETRY', owner });
        return { kind: 'outcome', outcome: outcome.kind };
      }
      case 'balance': {
        const outcome = await runCollectionAttempt(attemptDeps, {
          key: record,
          process: 'BALANCE_WEBHOOK',
          owner,
          balance: { ...balanceOf(call.balanceOpen ?? true), institution_id: 'ins_1', threshold_cents: deps.settings.balanceThresholdCents },
        });
        return { kind: 'outcome', outcome: outcome.kind };
      }
      case 'manual': {
        const result = await manualPay(attemptDeps, { subscriptionId: record.subscription_id, owner, actor: 'user-1', idempotencyKey: call.requestKey ?? randomUUID() });
        return { kind: 'outcome', outcome: result.outcome.kind };
      }
      case 'operator': {
        const result = await retryBilling(attemptDeps, { subscriptionId: record.subscription_id, owner, actor: 'operator-1', reason: 'reliability' });
        return { kind: 'outcome', outcome: result.attempt };
      }
      case 'batch-worker': {
        const message = { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process: 'SCHEDULED', enqueued_at: formatInstant(deps.clock.now()) };
        const out = await createBatchWorkerHandler(deps)(sqsEvent([sqsRecord(message)]));
        return { kind: 'batch', retry: out.batchItemFailures.length > 0 };
      }
      case 'balance-worker': {
        const body = {
          event_id: `bal_${randomUUID().slice(0, 8)}`,
          user_id: record.user_id,
          institution_id: 'ins_1',
          ...balanceOf(call.balanceOpen ?? true),
          occurred_at: formatInstant(deps.clock.now()),
        };
        const out = await createBalanceWorkerHandler(deps)(sqsEvent([sqsRecord(body, { queue: 'test-balance-events' })]));
        return { kind: 'batch', retry: out.batchItemFailures.length > 0 };
      }
      case 'api-pay':
      case 'api-retry': {
        const action = call.path === 'api-pay' ? 'pay' : 'retry-billing';
        const event = httpEvent('POST', {
          route: `/v1/subscriptions/{subscriptionId}/${action}`,
          pathParameters: { subscriptionId: record.subscription_id },
          headers: call.path === 'api-pay' ? { 'idempotency-key': call.requestKey ?? randomUUID() } : {},
        });
        const out = await createApiHandler(deps)(event);
        return { kind: 'http', status: out.statusCode ?? 0, body: out.body ?? '' };
      }
    }
  } catch (error) {
    // Refusals the API answers 409: held lock, a concurrent write, retry-billing on a settled record.
    if (error instanceof LockedError || error instanceof ConcurrentModificationError || error instanceof IllegalTransitionError) return { kind: 'refused', error: error.name };
    return { kind: 'error', error };
  }
}
