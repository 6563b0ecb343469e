import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { ConfigError } from '../runtime/config.js';
import type { ReconciliationRun } from '../domain/ports/reconciliation.js';
import type { PaymentMethod } from '../domain/records.js';
import { continuationSchema, RAILS_RECONCILED, reconciliationRequestSchema, type Continuation } from '../domain/reconciliation/request.js';
import { DEFAULT_RECONCILIATION_MARGIN_SECONDS } from '../domain/reconciliation/checkpoint.js';
import { safeParseCold } from '../domain/lazy-schema.js';
import { runReconciliation, shiftDay, type ReconcileDeps, type RunOutcome, type TimeLeft } from '../domain/use-cases/reconcile-day.js';
import { DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS, reconciliationGauge } from '../domain/use-cases/reconciliation-gauges.js';
import type { AppDeps } from '../runtime/deps.js';
import { limitedReport } from '../runtime/processor-limiter.js';

export const DEFAULT_RECONCILIATION_MARGIN_MS = DEFAULT_RECONCILIATION_MARGIN_SECONDS * 1000;

export interface ReconciliationJobResult {
  readonly runs: ReconciliationRun[];
  readonly failed: PaymentMethod[];
  /** Rails handed over to a continuation (a large day runs across invocations). */
  readonly continued: PaymentMethod[];
}

/** A continuation batch answers per message; a scheduled or on-demand run answers its runs. */
export interface ReconciliationJobHandler {
  (event: SQSEvent, context?: Context): Promise<SQSBatchResponse>;
  (event: unknown, context?: Context): Promise<ReconciliationJobResult>;
}

const isSqsEvent = (event: unknown): event is SQSEvent => Array.isArray((event as { Records?: unknown } | null)?.Records);

/**
 * The reconciliation-job (DESIGN 14): the daily schedule reconciles yesterday (UTC) on every rail;
 * an on-demand invocation names `{"date", "rails"?}`; a message on its own queue continues one
 * rail's run from its checkpoint. One rail's failure does not stop the others.
 */
export function createReconciliationJobHandler(deps: AppDeps): ReconciliationJobHandler {
  const handler = async (event: unknown, context?: Context): Promise<ReconciliationJobResult | SQSBatchResponse> => {
    const logger = deps.logger.child({ fn: 'reconciliation-job', request_id: context?.awsRequestId });
    const ports = reconcileDepsOf(deps);
    const margin = deps.settings.reconciliationMarginMs ?? DEFAULT_RECONCILIATION_MARGIN_MS;
    const timeLeft: TimeLeft = context ? () => context.getRemainingTimeInMillis() < margin : () => false;
    const report = async (request: Continuation, outcome: RunOutcome): Promise<void> => {
      if (outcome.kind === 'completed') {
        const { run } = outcome;
        logger.info({ date: run.date, rail: run.rail, exceptions: run.exception_ids.length, new_exceptions: outcome.created.length, gross_drift_cents: run.gross_drift_cents }, 'reconciliation run completed');
        // The rail's open exceptions of every day, not only this run's (DESIGN 14).
        deps.metrics.reconciliation?.(await reconciliationGauge(ports, run, deps.settings.reconciliationExceptionMaxAgeHours ?? DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS));
      } else if (outcome.kind === 'continued') logger.info({ date: request.date, rail: request.rail, step: outcome.next.step }, 'reconciliation run handed over to its continuation');
      else logger.info({ date: request.date, rail: request.rail, step: request.step, reason: outcome.reason }, 'reconciliation continuation skipped');
    };

    if (isSqsEvent(event)) {
      const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
      for (const record of event.Records) {
        const parsed = safeParseCold(continuationSchema, parseJson(record.body));
        if (!parsed.success) {
          logger.error({ message_id: record.messageId }, 'reconciliation continuation is not valid; left for the DLQ');
          batchItemFailures.push({ itemIdentifier: record.messageId });
          continue;
        }
        try {
          const redelivered = Number(record.attributes?.ApproximateReceiveCount ?? '1') > 1;
          await report(parsed.data, await runReconciliation(ports, parsed.data, timeLeft, redelivered));
        } catch (error) {
          logger.error({ err: error, date: parsed.data.date, rail: parsed.data.rail, step: parsed.data.step }, 'reconciliation continuation failed');
          batchItemFailures.push({ itemIdentifier: record.messageId });
        }
      }
      return { batchItemFailures };
    }

    const asked = safeParseCold(reconciliationRequestSchema, event);
    const date = asked.success && asked.data.date ? asked.data.date : shiftDay(deps.clock.now().toISOString().slice(0, 10), -1);
    const rails = asked.success && asked.data.rails ? asked.data.rails : RAILS_RECONCILED;
    const result: ReconciliationJobResult = { runs: [], failed: [], continued: [] };
    for (const rail of rails) {
      const request: Continuation = { date, rail, run_id: deps.ids.newId(), step: 0 };
      try {
        // Out of time before this rail starts: its run starts in a continuation of its own.
        const outcome = context && timeLeft() ? await startLater(ports, request) : await runReconciliation(ports, request, timeLeft);
        await report(request, outcome);
        if (outcome.kind === 'completed') result.runs.push(outcome.run);
        else if (outcome.kind === 'continued') result.continued.push(rail);
      } catch (error) {
        result.failed.push(rail);
        logger.error({ err: error, date, rail }, 'reconciliation run failed');
      }
    }
    if (result.failed.length > 0 && result.runs.length === 0 && result.continued.length === 0) throw new Error(`reconciliation of ${date} failed on every rail`);
    return result;
  };
  return handler as ReconciliationJobHandler;
}

async function startLater(ports: ReconcileDeps, request: Continuation): Promise<RunOutcome> {
  await ports.continuations!.sendBatch([{ id: `${request.run_id}-0`, body: JSON.stringify(request) }]);
  return { kind: 'continued', next: request };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function reconcileDepsOf(deps: AppDeps): ReconcileDeps {
  const reports = deps.processorReports;
  if (!reports?.card || !reports.ach || !reports.pinless) throw new ConfigError('reconciliation-job: a processor report is missing for a rail');
  if (!deps.reconciliationEvents) throw new ConfigError('reconciliation-job: no events port');
  // Each report page takes a token of its processor's budget (DESIGN 13), when budgets are set.
  const limiter = deps.processorLimiter;
  const limited = limiter ? { card: limitedReport(reports.card, limiter), ach: limitedReport(reports.ach, limiter), pinless: limitedReport(reports.pinless, limiter) } : { card: reports.card, ach: reports.ach, pinless: reports.pinless };
  return {
    clock: deps.clock,
    ids: deps.ids,
    movements: deps.movements,
    reports: limited,
    reconciliation: deps.reconciliation,
    events: deps.reconciliationEvents,
    ...(deps.reconciliationQueue ? { continuations: deps.reconciliationQueue } : {}),
  };
}
