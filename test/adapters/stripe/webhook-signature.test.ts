import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { StripeSignatureVerificationError, stripeWebhooks } from '../../../src/adapters/stripe/webhook-signature.js';

/**
 * The stripe-webhook function verifies signatures with the SDK's Webhooks module alone (not its
 * 247 KiB entry point): it must be the SDK's verifier, answering as `Stripe.webhooks` does.
 */

const secret = 'whsec_signature_test';
const payload = JSON.stringify({ id: 'evt_1', object: 'event', type: 'customer.created', data: { object: { id: 'cus_1', object: 'customer' } } });
const now = Math.floor(Date.now() / 1000);

describe('stripe webhook signature (the SDK Webhooks module without the SDK entry point)', () => {
  it('accepts a header the SDK signs and returns the event the SDK parses', () => {
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now });
    const event = stripeWebhooks.constructEvent(payload, header, secret, 300, undefined, now * 1000);
    expect(event).toEqual(Stripe.webhooks.constructEvent(payload, header, secret, 300, undefined, now * 1000));
    expect(event.id).toBe('evt_1');
  });

  it('refuses another secret, a changed body and a stale timestamp with the SDK error class', () => {
    const header = Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now });
    const stale = Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: now - 301 });
    const cases: [string, string, string][] = [
      [payload, header, 'whsec_other'],
      [payload.replace('cus_1', 'cus_2'), header, secret],
      [payload, stale, secret],
    ];
    for (const [body, signature, key] of cases) {
      let error: unknown;
      try {
        stripeWebhooks.constructEvent(body, signature, key, 300, undefined, now * 1000);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(StripeSignatureVerificationError);
      expect(error).toBeInstanceOf(Stripe.errors.StripeSignatureVerificationError);
    }
  });

  it('is the class the SDK throws (one module, not a copy)', () => {
    expect(StripeSignatureVerificationError).toBe(Stripe.errors.StripeSignatureVerificationError);
  });
});
