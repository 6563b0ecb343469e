import type { Context } from 'aws-lambda';
import { ConfigError } from '../runtime/config.js';
import type { ReconciliationRun } from '../domain/ports/reconciliation.js';
import type { PaymentMethod } from '../domain/records.js';
import { RAILS_RECONCILED, reconciliationRequestSchema } from '../domain/reconciliation/request.js';
import { safeParseCold } from '../domain/lazy-schema.js';
import { reconcileDay, shiftDay, type ReconcileDeps } from '../domain/use-cases/reconcile-day.js';
import { DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS, reconciliationGauge } from '../domain/use-cases/reconciliation-gauges.js';
import type { AppDeps } from '../runtime/deps.js';

/**
 * The reconciliation-job (DESIGN 14): the daily schedule reconciles yesterday (UTC) on every rail;
 * an on-demand invocation names `{"date", "rails"?}`. One rail's failure does not stop the others.
 */
export function createReconciliationJobHandler(deps: AppDeps) {
  return async (event: unknown, context?: Context): Promise<{ runs: ReconciliationRun[]; failed: PaymentMethod[] }> => {
    const logger = deps.logger.child({ fn: 'reconciliation-job', request_id: context?.awsRequestId });
    const asked = safeParseCold(reconciliationRequestSchema, event);
    const date = asked.success && asked.data.date ? asked.data.date : shiftDay(deps.clock.now().toISOString().slice(0, 10), -1);
    const rails = asked.success && asked.data.rails ? asked.data.rails : RAILS_RECONCILED;
    const ports = reconcileDepsOf(deps);
    const runs: ReconciliationRun[] = [];
    const failed: PaymentMethod[] = [];
    for (const rail of rails) {
      try {
        const { run, created } = await reconcileDay(ports, rail, date);
        runs.push(run);
        logger.info({ date, rail, exceptions: run.exception_ids.length, new_exceptions: created.length, gross_drift_cents: run.gross_drift_cents }, 'reconciliation run completed');
        const gauge = await reconciliationGauge(ports, run, deps.settings.reconciliationExceptionMaxAgeHours ?? DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS);
        deps.metrics.reconciliation?.(gauge);
      } catch (error) {
        failed.push(rail);
        logger.error({ err: error, date, rail }, 'reconciliation run failed');
      }
    }
    if (failed.length > 0 && runs.length === 0) throw new Error(`reconciliation of ${date} failed on every rail`);
    return { runs, failed };
  };
}

function reconcileDepsOf(deps: AppDeps): ReconcileDeps {
  const reports = deps.processorReports;
  if (!reports?.card || !reports.ach || !reports.pinless) throw new ConfigError('reconciliation-job: a processor report is missing for a rail');
  if (!deps.reconciliationEvents) throw new ConfigError('reconciliation-job: no events port');
  return { clock: deps.clock, movements: deps.movements, reports: { card: reports.card, ach: reports.ach, pinless: reports.pinless }, reconciliation: deps.reconciliation, events: deps.reconciliationEvents };
}
