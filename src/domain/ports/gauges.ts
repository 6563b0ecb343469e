import type { ReturnRate, ReturnRateClass } from '../ach-return-rates.js';

/** The collections-job's gauges (CloudWatch embedded metrics in AWS). */
export interface MetricsPort {
  failingSubscriptions(counts: { retrying: number; parked: number }): void;
  /** Declined periods by dunning state (DESIGN 5b `billing_dunning_subscriptions{state}`). */
  dunningSubscriptions(counts: { retrying: number; exhausted: number }): void;
  /** ACH return rates over the trailing 60 days by NACHA class (DESIGN 4.1 `billing_ach_return_rate{class}`). */
  achReturnRates(rates: Readonly<Record<ReturnRateClass, ReturnRate>>): void;
}
