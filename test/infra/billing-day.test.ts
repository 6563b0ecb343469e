import { describe, expect, it } from 'vitest';
import type { CfnResource } from 'aws-cdk-lib';
import { BACKLOG_ETA_METRIC, DUE_BACKLOG_METRIC } from '../../src/adapters/metrics/emf.js';
import { FUNCTIONS, type FunctionName } from '../../src/manifest/index.js';
import { callsProcessorOf } from '../../src/runtime/processors.js';
import { COLLECTION_BATCHING_WINDOW_SECONDS, eventSourceCap, IN_BATCH_PARALLELISM, PROCESSOR_P99_LATENCY_MS } from '../../src/domain/billing-day.js';
import { USER_CONCURRENCY } from '../../src/handlers/shared/batch.js';
import { resourcesOfType, synthBilling } from './support.js';

const prod = synthBilling({ stage: 'prod', stripeBudgetPerSecond: 25, paymentsBudgetPerSecond: 100 });
const functionNamed = (name: string) => {
  const found = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === name);
  if (!found) throw new Error(`no function ${name}`);
  return found.Properties as { Environment: { Variables: Record<string, unknown> } };
};

describe('billing day in the stacks (DESIGN 13)', () => {
  it('gives every function that calls a processor, and the planner, the budgets from the context', () => {
    for (const name of Object.keys(FUNCTIONS) as FunctionName[]) {
      const env = functionNamed(`prod-billing-${name}`).Environment.Variables;
      const charges = callsProcessorOf(FUNCTIONS[name], 'card') || callsProcessorOf(FUNCTIONS[name], 'ach');
      const budgeted = charges || name === 'collections-job';
      expect(env.STRIPE_BUDGET_PER_SECOND, name).toBe(budgeted ? '25' : undefined);
      expect(env.PAYMENTS_BUDGET_PER_SECOND, name).toBe(budgeted ? '100' : undefined);
      expect(env.PROCESSOR_PERSON_SHARE, name).toBe(budgeted ? '0.1' : undefined);
    }
    expect(functionNamed('prod-billing-collections-job').Environment.Variables.COLLECTIONS_INTERVAL_SECONDS).toBe('900');
  });

  it('defaults each budget to 20 requests a second', () => {
    const env = functionNamed.call(null, 'prod-billing-batch-worker').Environment.Variables;
    expect(env.STRIPE_BUDGET_PER_SECOND).toBe('25');
    const plain = synthBilling({ stage: 'qa' });
    const worker = Object.values(resourcesOfType(plain.statelessTemplate, 'AWS::Lambda::Function')).find((f) => f.Properties?.FunctionName === 'qa-billing-batch-worker');
    expect((worker?.Properties as { Environment: { Variables: Record<string, unknown> } }).Environment.Variables).toMatchObject({ STRIPE_BUDGET_PER_SECOND: '20', PAYMENTS_BUDGET_PER_SECOND: '20' });
  });

  it("gives each processor's collections queue its own event source on the batch-worker, capped at max(2, ceil(budget x p99 / in-batch parallelism) + 1)", () => {
    const mappings = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::EventSourceMapping')).map((m) => m.Properties as Record<string, unknown>);
    const capOf = (queue: 'collectionsStripe' | 'collectionsPayments') => {
      const id = prod.stateful.getLogicalId(prod.stateful[queue].queue.node.defaultChild as CfnResource);
      const found = mappings.filter((m) => JSON.stringify(m.EventSourceArn).includes(id));
      expect(found, queue).toHaveLength(1);
      expect(JSON.stringify(found[0]!.FunctionName)).toMatch(/BatchWorker/);
      return (found[0]!.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency;
    };
    // stripe: 25 requests/s x 0.38 s / 8 in flight = 1.19 -> 2 + 1; payments: 100 x 0.38 / 8 = 4.75 -> 5 + 1.
    expect(capOf('collectionsStripe')).toBe(3);
    expect(capOf('collectionsPayments')).toBe(6);
    // The batch-worker's reserved concurrency covers the sum of its sources' caps.
    expect(functionNamed('prod-billing-batch-worker')).toMatchObject({ ReservedConcurrentExecutions: 9 });
    expect(eventSourceCap(40, PROCESSOR_P99_LATENCY_MS, IN_BATCH_PARALLELISM)).toBe(3);
    expect(eventSourceCap(2, 380, 8)).toBe(2);
    expect(IN_BATCH_PARALLELISM).toBe(USER_CONCURRENCY);
  });

  it('gives both collections queues\' event sources a batching window of a second, and each queue a visibility timeout six function timeouts plus it', () => {
    const mappings = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::Lambda::EventSourceMapping')).map((m) => m.Properties as Record<string, unknown>);
    const queues = resourcesOfType(prod.statefulTemplate, 'AWS::SQS::Queue');
    for (const queue of ['collectionsStripe', 'collectionsPayments'] as const) {
      const id = prod.stateful.getLogicalId(prod.stateful[queue].queue.node.defaultChild as CfnResource);
      const [mapping] = mappings.filter((m) => JSON.stringify(m.EventSourceArn).includes(id));
      expect(mapping, queue).toMatchObject({ MaximumBatchingWindowInSeconds: COLLECTION_BATCHING_WINDOW_SECONDS, BatchSize: 10 });
      expect(queues[id]?.Properties?.VisibilityTimeout, queue).toBe(6 * FUNCTIONS['batch-worker'].timeoutSeconds + COLLECTION_BATCHING_WINDOW_SECONDS);
    }
    expect(COLLECTION_BATCHING_WINDOW_SECONDS).toBe(1);
    // The other queues keep Lambda's default: no window.
    const others = mappings.filter((m) => JSON.stringify(m.EventSourceArn).includes('Queue') && !/CollectionsStripe|CollectionsPayments/i.test(JSON.stringify(m.EventSourceArn)));
    expect(others.length).toBeGreaterThan(0);
    for (const m of others) expect(m.MaximumBatchingWindowInSeconds, JSON.stringify(m.EventSourceArn)).toBeUndefined();
  });

  it('alarms when the backlog ETA passes 48 hours, and shows the backlog gauges on the dashboard', () => {
    const alarms = Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties as Record<string, unknown>);
    const eta = alarms.find((a) => a.AlarmName === 'prod-billing-backlog-eta');
    expect(eta).toMatchObject({ MetricName: BACKLOG_ETA_METRIC, Namespace: 'Billing', Threshold: 48 * 60, ComparisonOperator: 'GreaterThanThreshold' });
    expect(JSON.stringify(eta?.AlarmActions)).toMatch(/AlarmTopic/);
    const dashboard = JSON.stringify(Object.values(resourcesOfType(prod.statelessTemplate, 'AWS::CloudWatch::Dashboard')).map((d) => d.Properties));
    expect(dashboard).toContain(DUE_BACKLOG_METRIC);
    expect(dashboard).toContain('processor');
  });
});
