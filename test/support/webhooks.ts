import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import type { BillingRecord } from '../../src/domain/records.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import { TEST_SECRETS } from './app.js';
import { httpEvent } from './http-events.js';

/**
 * Signed webhook deliveries (Stripe, ACH, balance) as API Gateway hands them to the functions.
 * `signedAtMs` is the sender's wall-clock time (pass `app.wallClock.now().getTime()`): signatures
 * are checked against the wall clock, never the simulated business clock (DESIGN 9).
 */

export function nowSeconds(nowMs: number): number {
  return Math.floor(nowMs / 1000);
}

export function stripeDelivery(body: unknown, options: { signedAtMs: number; secret?: string; timestamp?: number; raw?: string }): HttpEvent {
  const payload = options.raw ?? JSON.stringify(body);
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? TEST_SECRETS.stripeWebhook,
    timestamp: options.timestamp ?? nowSeconds(options.signedAtMs),
  });
  return httpEvent('POST', { route: '/webhooks/stripe', body: payload, auth: null, headers: { 'stripe-signature': signature } });
}

export function achDelivery(body: unknown, options: { signedAtMs: number; secret?: string; timestamp?: number; raw?: string; signature?: string }): HttpEvent {
  const raw = options.raw ?? JSON.stringify(body);
  const signature = options.signature ?? signPayload(raw, options.secret ?? TEST_SECRETS.achWebhook, options.timestamp ?? nowSeconds(options.signedAtMs));
  return httpEvent('POST', { route: '/webhooks/ach', body: raw, auth: null, headers: { 'x-ach-signature': signature } });
}

export function stripeEvent(type: string, object: Record<string, unknown>, nowMs: number, id = `evt_${randomUUID().replace(/-/g, '')}`) {
  return { id, object: 'event', api_version: '2025-10-29.clover', created: nowSeconds(nowMs), livemode: false, pending_webhooks: 1, type, data: { object } };
}

export function cardMetadata(record: BillingRecord) {
  return { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id };
}

export function paymentIntentObject(record: BillingRecord, intentId: string, extra: Record<string, unknown> = {}) {
  return { id: intentId, object: 'payment_intent', amount: record.amount_cents, metadata: cardMetadata(record), ...extra };
}

export function disputeObject(record: BillingRecord, intentId: string) {
  return { id: `dp_${randomUUID().slice(0, 8)}`, object: 'dispute', charge: `ch_${randomUUID().slice(0, 8)}`, payment_intent: intentId, amount: record.amount_cents, metadata: cardMetadata(record) };
}

/** An ACH outcome as the bank posts it, for `record`'s debit; `type` is a string so tests can send unknown ones. */
export function achEventBody(record: Pick<BillingRecord, 'user_id' | 'billing_date' | 'amount_cents'>, type: string, confirmationId: string | undefined, nowIso: string, extra: Record<string, unknown> = {}) {
  return {
    event_id: `ach_${randomUUID()}`,
    type,
    confirmation_id: confirmationId,
    amount_cents: record.amount_cents,
    occurred_at: nowIso,
    reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
    ...extra,
  };
}
