import type { Writable } from 'node:stream';
import type { MetricsPort } from '../../domain/ports.js';

export const METRICS_NAMESPACE = 'Billing';
export const FAILING_SUBSCRIPTIONS_METRIC = 'billing_failing_subscriptions';
export const DUNNING_SUBSCRIPTIONS_METRIC = 'billing_dunning_subscriptions';

/**
 * MetricsPort as CloudWatch Embedded Metric Format: one JSON line per gauge value on stdout, which
 * Lambda ships to CloudWatch Logs and CloudWatch turns into metrics. The dimension set is exactly
 * [["state"]], as the parked-subscriptions alarm expects.
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

  private emit(dimensions: Record<string, string>, metric: string, value: number): void {
    const line = {
      _aws: {
        Timestamp: this.now(),
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: [Object.keys(dimensions)],
            Metrics: [{ Name: metric, Unit: 'Count' }],
          },
        ],
      },
      ...dimensions,
      [metric]: value,
    };
    this.out.write(`${JSON.stringify(line)}\n`);
  }
}
