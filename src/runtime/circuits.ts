import { ProcessorOutageError } from '../domain/errors.js';
import type { AccountDirectory } from '../domain/ports/account-directory.js';
import type { CircuitStore, ProcessorCircuits } from '../domain/ports/circuits.js';
import type { Clock } from '../domain/ports/clock.js';
import type { PaymentProcessor, RefundQuery } from '../domain/ports/processor.js';
import { PROCESSORS, SERVICES, type Rail, type ServiceEntry, type ServiceId } from '../manifest/index.js';

/** How long an outage keeps a circuit open before one call probes the service again. */
export const CIRCUIT_OPEN_MS = 5 * 60_000;
/** How stale a worker's view of the circuits may be: another container's opening reaches it within this. */
export const CIRCUIT_REFRESH_MS = 5_000;

/** The services whose circuits bind collection: every processor and the account directory it asks first. */
export const CIRCUIT_SERVICES: readonly ServiceId[] = [...PROCESSORS, 'accounts'];

/** The processor that runs a rail (the manifest's SERVICES). */
export function processorOfRail(rail: Rail): ServiceId {
  const found = PROCESSORS.find((id) => ((SERVICES[id] as ServiceEntry).rails ?? []).includes(rail));
  if (!found) throw new Error(`no processor runs the ${rail} rail`);
  return found;
}

export interface CircuitBreakerOptions {
  readonly store: CircuitStore;
  /** Wall time: an outage is operational, not business time (the local clock may be days ahead). */
  readonly wallClock: Clock;
  readonly openMs?: number;
  readonly refreshMs?: number;
  /** Told once per opening this container makes (the log and the alarm's metric). */
  readonly onOpen?: (service: string, error: ProcessorOutageError) => void;
  /** An opening this container could not store: it still holds here; other containers find the outage themselves. */
  readonly onStoreError?: (error: unknown) => void;
}

/**
 * One container's view of the circuits (DESIGN 15): read from the store at most every
 * `refreshMs`, and opened at once, in this container and in the store, when a service refuses our
 * credentials. The guarded ports send nothing to a service whose circuit is open.
 */
export class CircuitBreaker implements ProcessorCircuits {
  private readonly openUntil = new Map<string, number>();
  /** When this container last opened each circuit: a read that began before it does not undo it. */
  private readonly trippedAt = new Map<string, number>();
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;
  private readonly openMs: number;
  private readonly refreshMs: number;

  constructor(private readonly options: CircuitBreakerOptions) {
    this.openMs = options.openMs ?? CIRCUIT_OPEN_MS;
    this.refreshMs = options.refreshMs ?? CIRCUIT_REFRESH_MS;
  }

  async openServices(options: { readonly fresh?: boolean } = {}): Promise<readonly string[]> {
    await this.refresh(options.fresh === true);
    const now = this.now();
    return CIRCUIT_SERVICES.filter((service) => (this.openUntil.get(service) ?? 0) > now);
  }

  async blocks(rail: Rail, open?: readonly string[]): Promise<boolean> {
    const services = open ?? (await this.openServices());
    return services.includes(processorOfRail(rail)) || services.includes('accounts');
  }

  /** Refuses at once while `service`'s circuit is open. */
  async refuseIfOpen(service: string): Promise<void> {
    await this.refresh();
    if ((this.openUntil.get(service) ?? 0) > this.now()) throw new ProcessorOutageError(service, 'circuit_open');
  }

  /** Opens `service`'s circuit after it refused our credentials. */
  async trip(error: ProcessorOutageError): Promise<void> {
    const now = this.now();
    const until = now + this.openMs;
    if ((this.openUntil.get(error.service) ?? 0) >= until) return;
    this.openUntil.set(error.service, until);
    this.trippedAt.set(error.service, now);
    this.options.onOpen?.(error.service, error);
    try {
      await this.options.store.open(error.service, until, error.reason, now);
    } catch (storeError) {
      this.options.onStoreError?.(storeError);
    }
  }

  /** Runs a call to `service` through its circuit: refused while open, opening it on our outage. */
  async call<T>(service: string, fn: () => Promise<T>): Promise<T> {
    await this.refuseIfOpen(service);
    try {
      return await fn();
    } catch (error) {
      if (error instanceof ProcessorOutageError && error.reason === 'processor_auth') await this.trip(error);
      throw error;
    }
  }

  processor(inner: PaymentProcessor): PaymentProcessor {
    const findRefund = inner.findRefund?.bind(inner);
    return {
      submit: (request, signal) => this.call(processorOfRail(request.rail), () => inner.submit(request, signal)),
      ...(findRefund ? { findRefund: (query: RefundQuery, signal?: AbortSignal) => this.call(processorOfRail(query.rail), () => findRefund(query, signal)) } : {}),
    };
  }

  accounts(inner: AccountDirectory): AccountDirectory {
    return { getAccount: (userId, signal) => this.call('accounts', () => inner.getAccount(userId, signal)) };
  }

  private now(): number {
    return this.options.wallClock.now().getTime();
  }

  private async refresh(fresh = false): Promise<void> {
    if (!fresh && this.now() - this.readAt < this.refreshMs) return;
    const startedAt = this.now();
    this.reading ??= Promise.all(CIRCUIT_SERVICES.map(async (service) => [service, await this.options.store.openUntil(service)] as const))
      .then((read) => {
        // The store decides (an operator closes a circuit by deleting its item), but for an opening made here since the read began.
        for (const [service, until] of read) {
          if ((this.trippedAt.get(service) ?? Number.NEGATIVE_INFINITY) >= startedAt) continue;
          this.openUntil.set(service, until ?? 0);
        }
        this.readAt = startedAt;
      })
      .finally(() => {
        this.reading = undefined;
      });
    await this.reading;
  }
}
