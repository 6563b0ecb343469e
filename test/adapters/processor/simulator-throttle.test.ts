import { describe, expect, it } from 'vitest';
import { ProcessorRateLimit } from '../../../src/adapters/processor/rate-limit.js';
import { PaymentSimulator } from '../../../src/adapters/processor/simulator.js';
import { ProcessorThrottledError } from '../../../src/domain/errors.js';
import type { PaymentRequest } from '../../../src/domain/ports/processor.js';
import { ManualClock } from '../../support/fakes.js';

const request = (n: number, rail: PaymentRequest['rail'] = 'card'): PaymentRequest => ({
  idempotency_key: `sub-${n}:1`,
  user_id: `u${n}`,
  amount_cents: 1999,
  rail,
  reference: { kind: 'subscription', user_id: `u${n}`, billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: `sub-${n}` },
});

describe('the simulator throttles at its rate limit (DESIGN 9)', () => {
  it('refuses requests above the limit in one wall-clock second with the throttled error, per processor, and counts them', async () => {
    let wall = 5_000_000;
    const sim = new PaymentSimulator(new ManualClock(), undefined, { wallNowMs: () => wall });
    sim.configure({ rate_limit_per_second: { stripe: 3, payments: 2 } });
    const answers = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => sim.submit(request(n))));
    expect(answers.filter((a) => a.status === 'fulfilled')).toHaveLength(3);
    const refused = answers.filter((a): a is PromiseRejectedResult => a.status === 'rejected');
    expect(refused).toHaveLength(2);
    for (const r of refused) expect(r.reason).toBeInstanceOf(ProcessorThrottledError);
    // The other processor has its own limit; a new second starts a new count.
    await sim.submit(request(6, 'pinless'));
    await sim.submit(request(7, 'ach'));
    await expect(sim.submit(request(8, 'pinless'))).rejects.toMatchObject({ processor: 'payments' });
    wall += 1000;
    await expect(sim.submit(request(9))).resolves.toMatchObject({ outcome: 'approved' });
    // A throttled request charged nothing.
    expect(sim.charges().map((c) => c.user_id).sort()).toEqual(['u1', 'u2', 'u3', 'u6', 'u7', 'u9']);
    expect(sim.stats()).toEqual({
      requests: 9,
      presented: 6,
      throttled: 3,
      max_per_second: 5,
      by_processor: {
        stripe: { requests: 6, presented: 4, throttled: 2, max_per_second: 5 },
        payments: { requests: 3, presented: 2, throttled: 1, max_per_second: 3 },
      },
    });
  });

  it('without a limit nothing is throttled, and requests are still counted', async () => {
    const sim = new PaymentSimulator(new ManualClock());
    await Promise.all([1, 2, 3, 4].map((n) => sim.submit(request(n))));
    expect(sim.stats()).toMatchObject({ requests: 4, presented: 4, throttled: 0 });
  });

  it('draws latencies of the configured shape: the median near p50, the 99th percentile near p99', () => {
    const limit = new ProcessorRateLimit();
    limit.configure(undefined, { p50: 120, p99: 380 });
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const samples = Array.from({ length: 20_000 }, () => limit.delayMs(random)).sort((a, b) => a - b);
    expect(samples[10_000]!).toBeGreaterThan(110);
    expect(samples[10_000]!).toBeLessThan(130);
    expect(samples[19_800]!).toBeGreaterThan(330);
    expect(samples[19_800]!).toBeLessThan(430);
  });

  it('refuses a malformed limit or latency', () => {
    const sim = new PaymentSimulator(new ManualClock());
    expect(() => sim.configure({ rate_limit_per_second: { stripe: 0 } })).toThrow();
    expect(() => sim.configure({ latency_ms: { p50: 400, p99: 100 } })).toThrow();
    expect(() => sim.configure({ rate_limit_per_second: { visa: 3 } as never })).toThrow();
  });
});
