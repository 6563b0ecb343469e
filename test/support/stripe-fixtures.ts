import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

/**
 * Stripe's own example objects (test/fixtures/stripe, copied from stripe/openapi), with only the
 * fields a real delivery of that type implies replaced.
 */

export const stripeFixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../fixtures/stripe/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;

export interface CompletedCheckout {
  readonly userId: string;
  readonly amountCents: number;
  readonly firstBillingDate: string;
  readonly tier?: string;
  readonly term?: string;
}

/**
 * Stripe's example `checkout.session`, completed and paid: the placeholder `open`/`unpaid` state,
 * `amount_total: null` and empty `metadata` are replaced by what a completed payment carries
 * (status, payment_status, amounts, currency) and our metadata; the id is made unique.
 */
export function completedCheckoutSession(input: CompletedCheckout): Record<string, unknown> {
  return {
    ...stripeFixture('checkout-session.json'),
    id: `cs_test_${randomUUID().replace(/-/g, '')}`,
    status: 'complete',
    payment_status: 'paid',
    amount_subtotal: input.amountCents,
    amount_total: input.amountCents,
    currency: 'usd',
    metadata: {
      user_id: input.userId,
      tier: input.tier ?? 'plus:v3',
      term: input.term ?? 'monthly',
      first_billing_date: input.firstBillingDate,
    },
  };
}

/** Stripe's example event envelope (a `plan.created`) carrying `object` as `type`: id, type, created and data replaced. */
export function stripeEventOf(type: string, object: Record<string, unknown>, createdMs: number): Record<string, unknown> {
  return {
    ...stripeFixture('event.json'),
    id: `evt_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    type,
    created: Math.floor(createdMs / 1000),
    data: { object },
  };
}

/** Stripe's example PaymentIntent, succeeded: status, amounts, currency, id and our metadata replaced. */
export function succeededPaymentIntent(input: { reference: { user_id: string; billing_date: string; subscription_id: string }; amountCents: number; currency: string }): Record<string, unknown> {
  return {
    ...stripeFixture('payment-intent.json'),
    id: `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    status: 'succeeded',
    amount: input.amountCents,
    amount_received: input.amountCents,
    currency: input.currency,
    last_payment_error: null,
    metadata: { ...input.reference },
  };
}

/** Stripe's example dispute (a Visa inquiry): id, payment_intent, amount and, when given, status replaced. */
export function disputeOf(input: { paymentIntentId: string; amountCents: number; status?: string }): Record<string, unknown> {
  const example = stripeFixture('dispute.json');
  return {
    ...example,
    id: `dp_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    payment_intent: input.paymentIntentId,
    amount: input.amountCents,
    status: input.status ?? example.status,
  };
}
