import { describe, expect, it } from 'vitest';
import type { PaymentProcessor, PaymentRequest } from '../../src/domain/ports/processor.js';
import { allFunctions, PROCESSORS, RAILS, SERVICES, type ServiceEntry, type ServiceId } from '../../src/manifest/index.js';
import { ConfigError } from '../../src/runtime/config.js';
import { chargesEveryRail, processorByRail } from '../../src/runtime/processors.js';
import { collectingServices } from '../../src/runtime/wiring/collecting.js';

/** The processor registry: SERVICES names each processor's rails, the runtime routes each charge by it. */

const railsOf = (id: ServiceId) => (SERVICES[id] as ServiceEntry).rails ?? [];

function recording(name: string, calls: string[]): PaymentProcessor {
  return {
    submit: async (request) => {
      calls.push(`${name}:${request.rail}`);
      return { kind: 'approved', confirmation_id: `${name}-1` } as never;
    },
  };
}

const request = (rail: PaymentRequest['rail']) => ({ rail }) as PaymentRequest;

describe('the payment processors (SERVICES with rails)', () => {
  it('run every rail, each rail on exactly one processor', () => {
    for (const rail of RAILS) expect(PROCESSORS.filter((id) => railsOf(id).includes(rail)), rail).toHaveLength(1);
  });

  it('are all called by every function given a processor, and each such function calls the accounts service', () => {
    const collectors = allFunctions().filter(([, manifest]) => chargesEveryRail(manifest));
    expect(collectors.map(([name]) => name).sort()).toEqual(['api', 'batch-worker', 'memberships-consumer', 'reconciliation-job', 'retry-run-worker', 'webhook-balance-worker']);
    // The reconciliation-job reads every processor's report and charges nothing: no accounts, no processor port.
    for (const [name, manifest] of collectors.filter(([n]) => n !== 'reconciliation-job')) expect([...(manifest.services ?? [])].sort(), name).toEqual([...PROCESSORS, 'accounts'].sort());
  });

  it('are each wired for the collecting functions (src/runtime/wiring/collecting.ts), with the accounts service and nothing else', () => {
    expect(Object.keys(collectingServices).sort()).toEqual([...PROCESSORS, 'accounts'].sort());
  });
});

describe('processorByRail', () => {
  it('submits each charge to the processor of its rail', async () => {
    const calls: string[] = [];
    const processor = processorByRail({ stripe: { processor: recording('stripe', calls) }, payments: { processor: recording('payments', calls) }, accounts: {} })!;
    for (const rail of RAILS) await processor.submit(request(rail));
    expect(calls).toEqual(['stripe:card', 'payments:ach', 'payments:pinless']);
  });

  it('refuses a rail none of its services runs, and is absent when no service is a processor', async () => {
    const processor = processorByRail({ stripe: { processor: recording('stripe', []) } })!;
    expect(() => processor.submit(request('ach'))).toThrow(ConfigError);
    expect(processorByRail({ accounts: {} })).toBeUndefined();
  });
});
