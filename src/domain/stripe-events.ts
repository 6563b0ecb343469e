import type { Clock } from './ports/clock.js';
import type { StripeEventStore } from './ports/stripe-events.js';

/**
 * The Stripe event claim (DESIGN 2.8, seed 003 fixed). Stripe re-delivers an event until it gets
 * a 2xx, and may deliver it several times at once: the event is claimed under a lease, applied,
 * then marked processed. A live claim held by another delivery is not processed (409, Stripe
 * re-delivers later); an expired one is taken over; a failure releases only its own claim.
 */

/** Longer than the webhook function's timeout, so a claim never expires under a live delivery. */
export const STRIPE_EVENT_LEASE_MS = 60_000;

export interface StripeEventRef {
  readonly id: string;
  readonly type: string;
}

export type StripeDelivery<T> =
  /** We held the claim and applied the event. `marked` is false when the claim was lost meanwhile. */
  | { readonly kind: 'applied'; readonly result: T; readonly marked: boolean }
  /** Already processed by an earlier delivery. */
  | { readonly kind: 'duplicate' }
  /** Another delivery holds a live claim. */
  | { readonly kind: 'in_progress' };

export interface StripeClaimDeps {
  readonly clock: Clock;
  readonly stripeEvents: StripeEventStore;
}

export interface StripeClaimOptions {
  readonly leaseMs?: number;
  /** A release that failed after a processing failure (the lease still expires; the work error is rethrown). */
  readonly onReleaseError?: (error: unknown) => void;
}

/**
 * Runs `apply` at most once per event across concurrent deliveries. `apply` must be replay-safe:
 * a delivery whose lease expired mid-flight can be overtaken, and the taker applies again.
 * On failure the claim is released (conditional on our token) and the error is rethrown.
 */
export async function processStripeEventOnce<T>(
  deps: StripeClaimDeps,
  event: StripeEventRef,
  apply: () => Promise<T>,
  options: StripeClaimOptions = {},
): Promise<StripeDelivery<T>> {
  const leaseMs = options.leaseMs ?? STRIPE_EVENT_LEASE_MS;
  const claim = await deps.stripeEvents.claim(event.id, deps.clock.now().getTime(), leaseMs);
  if (claim.kind === 'processed') return { kind: 'duplicate' };
  if (claim.kind === 'in_progress') return { kind: 'in_progress' };

  let result: T;
  try {
    result = await apply();
  } catch (error) {
    try {
      await deps.stripeEvents.release(event.id, claim.claim_token);
    } catch (releaseError) {
      options.onReleaseError?.(releaseError);
    }
    throw error;
  }
  const marked = await deps.stripeEvents.markProcessed(event.id, claim.claim_token, event.type, deps.clock.now().getTime());
  return { kind: 'applied', result, marked };
}

/**
 * An event whose processing is known to have no effect (a type the webhook does not handle),
 * with `result` as what applying it would answer: recorded processed in one conditional write
 * instead of a claim and a mark, with the same deliveries as `processStripeEventOnce` (a duplicate
 * of a processed event, a live claim elsewhere in progress, an expired claim overwritten).
 */
export async function recordStripeEventOnce<T>(deps: StripeClaimDeps, event: StripeEventRef, result: T): Promise<StripeDelivery<T>> {
  const recorded = await deps.stripeEvents.recordProcessed(event.id, event.type, deps.clock.now().getTime());
  if (recorded.kind === 'processed') return { kind: 'duplicate' };
  if (recorded.kind === 'in_progress') return { kind: 'in_progress' };
  return { kind: 'applied', result, marked: true };
}
