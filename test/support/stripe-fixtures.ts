import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';

/**
 * Stripe's own example objects (test/fixtures/stripe, copied from stripe/openapi), with only the
 * fields a real delivery of that type implies replaced.
 */

const fixture = (name: string): Record<string, unknown> =>
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
    ...fixture('checkout-session.json'),
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
    ...fixture('event.json'),
    id: `evt_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    type,
    created: Math.floor(createdMs / 1000),
    data: { object },
  };
}
