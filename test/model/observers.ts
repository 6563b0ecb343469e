import { userLockKey } from '../../src/domain/lock.js';
import type { LockLease, LockStore } from '../../src/domain/ports/locks.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import { ms, type Initiator, type ObservedPresentment } from './reference-model.js';

/**
 * What the model's harness sees pass between the system and the outside (test/model/harness.ts):
 * every submission and its answer, and when a key may have been handed to the processor.
 */

type Json = Record<string, any>;

/**
 * Records every submission and its answer (declines included), so Stripe can report failed PaymentIntents,
 * and every presentment with who started it and the dunning cycle its period showed then (the model's D1).
 */
export class SubmissionRecorder implements PaymentProcessor {
  readonly declined: { request: PaymentRequest; at: number }[] = [];
  readonly presentments: ObservedPresentment[] = [];
  /** Who starts the submissions now: the harness sets it around the API's manual pay and retry-billing. */
  initiator: Initiator = 'merchant';
  constructor(
    private readonly inner: PaymentProcessor,
    private readonly now: () => number,
    private readonly lookup?: (key: { user_id: string; billing_date: string }) => Promise<Json | undefined>,
  ) {}
  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    if (request.reference.kind === 'subscription' && this.lookup) {
      // The record as the attempt read it (under its lock): the cycle it is in, if any.
      const record = await this.lookup({ user_id: request.reference.user_id, billing_date: request.reference.billing_date });
      const cycle = record?.billing_status === 'FAILED' && record.decline_class === 'retry_later' && typeof record.dunning_first_declined_at === 'string';
      this.presentments.push({
        user_id: request.user_id,
        subscription_id: request.reference.subscription_id,
        idempotency_key: request.idempotency_key,
        at: this.now(),
        initiator: this.initiator,
        ...(cycle ? { cycle_start: ms(record.dunning_first_declined_at) } : {}),
      });
    }
    const answered = await this.inner.submit(request, signal);
    // Stripe names the PaymentIntent of every card decline (the simulator names none): the same id its payment_failed carries.
    const result = answered.outcome === 'declined' && request.rail === 'card' && answered.confirmation_id === undefined ? { ...answered, confirmation_id: declinedIntentId(request) } : answered;
    if (result.outcome === 'declined') this.declined.push({ request, at: this.now() });
    return result;
  }
}

/** The PaymentIntent of a declined card submission, one per idempotency key (as Stripe keeps one per key). */
export function declinedIntentId(request: PaymentRequest): string {
  return `pi_declined_${request.idempotency_key.replace(/[^A-Za-z0-9]/g, '')}`;
}

/**
 * When the system may have handed a key to the processor (its outcome unknown to the system), as the system's own
 * evidence sees it (DESIGN 5 presented key, decisions F11): an attempt called the processor port (whether or not the
 * request arrived: a lost connection looks the same), or a holder whose lease named the period died and the next
 * holder took its lease over. The model's C2 lets a key first handed over before a ban be resent after it.
 */
interface LeaseWrite {
  readonly at: number;
  readonly owner: string;
  readonly purpose?: string;
  /** The version this write replaced (a renewal), absent for an acquisition. */
  readonly previous?: string;
}

export class HandOffLog {
  /** Port calls: the attempt handed the request over (a fault at `processor.before` still counts). */
  readonly handed: { user_id: string; billing_date: string; idempotency_key: string; at: number }[] = [];
  /** Dead leases taken over: the lock key, what the dead holder named (billing_date or its due key) and since when. */
  readonly deadLeases: { key: string; purpose: string; since: number }[] = [];
  /** Every lease written: its version → when, what it named, who held it, and the version it replaced. */
  private readonly written = new Map<string, LeaseWrite>();
  constructor(private readonly now: () => number) {}

  processor(inner: PaymentProcessor): PaymentProcessor {
    return {
      submit: (request, signal) => {
        const ref = request.reference;
        if (ref.kind === 'subscription') this.handed.push({ user_id: request.user_id, billing_date: ref.billing_date, idempotency_key: request.idempotency_key, at: this.now() });
        return inner.submit(request, signal);
      },
    };
  }

  locks(inner: LockStore): LockStore {
    const note = (lease: LockLease, previous?: string) => {
      // First write wins: a hand-back puts the dead lease back under its own version.
      if (!this.written.has(lease.record_version_number)) {
        this.written.set(lease.record_version_number, { at: this.now(), owner: lease.owner_name, ...(lease.purpose !== undefined ? { purpose: lease.purpose } : {}), ...(previous !== undefined ? { previous } : {}) });
      }
    };
    return {
      tryAcquire: async (lease, nowMs, onTakeover) => {
        const acquired = await inner.tryAcquire(lease, nowMs, (previous) => {
          if (previous.purpose !== undefined) this.deadLeases.push({ key: previous.key, purpose: previous.purpose, since: this.namedSince(previous) });
          onTakeover?.(previous);
        });
        if (acquired) note(lease);
        return acquired;
      },
      renew: async (key, previousVersion, next) => {
        const renewed = await inner.renew(key, previousVersion, next);
        if (renewed) note(next, previousVersion);
        return renewed;
      },
      release: (key, version) => inner.release(key, version),
    };
  }

  /** When the holder of `lease` first named what it names (its heartbeats renew the lease under new versions). */
  private namedSince(lease: LockLease): number {
    let write: LeaseWrite | undefined = this.written.get(lease.record_version_number);
    if (!write) return this.now();
    for (;;) {
      const before: LeaseWrite | undefined = write.previous !== undefined ? this.written.get(write.previous) : undefined;
      if (!before || before.owner !== write.owner || before.purpose !== lease.purpose) return write.at;
      write = before;
    }
  }

  /**
   * The first instant each of the user's keys may have reached the processor: its port call, or the lease of a dead
   * holder that named the key's period. A lease naming a due key (`{billing_date}#{attempts}`) names key attempts + 1;
   * one naming only the billing_date names the key current when it died, the first one handed over after it.
   */
  firstHandedOver(user: string): Map<string, number> {
    const out = new Map<string, number>();
    const earliest = (key: string, at: number) => out.set(key, Math.min(out.get(key) ?? at, at));
    const handed = this.handed.filter((h) => h.user_id === user);
    for (const h of handed) earliest(h.idempotency_key, h.at);
    const lockKey = userLockKey(user);
    for (const d of this.deadLeases) {
      if (d.key !== lockKey) continue;
      const hash = d.purpose.lastIndexOf('#');
      if (hash >= 0) {
        const [date, attempts] = [d.purpose.slice(0, hash), Number(d.purpose.slice(hash + 1))];
        for (const h of handed) if (h.billing_date === date && h.idempotency_key.endsWith(`:${attempts + 1}`)) earliest(h.idempotency_key, d.since);
      } else {
        const next = handed.find((h) => h.billing_date === d.purpose && h.at >= d.since);
        if (next) earliest(next.idempotency_key, d.since);
      }
    }
    return out;
  }
}
