import type { Context, ScheduledEvent } from 'aws-lambda';
import { addAchRateCounts, returnRates, returnRateWindow } from '../domain/ach-return-rates.js';
import type { CollectionMessage } from '../domain/collections.js';
import { planCollections, type CollectionsSummary } from '../domain/use-cases/plan-collections.js';
import { sweepHeldPeriods } from '../domain/use-cases/release-held.js';
import { actedBy, SYSTEM_ACTORS } from '../domain/actors.js';
import type { AppDeps } from '../runtime/deps.js';
import { DEFAULT_INTERVAL_SECONDS, runPacedCollections, type PacedSummary } from './collections-paced.js';
import { RAILS } from '../manifest/index.js';
import { sendToCollectionQueues } from './shared/collection-queues.js';

export type { CollectionsSummary } from '../domain/use-cases/plan-collections.js';
export type { PacedSummary } from './collections-paced.js';

/** Stop reading new pages this long before the Lambda deadline: one page plus its sends must fit. */
export const DEADLINE_SAFETY_MS = 30_000;

export interface CollectionsJobOptions {
  /** Records per page of the due-index stream (and of the due loan retries). */
  readonly pageSize?: number;
  /** Absolute deadline (epoch ms of the real clock) for tests and the local runtime; otherwise the Lambda context's. */
  readonly deadlineMs?: number;
  readonly safetyMs?: number;
}

/**
 * EventBridge schedule → find due work on the due-index (and the due loan retries, concurrently), skip what the failure ladder holds,
 * enqueue one collections message per due record and emit the failing- and dunning-subscriptions gauges
 * and the ACH return rates of the trailing 60 days (DESIGN 4.1: two counter queries, not a scan).
 */
/** The first run of each UTC day (the schedule's default rate is 15 minutes) sweeps the held index. */
export function isDailySweepRun(now: Date): boolean {
  return now.getUTCHours() === 0 && now.getUTCMinutes() < 15;
}

export function createCollectionsJobHandler(deps: AppDeps, options: CollectionsJobOptions = {}) {
  return async (event: ScheduledEvent, context?: Context): Promise<CollectionsSummary | PacedSummary> => {
    const logger = deps.logger.child({ fn: 'collections-job', request_id: context?.awsRequestId, event_id: event.id });
    const safety = options.safetyMs ?? DEADLINE_SAFETY_MS;
    const remainingMs = (): number => {
      if (options.deadlineMs !== undefined) return options.deadlineMs - Date.now();
      if (context) return context.getRemainingTimeInMillis();
      return Number.POSITIVE_INFINITY;
    };

    // The dunning gauge and the ACH return-rate counters do not depend on the plan: they are read
    // while it runs (one round of requests instead of two after it). Both are awaited together, so
    // a failed plan (or gauge read) fails the run as before.
    // The circuits first (DESIGN 15): a processor refusing our credentials gets no new work.
    const outage = deps.circuits ? await deps.circuits.openServices({ fresh: true }) : [];
    const blocked = new Map<string, boolean>();
    for (const rail of RAILS) blocked.set(rail, deps.circuits ? await deps.circuits.blocks(rail, outage) : false);
    const window = returnRateWindow(deps.clock.now());
    const gauges = Promise.all([
      deps.billing.countDunning(),
      deps.billing.achRateCounts(window.from, window.to),
      deps.payments.achRateCounts(window.from, window.to),
    ]);
    const budget = deps.settings.processorBudget;
    const plan = budget && deps.processorBudgetStore
      ? runPacedCollections(deps, {
          budget,
          store: deps.processorBudgetStore,
          intervalSeconds: deps.settings.collectionsIntervalSeconds ?? DEFAULT_INTERVAL_SECONDS,
          remainingMs,
          safetyMs: safety,
          ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
          ...(context ? { owner: context.awsRequestId } : {}),
        })
      : planCollections(deps, {
      ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
      shouldContinue: () => remainingMs() > safety,
      railBlocked: (rail) => blocked.get(rail) === true,
      send: (messages: readonly CollectionMessage[]) => sendToCollectionQueues(deps.collectionQueues, messages.map((message) => ({ message }))),
    });
    const [{ summary, failing }, [dunning, subscriptionCounts, loanCounts]] = await Promise.all([plan, gauges]);

    // The gauges are the writes' counters, not a view of the scan: complete even when the run is truncated.
    deps.metrics.failingSubscriptions(failing);
    deps.metrics.dunningSubscriptions(dunning);
    const rates = returnRates(addAchRateCounts(subscriptionCounts, loanCounts));
    deps.metrics.achReturnRates(rates);
    deps.metrics.processorCircuitsOpen?.(outage);
    if (outage.length > 0) {
      summary.processor_outage = outage;
      logger.error({ processor_outage: outage, skipped_outage: summary.skipped_outage ?? 0 }, 'processor outage: due work left in the due-index (docs/runbook.md)');
    }
    const log = {
      ...summary,
      failing_retrying: failing.retrying,
      failing_parked: failing.parked,
      dunning_retrying: dunning.retrying,
      dunning_exhausted: dunning.exhausted,
      ach_debits_60d: rates.overall.debits,
      ach_return_rate_unauthorized: rates.unauthorized.percent,
      ach_return_rate_administrative: rates.administrative.percent,
      ach_return_rate_overall: rates.overall.percent,
    };
    if (summary.truncated) logger.warn(log, 'collections run stopped before its deadline; the next run continues');
    else logger.info(log, 'collections run enqueued due work');
    if (isDailySweepRun(deps.clock.now())) {
      const swept = await sweepHeldPeriods({ ...deps, billing: actedBy(deps.billing, SYSTEM_ACTORS.collections) }, { shouldContinue: () => remainingMs() > safety });
      logger.info(swept, 'held periods swept');
    }
    return summary;
  };
}

