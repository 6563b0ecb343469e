import type { CardPaymentDirectory } from '../card-outcomes.js';
import { stripeCardInstrument, type StripeCard } from '../instruments/instrument.js';
import type { InstrumentStore } from '../ports/instruments.js';

export interface RefreshStripeCardDeps {
  readonly cardPayments?: CardPaymentDirectory | undefined;
  readonly instruments: Pick<InstrumentStore, 'write'>;
}

export type RefreshStripeCardResult =
  | { readonly kind: 'stored'; readonly user_id: string; readonly card: StripeCard }
  | { readonly kind: 'ignored'; readonly reason: 'customer_not_found' | 'customer_without_user' | 'no_card_directory' };

/**
 * A Stripe webhook said a customer's card may have changed (DESIGN 3.2, 6): the customer's default
 * card is read from Stripe as it is now and replaces the user's stored one, so deliveries in any order
 * leave the card Stripe has. The card is also recorded as an instrument the user has used.
 */
export async function refreshStripeCard(deps: RefreshStripeCardDeps, customerId: string, userIdHint?: string): Promise<RefreshStripeCardResult> {
  if (!deps.cardPayments) return { kind: 'ignored', reason: 'no_card_directory' };
  const found = await deps.cardPayments.cardOfCustomer(customerId);
  if (!found) return { kind: 'ignored', reason: 'customer_not_found' };
  const userId = found.user_id ?? userIdHint;
  if (userId === undefined) return { kind: 'ignored', reason: 'customer_without_user' };
  const instrument = stripeCardInstrument(found.card);
  await deps.instruments.write({ user_id: userId, stripe_card: { card: found.card, replace: true }, ...(instrument ? { seen: [instrument] } : {}) });
  return { kind: 'stored', user_id: userId, card: found.card };
}
