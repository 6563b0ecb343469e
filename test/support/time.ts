/**
 * Spans of test time, in milliseconds. Spans the rules name (a ladder wait, a lease) come from src,
 * so a test that waits one out follows a change there instead of passing against the old value.
 */

export const SECOND = 1_000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** A lock lease (the `lockLeaseMs` setting) short enough for a test to outwait in one clock step. */
export const SHORT_LOCK_LEASE_MS = 5 * SECOND;

export { BILLING_RETRY_WAITS_MS } from '../../src/domain/ladder.js';
export { LOCK_LEASE_MS } from '../../src/domain/lock.js';
export { STRIPE_EVENT_LEASE_MS } from '../../src/domain/stripe-events.js';
