import type { StripeEventClaim } from '../records.js';

export type ClaimResult =
  | { readonly kind: 'claimed'; readonly claim_token: string }
  | { readonly kind: 'processed' }
  | { readonly kind: 'in_progress' };

/** What recording an event without a claim found: recorded now, processed earlier, or claimed by a live delivery. */
export type RecordResult = { readonly kind: 'recorded' } | { readonly kind: 'processed' } | { readonly kind: 'in_progress' };

export interface StripeEventStore {
  /** Claims an event for processing under a lease; an expired lease can be taken over. */
  claim(eventId: string, nowMs: number, leaseMs: number): Promise<ClaimResult>;
  /** Records an event without effect as processed, in one write; refused as a claim would be. */
  recordProcessed(eventId: string, eventType: string, nowMs: number): Promise<RecordResult>;
  /** Marks processed, conditional on our claim token. False when the claim was lost. */
  markProcessed(eventId: string, claimToken: string, eventType: string, nowMs: number): Promise<boolean>;
  /** Releases only our own claim (conditional on claim_token). */
  release(eventId: string, claimToken: string): Promise<void>;
  get(eventId: string): Promise<StripeEventClaim | undefined>;
}
