import { describe, expect, it } from 'vitest';
import { ProcessorOutageError, TransientError } from '../../src/domain/errors.js';
import type { CircuitStore } from '../../src/domain/ports/circuits.js';
import type { PaymentRequest } from '../../src/domain/ports/processor.js';
import { classifyFailure } from '../../src/domain/ladder.js';
import { CIRCUIT_OPEN_MS, CIRCUIT_REFRESH_MS, CircuitBreaker, processorOfRail } from '../../src/runtime/circuits.js';
import { ManualClock } from '../support/fakes.js';

/** The circuit items as a map; counts its reads. */
class MemoryCircuits implements CircuitStore {
  readonly items = new Map<string, number>();
  reads = 0;
  failWrites = false;
  async openUntil(service: string): Promise<number | undefined> {
    this.reads += 1;
    return this.items.get(service);
  }
  async open(service: string, untilMs: number): Promise<void> {
    if (this.failWrites) throw new TransientError('store unavailable');
    if ((this.items.get(service) ?? 0) < untilMs) this.items.set(service, untilMs);
  }
}

const request = (rail: PaymentRequest['rail']): PaymentRequest => ({
  idempotency_key: 'sub:1',
  user_id: 'u',
  amount_cents: 100,
  rail,
  reference: { kind: 'subscription', user_id: 'u', billing_date: '2026-12-01T00:00:00Z', subscription_id: 'sub' },
});

function setup() {
  const store = new MemoryCircuits();
  const clock = new ManualClock('2026-12-01T00:00:00Z');
  const opened: string[] = [];
  const breaker = new CircuitBreaker({ store, wallClock: clock, onOpen: (service) => opened.push(service) });
  return { store, clock, breaker, opened };
}

describe('processor circuits (DESIGN 15)', () => {
  it('an outage is its own failure class: never counted, never merely transient', () => {
    expect(classifyFailure(new ProcessorOutageError('stripe', 'processor_auth'))).toBe('outage');
    expect(classifyFailure(new ProcessorOutageError('payments', 'circuit_open'))).toBe('outage');
  });

  it('maps each rail to the processor the manifest says runs it', () => {
    expect(processorOfRail('card')).toBe('stripe');
    expect(processorOfRail('ach')).toBe('payments');
    expect(processorOfRail('pinless')).toBe('payments');
  });

  it('opens at once on our refused credentials, stores it, and refuses the next call without sending it', async () => {
    const { store, clock, breaker, opened } = setup();
    let sent = 0;
    const processor = breaker.processor({
      submit: async () => {
        sent += 1;
        throw new ProcessorOutageError('stripe', 'processor_auth');
      },
    });
    await expect(processor.submit(request('card'))).rejects.toMatchObject({ reason: 'processor_auth' });
    expect(store.items.get('stripe')).toBe(clock.now().getTime() + CIRCUIT_OPEN_MS);
    expect(opened).toEqual(['stripe']);
    await expect(processor.submit(request('card'))).rejects.toMatchObject({ service: 'stripe', reason: 'circuit_open' });
    expect(sent).toBe(1);
    expect(await breaker.blocks('card')).toBe(true);
    expect(await breaker.blocks('ach')).toBe(false);
  });

  it('an open account directory blocks every rail', async () => {
    const { breaker } = setup();
    const accounts = breaker.accounts({ getAccount: async () => Promise.reject(new ProcessorOutageError('accounts', 'processor_auth')) });
    await expect(accounts.getAccount('u')).rejects.toBeInstanceOf(ProcessorOutageError);
    for (const rail of ['card', 'ach', 'pinless'] as const) expect(await breaker.blocks(rail)).toBe(true);
  });

  it('re-reads the store at most every few seconds: another container’s opening, and an operator’s close, arrive within that', async () => {
    const { store, clock, breaker } = setup();
    expect(await breaker.openServices()).toEqual([]);
    const reads = store.reads;
    store.items.set('payments', clock.now().getTime() + CIRCUIT_OPEN_MS);
    expect(await breaker.openServices()).toEqual([]);
    expect(store.reads).toBe(reads);
    clock.advance(CIRCUIT_REFRESH_MS);
    expect(await breaker.openServices()).toEqual(['payments']);
    store.items.delete('payments');
    clock.advance(CIRCUIT_REFRESH_MS);
    expect(await breaker.openServices()).toEqual([]);
  });

  it('a fresh read (the planner, once per run) sees another container’s opening at once', async () => {
    const { store, clock, breaker } = setup();
    expect(await breaker.openServices()).toEqual([]);
    store.items.set('stripe', clock.now().getTime() + CIRCUIT_OPEN_MS);
    expect(await breaker.openServices({ fresh: true })).toEqual(['stripe']);
  });

  it('closes by itself after open_until, so one call probes the service again', async () => {
    const { clock, breaker } = setup();
    await breaker.trip(new ProcessorOutageError('payments', 'processor_auth'));
    expect(await breaker.blocks('ach')).toBe(true);
    clock.advance(CIRCUIT_OPEN_MS + 1);
    expect(await breaker.blocks('ach')).toBe(false);
  });

  it('a circuit it cannot store still holds here, and the caller still sees the outage, not the store’s error', async () => {
    const { store, breaker } = setup();
    store.failWrites = true;
    const processor = breaker.processor({ submit: async () => Promise.reject(new ProcessorOutageError('payments', 'processor_auth')) });
    await expect(processor.submit(request('ach'))).rejects.toBeInstanceOf(ProcessorOutageError);
    expect(await breaker.blocks('pinless')).toBe(true);
  });

  it('other errors pass through and open nothing', async () => {
    const { store, breaker } = setup();
    const processor = breaker.processor({ submit: async () => Promise.reject(new TransientError('503')) });
    await expect(processor.submit(request('card'))).rejects.toBeInstanceOf(TransientError);
    expect(store.items.size).toBe(0);
  });
});
