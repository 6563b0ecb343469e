import { randomUUID } from 'node:crypto';
import { backlogEtaMinutes, delaySecondsOf, nextQuotaFactor, PLAN_MARGIN_SECONDS, quotaOf } from '../domain/billing-day.js';
import { loanRetryMessage } from '../domain/collections.js';
import type { ProcessorBudgetStore } from '../domain/ports/processor-budget.js';
import { PROCESSOR_IDS, processorOfRail, scheduledRate, type ProcessorBudgetSettings, type ProcessorId } from '../domain/processor-budget.js';
import { planPaced, type ProcessorQuota } from '../domain/use-cases/plan-paced.js';
import type { CollectionsSummary, FailingCounts } from '../domain/use-cases/plan-collections.js';
import { formatInstant } from '../domain/time.js';
import type { AppDeps } from '../runtime/deps.js';
import { sendToCollectionQueues } from './shared/collection-queues.js';

/** The lease that keeps the planner single-flight (DESIGN 13): an overlapping or duplicated run exits at once. */
export const PLANNER_LEASE_KEY = 'collections-job:planner';
/** Loan payments are debited on the ACH and pinless rails, both the payments service's. */
const LOAN_PROCESSOR: ProcessorId = processorOfRail('ach');
/** The schedule's interval when no setting names it (the CDK default, 15 minutes). */
export const DEFAULT_INTERVAL_SECONDS = 900;

export interface ProcessorRunSummary {
  quota: number;
  enqueued: number;
  deferred: number;
  /** Its messages still queued when the run began (subtracted from the quota). */
  in_queue: number;
  /** Throttled answers the workers reported since the last run. */
  throttled: number;
  /** The quota's multiplier after them. */
  factor: number;
  /** Due periods waiting: still queued, sent now, and read but deferred (a lower bound while `more`). */
  backlog: number;
}

export interface PacedSummary extends CollectionsSummary {
  readonly planner: 'paced';
  /** Set when another run held the lease: this one planned nothing. */
  readonly skipped?: 'overlapping_run';
  readonly by_processor: Partial<Record<ProcessorId, ProcessorRunSummary>>;
  readonly backlog_eta_minutes: number;
}

export interface PacedRunOptions {
  readonly budget: ProcessorBudgetSettings;
  readonly store: ProcessorBudgetStore;
  readonly intervalSeconds: number;
  /** Real-clock ms left before the run must stop; bounds the lease too. */
  readonly remainingMs: () => number;
  readonly safetyMs: number;
  readonly pageSize?: number;
  readonly owner?: string;
}

/**
 * One paced run: the lease, then per processor its quota (the budget over the interval, lowered by
 * reported throttles, minus what is still queued), the due work oldest first with delays spreading
 * it at the budget's rate, the due loan retries as before, and the backlog gauges.
 */
export async function runPacedCollections(deps: AppDeps, options: PacedRunOptions): Promise<{ summary: PacedSummary; failing: FailingCounts }> {
  const startMs = deps.wallClock.now().getTime();
  const lease = {
    key: PLANNER_LEASE_KEY,
    owner_name: options.owner ?? `collections-${randomUUID()}`,
    record_version_number: randomUUID(),
    lease_duration_ms: Math.min(options.intervalSeconds * 1000, Number.isFinite(options.remainingMs()) ? options.remainingMs() : options.intervalSeconds * 1000),
    lease_expires_at: 0,
    purpose: 'collections planner',
  };
  lease.lease_expires_at = startMs + lease.lease_duration_ms;
  if (!(await deps.locks.tryAcquire(lease, startMs))) {
    const empty = { enqueued: 0, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false };
    return { summary: { ...empty, planner: 'paced', skipped: 'overlapping_run', by_processor: {}, backlog_eta_minutes: 0 }, failing: await deps.billing.countFailing() };
  }
  try {
    return await planUnderLease(deps, options, startMs);
  } finally {
    await deps.locks.release(lease.key, lease.record_version_number);
  }
}

async function planUnderLease(deps: AppDeps, options: PacedRunOptions, startMs: number): Promise<{ summary: PacedSummary; failing: FailingCounts }> {
  // Each processor's queue holds only its own messages (DESIGN 13): what is still there comes off its quota.
  const inQueue = await Promise.all(PROCESSOR_IDS.map(async (p) => (await deps.collectionQueues[p].depth?.()) ?? 0));
  const rates = PROCESSOR_IDS.map((p) => scheduledRate(options.budget, p));
  const perRun = (i: number) => quotaOf({ rate: rates[i]!, intervalSeconds: options.intervalSeconds, marginSeconds: PLAN_MARGIN_SECONDS, factor: 1, inQueue: 0 });
  const feedback = await Promise.all(PROCESSOR_IDS.map((p, i) => options.store.updateQuotaFactor(p, (factor, throttled) => nextQuotaFactor(factor, throttled, perRun(i)))));
  const full = PROCESSOR_IDS.map((_, i) => quotaOf({ rate: rates[i]!, intervalSeconds: options.intervalSeconds, marginSeconds: PLAN_MARGIN_SECONDS, factor: feedback[i]!.factor, inQueue: inQueue[i]! }));
  const shouldContinue = () => options.remainingMs() > options.safetyMs;
  const elapsedMs = () => deps.wallClock.now().getTime() - startMs;
  // Loan retries are the payments service's requests too: they take the first slots of its quota, paced like periods.
  const payments = PROCESSOR_IDS.indexOf(LOAN_PROCESSOR);
  const loans = await sendDueLoanRetries(deps, { quota: full[payments]!, rate: rates[payments]!, elapsedMs, shouldContinue, ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}) });
  const quotas: ProcessorQuota[] = PROCESSOR_IDS.map((processor, i) => ({
    processor,
    quota: i === payments ? full[i]! - loans.enqueued : full[i]!,
    rate: rates[i]!,
    // Its messages still queued: the head's due periods are passed over this many times (most likely theirs).
    queued: inQueue[i]!,
    ...(i === payments ? { firstSlot: loans.enqueued } : {}),
  }));
  const { summary, byProcessor, failing } = await planPaced(deps, {
    quotas,
    elapsedMs,
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
    shouldContinue,
    send: (_processor, messages) => sendToCollectionQueues(deps.collectionQueues, messages),
  });
  const by: Partial<Record<ProcessorId, ProcessorRunSummary>> = {};
  let eta = 0;
  PROCESSOR_IDS.forEach((processor, i) => {
    const plan = byProcessor[processor]!;
    const own = i === payments ? loans : { enqueued: 0, deferred: 0 };
    const [enqueued, deferred] = [plan.enqueued + own.enqueued, plan.deferred + own.deferred];
    const backlog = inQueue[i]! + enqueued + deferred;
    by[processor] = { quota: full[i]!, enqueued, deferred, in_queue: inQueue[i]!, throttled: feedback[i]!.throttled, factor: feedback[i]!.factor, backlog };
    eta = Math.max(eta, backlogEtaMinutes(backlog, rates[i]!));
  });
  deps.metrics.dueBacklog(Object.fromEntries(PROCESSOR_IDS.map((p) => [p, by[p]!.backlog])), eta);
  summary.enqueued += loans.enqueued;
  summary.loan_retries_enqueued = loans.enqueued;
  return { summary: { ...summary, planner: 'paced', by_processor: by, backlog_eta_minutes: eta }, failing };
}

interface LoanRetryPlan {
  readonly quota: number;
  readonly rate: number;
  readonly elapsedMs: () => number;
  readonly shouldContinue: () => boolean;
  readonly pageSize?: number;
}

/**
 * The due loan payment retries (DESIGN 2.7), at most the quota, message i delayed to the run's
 * start + i / rate as the periods are; what is over the quota stays due for the next run.
 */
async function sendDueLoanRetries(deps: AppDeps, plan: LoanRetryPlan): Promise<{ enqueued: number; deferred: number }> {
  const now = deps.clock.now();
  let enqueued = 0;
  let deferred = 0;
  for await (const due of deps.payments.streamDueRetries(formatInstant(now), plan.pageSize !== undefined ? { pageSize: plan.pageSize } : {})) {
    const room = Math.max(0, plan.quota - enqueued);
    const outgoing = due.slice(0, room).map((d, i) => ({ message: loanRetryMessage(d, now), delaySeconds: delaySecondsOf(enqueued + i, plan.rate, plan.elapsedMs()) }));
    await sendToCollectionQueues(deps.collectionQueues, outgoing);
    enqueued += outgoing.length;
    deferred += due.length - outgoing.length;
    if (deferred > 0 || !plan.shouldContinue()) break;
  }
  return { enqueued, deferred };
}
