import type { Writable } from 'node:stream';
import type { ReturnRate } from '../../domain/ach-return-rates.js';
import { RETURN_RATE_CLASSES, type ReturnRateClass } from '../../domain/nacha.js';
import type { MetricsPort } from '../../domain/ports/gauges.js';
import type { ProcessorId } from '../../domain/processor-budget.js';

export const METRICS_NAMESPACE = 'Billing';
export const FAILING_SUBSCRIPTIONS_METRIC = 'billing_failing_subscriptions';
export const DUNNING_SUBSCRIPTIONS_METRIC = 'billing_dunning_subscriptions';
/** Percent of the ACH debits originated in the trailing 60 days, dimension `class` (DESIGN 4.1). */
export const ACH_RETURN_RATE_METRIC = 'billing_ach_return_rate';
/** The denominator: ACH debits originated in the same window (no dimension). */
export const ACH_DEBITS_METRIC = 'billing_ach_debits_60d';

export const RECONCILIATION_GROSS_DRIFT_METRIC = 'billing_reconciliation_gross_drift_cents';
export const RECONCILIATION_OPEN_EXCEPTIONS_METRIC = 'billing_reconciliation_open_exceptions';
/** Open exceptions first seen longer ago than RECONCILIATION_EXCEPTION_MAX_AGE_HOURS, dimension `rail`: the alarm's gauge. */
export const RECONCILIATION_OVERDUE_EXCEPTIONS_METRIC = 'billing_reconciliation_overdue_exceptions';
/** Due periods waiting, dimension `processor`, and the minutes the budget needs for the longest (DESIGN 13). */
export const DUE_BACKLOG_METRIC = 'billing_due_backlog';
export const BACKLOG_ETA_METRIC = 'billing_backlog_eta_minutes';
/** How many processor circuits are open (no dimension: one alarm for any processor outage, DESIGN 15). */
export const PROCESSOR_CIRCUITS_OPEN_METRIC = 'billing_processor_circuits_open';

type Unit = 'Count' | 'Percent';

/**
 * MetricsPort as CloudWatch Embedded Metric Format: one JSON line per gauge value on stdout, which
 * Lambda ships to CloudWatch Logs and CloudWatch turns into metrics. Each dimension set is exactly
 * what its alarm names: [["state"]] for the subscription gauges, [["class"]] for the return rates.
 */
export class EmfMetrics implements MetricsPort {
  constructor(
    private readonly out: Pick<Writable, 'write'> = process.stdout,
    private readonly now: () => number = Date.now,
  ) {}

  failingSubscriptions(counts: { retrying: number; parked: number }): void {
    for (const state of ['retrying', 'parked'] as const) {
      this.emit({ state }, FAILING_SUBSCRIPTIONS_METRIC, counts[state]);
    }
  }

  dunningSubscriptions(counts: { retrying: number; exhausted: number }): void {
    for (const state of ['retrying', 'exhausted'] as const) {
      this.emit({ state }, DUNNING_SUBSCRIPTIONS_METRIC, counts[state]);
    }
  }

  achReturnRates(rates: Readonly<Record<ReturnRateClass, ReturnRate>>): void {
    for (const cls of RETURN_RATE_CLASSES) this.emit({ class: cls }, ACH_RETURN_RATE_METRIC, rates[cls].percent, 'Percent');
    this.emit({}, ACH_DEBITS_METRIC, rates.overall.debits);
  }

  reconciliation(gauge: { readonly rail: string; readonly grossDriftCents: number; readonly openExceptions: number; readonly overdueExceptions?: number }): void {
    this.emit({ rail: gauge.rail }, RECONCILIATION_GROSS_DRIFT_METRIC, gauge.grossDriftCents);
    this.emit({ rail: gauge.rail }, RECONCILIATION_OPEN_EXCEPTIONS_METRIC, gauge.openExceptions);
    if (gauge.overdueExceptions !== undefined) this.emit({ rail: gauge.rail }, RECONCILIATION_OVERDUE_EXCEPTIONS_METRIC, gauge.overdueExceptions);
  }

  dueBacklog(backlog: Readonly<Partial<Record<ProcessorId, number>>>, etaMinutes: number): void {
    for (const [processor, count] of Object.entries(backlog)) this.emit({ processor }, DUE_BACKLOG_METRIC, count);
    this.emit({}, BACKLOG_ETA_METRIC, etaMinutes);
  }

  processorCircuitsOpen(open: readonly string[]): void {
    this.emit({}, PROCESSOR_CIRCUITS_OPEN_METRIC, open.length);
  }

  private emit(dimensions: Record<string, string>, metric: string, value: number, unit: Unit = 'Count'): void {
    const line = {
      _aws: {
        Timestamp: this.now(),
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: [Object.keys(dimensions)],
            Metrics: [{ Name: metric, Unit: unit }],
          },
        ],
      },
      ...dimensions,
      [metric]: value,
    };
    this.out.write(`${JSON.stringify(line)}\n`);
  }
}
