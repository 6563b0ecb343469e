import type { Clock } from './ports/clock.js';
import type { StripeEventStore } from './ports/stripe-events.js';

/** Stripe may deliver an event several times at once (DESIGN 2.8): claimed under a lease, applied, marked processed. */

/** Longer than the webhook function's timeout, so a claim never expires under a live delivery. */
export const STRIPE_EVENT_LEASE_MS = 60_000;

export interface StripeEventRef {
  readonly id: string;
  readonly type: string;
}

export type StripeDelivery<T> =
  /** `marked` is false when the claim was lost meanwhile. */
  | { readonly kind: 'applied'; readonly result: T; readonly marked: boolean }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'in_progress' };

export interface StripeClaimDeps {
  readonly clock: Clock;
  readonly stripeEvents: StripeEventStore;
}

export interface StripeClaimOptions<T = unknown> {
  readonly leaseMs?: number;
  /** A release that failed after a processing failure (the lease still expires). */
  readonly onReleaseError?: (error: unknown) => void;
  /** Whether a result settles the event; one that does not (an ACH outcome not yet recorded) releases the claim, for the redelivery. */
  readonly settles?: (result: T) => boolean;
}

/** `apply` must be replay-safe: a delivery whose lease expired mid-flight can be overtaken, and the taker applies again. */
export async function processStripeEventOnce<T>(
  deps: StripeClaimDeps,
  event: StripeEventRef,
  apply: () => Promise<T>,
  options: StripeClaimOptions<T> = {},
): Promise<StripeDelivery<T>> {
  const leaseMs = options.leaseMs ?? STRIPE_EVENT_LEASE_MS;
  const claim = await deps.stripeEvents.claim(event.id, deps.clock.now().getTime(), leaseMs);
  if (claim.kind === 'processed') return { kind: 'duplicate' };
  if (claim.kind === 'in_progress') return { kind: 'in_progress' };

  const release = async () => {
    try {
      await deps.stripeEvents.release(event.id, claim.claim_token);
    } catch (releaseError) {
      options.onReleaseError?.(releaseError);
    }
  };
  let result: T;
  try {
    result = await apply();
  } catch (error) {
    await release();
    throw error;
  }
  if (options.settles && !options.settles(result)) {
    await release();
    return { kind: 'applied', result, marked: false };
  }
  const marked = await deps.stripeEvents.markProcessed(event.id, claim.claim_token, event.type, deps.clock.now().getTime());
  return { kind: 'applied', result, marked };
}

/** An event known to have no effect: recorded processed in one conditional write instead of a claim and a mark. */
export async function recordStripeEventOnce<T>(deps: StripeClaimDeps, event: StripeEventRef, result: T): Promise<StripeDelivery<T>> {
  const recorded = await deps.stripeEvents.recordProcessed(event.id, event.type, deps.clock.now().getTime());
  if (recorded.kind === 'processed') return { kind: 'duplicate' };
  if (recorded.kind === 'in_progress') return { kind: 'in_progress' };
  return { kind: 'applied', result, marked: true };
}
