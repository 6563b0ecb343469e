import type { ProcessorId } from '../processor-budget.js';
import type { AchRateCounts, ReturnRate } from '../ach-return-rates.js';
import type { ReturnRateClass } from '../nacha.js';
import type { DunningState } from '../dunning.js';

/** Counters the billing writes keep for the collections-job's gauges: one read each, whatever the table holds. */
export interface BillingGauges {
  /** Live billing failures: retrying (a next attempt is set) and parked. Eventually consistent. */
  countFailing(): Promise<{ retrying: number; parked: number }>;
  /** Declined periods by dunning state. */
  countDunning(): Promise<Record<DunningState, number>>;
  /** The subscriptions' ACH return-rate counters summed over the UTC days `fromDay`..`toDay` (both included). */
  achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts>;
}

/** The collections-job's gauges (CloudWatch embedded metrics in AWS). */
export interface MetricsPort {
  failingSubscriptions(counts: { retrying: number; parked: number }): void;
  /** Declined periods by dunning state (DESIGN 5b `billing_dunning_subscriptions{state}`). */
  dunningSubscriptions(counts: { retrying: number; exhausted: number }): void;
  /** ACH return rates over the trailing 60 days by NACHA class (DESIGN 4.1 `billing_ach_return_rate{class}`). */
  achReturnRates(rates: Readonly<Record<ReturnRateClass, ReturnRate>>): void;
  /** A reconciliation run's gauges (DESIGN 14): `billing_reconciliation_gross_drift_cents{rail}`, `billing_reconciliation_open_exceptions{rail}`. */
  reconciliation?(gauge: { readonly rail: string; readonly grossDriftCents: number; readonly openExceptions: number; readonly overdueExceptions?: number }): void;
  /** Due periods waiting per processor and the minutes the budget needs for them (DESIGN 13 `billing_due_backlog{processor}`, `billing_backlog_eta_minutes`). */
  dueBacklog(backlog: Readonly<Partial<Record<ProcessorId, number>>>, etaMinutes: number): void;
  /** The services whose circuit is open (DESIGN 15 `billing_processor_circuits_open`): the outage alarm's gauge. */
  processorCircuitsOpen?(open: readonly string[]): void;
}
