import { describe, expect, it } from 'vitest';
import { EmfMetrics } from '../../../src/adapters/metrics/emf.js';
import { RETURN_RATE_CLASSES } from '../../../src/domain/nacha.js';

describe('EmfMetrics', () => {
  it('prints one CloudWatch embedded-metric line per state, dimension set [["state"]], namespace Billing', () => {
    const lines: string[] = [];
    const metrics = new EmfMetrics({ write: (chunk: string) => lines.push(chunk) > 0 }, () => 1_764_590_400_000);

    metrics.failingSubscriptions({ retrying: 3, parked: 1 });

    expect(lines).toHaveLength(2);
    expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
    const [retrying, parked] = lines.map((l) => JSON.parse(l));
    expect(retrying).toEqual({
      _aws: {
        Timestamp: 1_764_590_400_000,
        CloudWatchMetrics: [{ Namespace: 'Billing', Dimensions: [['state']], Metrics: [{ Name: 'billing_failing_subscriptions', Unit: 'Count' }] }],
      },
      state: 'retrying',
      billing_failing_subscriptions: 3,
    });
    expect(parked).toMatchObject({ state: 'parked', billing_failing_subscriptions: 1 });
  });

  it('reports zero explicitly, so the gauge shows recovery', () => {
    const lines: string[] = [];
    new EmfMetrics({ write: (chunk: string) => lines.push(chunk) > 0 }).failingSubscriptions({ retrying: 0, parked: 0 });
    expect(lines.map((l) => JSON.parse(l).billing_failing_subscriptions)).toEqual([0, 0]);
  });

  it('prints the ACH return rates in percent with dimension set [["class"]], and the window\'s debits with none', () => {
    const lines: string[] = [];
    const rate = (percent: number, returns: number) => ({ percent, returns, debits: 250 });
    new EmfMetrics({ write: (chunk: string) => lines.push(chunk) > 0 }, () => 1).achReturnRates({ unauthorized: rate(0.4, 1), administrative: rate(0.8, 2), overall: rate(2, 5) });
    const parsed = lines.map((l) => JSON.parse(l));
    expect(parsed.slice(0, 3)).toEqual(
      RETURN_RATE_CLASSES.map((cls, i) => ({
        _aws: { Timestamp: 1, CloudWatchMetrics: [{ Namespace: 'Billing', Dimensions: [['class']], Metrics: [{ Name: 'billing_ach_return_rate', Unit: 'Percent' }] }] },
        class: cls,
        billing_ach_return_rate: [0.4, 0.8, 2][i],
      })),
    );
    expect(parsed[3]).toEqual({ _aws: { Timestamp: 1, CloudWatchMetrics: [{ Namespace: 'Billing', Dimensions: [[]], Metrics: [{ Name: 'billing_ach_debits_60d', Unit: 'Count' }] }] }, billing_ach_debits_60d: 250 });
  });
});
