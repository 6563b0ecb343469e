import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoProcessorBudgetStore } from '../../src/adapters/dynamodb/processor-budget-store.js';
import { ProcessorThrottledError } from '../../src/domain/errors.js';
import type { ProcessorBudgetStore } from '../../src/domain/ports/processor-budget.js';
import type { PaymentProcessor, PaymentRequest } from '../../src/domain/ports/processor.js';
import { limitedProcessor, ProcessorLimiter, USE_WITHIN_MS } from '../../src/runtime/processor-limiter.js';
import { createTestDynamo, type TestDynamo } from '../support/dynamo.js';

/** Wall time that moves only when the limiter sleeps: the test asserts what was leased for which second, never how long it took. */
class SteppedWallClock {
  constructor(public ms: number) {}
  readonly nowMs = (): number => this.ms;
  readonly sleep = async (ms: number): Promise<void> => {
    this.ms += ms;
  };
}

/** Node's timers may fire a millisecond before Date.now() reaches their time: each sleep of 2 ms or more ends 1 ms short. */
class EarlyWakingClock extends SteppedWallClock {
  override readonly sleep = async (ms: number): Promise<void> => {
    this.ms += ms >= 2 ? ms - 1 : ms;
  };
}

/** The store, recording each lease request (the DynamoDB requests the limiter makes). */
class CountingStore implements ProcessorBudgetStore {
  leases: { second: number; count: number; granted: number }[] = [];
  constructor(private readonly inner: ProcessorBudgetStore) {}
  async lease(...args: Parameters<ProcessorBudgetStore['lease']>): Promise<number> {
    const granted = await this.inner.lease(...args);
    this.leases.push({ second: args[1], count: args[2], granted });
    return granted;
  }
  reportThrottled = (...args: Parameters<ProcessorBudgetStore['reportThrottled']>) => this.inner.reportThrottled(...args);
  throttledTotal = (...args: Parameters<ProcessorBudgetStore['throttledTotal']>) => this.inner.throttledTotal(...args);
  updateQuotaFactor = (...args: Parameters<ProcessorBudgetStore['updateQuotaFactor']>) => this.inner.updateQuotaFactor(...args);
}

const SETTINGS = { perSecond: { stripe: 20, payments: 10 }, personShare: 0.1 };

function request(rail: PaymentRequest['rail'], n: number): PaymentRequest {
  return { idempotency_key: `sub-${n}:1`, user_id: `user-${n}`, amount_cents: 100, rail, reference: { kind: 'subscription', user_id: `user-${n}`, billing_date: '2026-12-01T00:00:00Z', subscription_id: `sub-${n}` } };
}

describe('ProcessorLimiter on DynamoDB Local', () => {
  let db: TestDynamo;
  let start = 2_000_000_000_000;
  beforeAll(async () => {
    db = await createTestDynamo('limiter');
  });

  function limiter(klass: 'scheduled' | 'person', clock: SteppedWallClock) {
    const store = new CountingStore(new DynamoProcessorBudgetStore(db.client, db.tables.locks));
    return { store, limiter: new ProcessorLimiter({ store, settings: SETTINGS, klass, nowMs: clock.nowMs, sleep: clock.sleep }) };
  }

  it('a scheduled caller takes at most (1 - share) x budget in a second and waits for the next second for more', async () => {
    start += 100_000;
    const clock = new SteppedWallClock(start);
    const { store, limiter: l } = limiter('scheduled', clock);
    const seconds: number[] = [];
    for (let i = 0; i < 20; i++) {
      await l.take('stripe');
      seconds.push(Math.floor(clock.ms / 1000));
    }
    const first = Math.floor(start / 1000);
    expect(seconds.filter((s) => s === first)).toHaveLength(18);
    expect(seconds.filter((s) => s === first + 1)).toHaveLength(2);
    expect(store.leases.filter((lease) => lease.granted > 0)).toHaveLength(20);
  });

  it('a token leased for the next second is not used before that second begins, when the timer wakes a millisecond early', async () => {
    start += 100_000;
    const second = Math.floor(start / 1000) + 1;
    // Asked late in a second: the lease is for the next one, and the limiter sleeps until it begins.
    const clock = new EarlyWakingClock(second * 1000 + USE_WITHIN_MS + 50);
    const { store, limiter: l } = limiter('scheduled', clock);
    for (let i = 0; i < 3; i++) {
      await l.withBlock({ stripe: 1 }, async (block) => block.take('stripe'));
      // Used in the second it was leased for: one used in the second before would be over that second's budget.
      expect(Math.floor(clock.ms / 1000)).toBe(store.leases.at(-1)!.second);
      clock.ms = Math.floor(clock.ms / 1000) * 1000 + USE_WITHIN_MS + 50;
    }
    expect(store.leases.map((lease) => lease.second)).toEqual([second + 1, second + 2, second + 3]);
  });

  it('a person caller may use the share the schedule leaves', async () => {
    start += 100_000;
    const clock = new SteppedWallClock(start);
    const scheduled = limiter('scheduled', clock).limiter;
    const person = limiter('person', clock).limiter;
    await scheduled.withBlock({ stripe: 18 }, async (block) => {
      for (let i = 0; i < 18; i++) await block.take('stripe');
    });
    const before = clock.ms;
    await person.take('stripe');
    await person.take('stripe');
    expect(clock.ms).toBe(before);
    await person.take('stripe');
    expect(Math.floor(clock.ms / 1000)).toBe(Math.floor(before / 1000) + 1);
  });

  it('a block leases its planned tokens in one request and spends them without asking again', async () => {
    start += 100_000;
    const clock = new SteppedWallClock(start);
    const { store, limiter: l } = limiter('scheduled', clock);
    await l.withBlock({ payments: 9 }, async () => {
      for (let i = 0; i < 9; i++) await l.take('payments');
    });
    expect(store.leases).toEqual([{ second: Math.floor(start / 1000), count: 9, granted: 9 }]);
  });

  it('a lease asked for late in a second is for the next second, so no token is used where it could land in the next', async () => {
    start += 100_000;
    const second = Math.floor(start / 1000) + 1;
    const clock = new SteppedWallClock(second * 1000 + USE_WITHIN_MS + 50);
    const { store, limiter: l } = limiter('scheduled', clock);
    await l.take('stripe');
    expect(store.leases[0]?.second).toBe(second + 1);
    expect(clock.ms).toBe((second + 1) * 1000);
  });

  it('tokens held past their second are not used: the block leases again for the current second', async () => {
    start += 100_000;
    const clock = new SteppedWallClock(start);
    const { store, limiter: l } = limiter('scheduled', clock);
    await l.withBlock({ stripe: 5 }, async () => {
      await l.take('stripe');
      clock.ms += 1000;
      await l.take('stripe');
    });
    expect(store.leases.map((lease) => lease.second)).toEqual([Math.floor(start / 1000), Math.floor(start / 1000) + 1]);
  });

  it('a block whose tokens expired before its callers reached them leases again only for the callers waiting', async () => {
    start += 100_000;
    const clock = new SteppedWallClock(start);
    const { store, limiter: l } = limiter('scheduled', clock);
    await l.withBlock({ stripe: 6 }, async () => {
      await l.take('stripe');
      // The other five callers are slow: one reaches its token a second later, alone.
      clock.ms += 1000;
      await l.take('stripe');
    });
    expect(store.leases.map((lease) => lease.count)).toEqual([6, 1]);
  });

  it('when leases answer slowly, the next is asked for the second still open when its answer comes back', async () => {
    start += 100_000;
    const second = Math.floor(start / 1000) + 1;
    const clock = new SteppedWallClock(second * 1000 + 100);
    const store = new CountingStore(new DynamoProcessorBudgetStore(db.client, db.tables.locks));
    // Every lease takes 900 ms of wall time: its tokens, asked for this second, would arrive spent.
    const slow: ProcessorBudgetStore = { ...store, lease: async (...args) => { clock.ms += 900; return store.lease(...args); } };
    const l = new ProcessorLimiter({ store: slow, settings: SETTINGS, klass: 'scheduled', nowMs: clock.nowMs, sleep: clock.sleep });
    await l.take('stripe');
    clock.ms = (second + 5) * 1000 + 100;
    await l.take('stripe');
    // The second lease knows the first took 900 ms: it asks for the next second, used when it starts.
    expect(store.leases.at(-1)?.second).toBe(second + 6);
    expect(clock.ms).toBe((second + 6) * 1000);
  });

  it('after a throttled answer the block presents nothing more to that processor, and still presents to the other', async () => {
    start += 100_000;
    const clock = new SteppedWallClock(start);
    const { limiter: l } = limiter('scheduled', clock);
    const presented: string[] = [];
    const inner: PaymentProcessor = {
      submit: async (req) => {
        presented.push(req.idempotency_key);
        if (req.rail === 'card') throw new ProcessorThrottledError('stripe');
        return { outcome: 'approved', confirmation_id: `c-${req.idempotency_key}` };
      },
    };
    const processor = limitedProcessor(inner, l);
    await l.withBlock({ stripe: 3, payments: 1 }, async () => {
      await expect(processor.submit(request('card', 1))).rejects.toBeInstanceOf(ProcessorThrottledError);
      await expect(processor.submit(request('card', 2))).rejects.toBeInstanceOf(ProcessorThrottledError);
      await expect(processor.submit(request('pinless', 3))).resolves.toMatchObject({ outcome: 'approved' });
    });
    expect(presented).toEqual(['sub-1:1', 'sub-3:1']);
  });
});
