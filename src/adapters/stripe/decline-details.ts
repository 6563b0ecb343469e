import { cardNetworkOf, type DeclineDetails } from '../../domain/declines.js';

/*
 * Reading decline details needs no Stripe SDK: the card processor reads them from the SDK's errors
 * and PaymentIntents, the stripe-webhook handler from event payloads, without loading the SDK.
 */

/** The fields of a StripeCardError or a PaymentIntent's last_payment_error that dunning reads. */
export interface StripeDeclineFields {
  readonly code?: string | null | undefined;
  readonly decline_code?: string | null | undefined;
  readonly advice_code?: string | null | undefined;
  readonly network_advice_code?: string | null | undefined;
  readonly network_decline_code?: string | null | undefined;
  readonly payment_method?: { readonly card?: { readonly brand?: string | null } | null } | null | undefined;
  /** Older API versions name the card as a Source (a card source has a brand). */
  readonly source?: object | null | undefined;
}

/**
 * Decline, advice and network codes, and the card's network (DESIGN 5b). The SDK sets
 * `decline_code` to '' when Stripe sent none: the error `code` (`card_declined`, `expired_card`,
 * `authentication_required`, ...) stands in.
 */
export function declineDetailsOf(failure: StripeDeclineFields | object, intent?: { readonly payment_method?: unknown } | null): DeclineDetails {
  const f = failure as StripeDeclineFields;
  const present = (v: string | null | undefined): string | undefined => (v ? v : undefined);
  const intentMethod = intent && typeof intent.payment_method === 'object' ? (intent.payment_method as StripeDeclineFields['payment_method']) : undefined;
  const sourceBrand = f.source && 'brand' in f.source && typeof f.source.brand === 'string' ? f.source.brand : undefined;
  const network = cardNetworkOf(f.payment_method?.card?.brand ?? intentMethod?.card?.brand ?? sourceBrand);
  const details: { -readonly [K in keyof DeclineDetails]: DeclineDetails[K] } = { decline_code: present(f.decline_code) ?? present(f.code) ?? 'card_declined' };
  const advice = present(f.advice_code);
  const networkAdvice = present(f.network_advice_code);
  const networkDecline = present(f.network_decline_code);
  if (advice) details.advice_code = advice;
  if (networkAdvice) details.network_advice_code = networkAdvice;
  if (networkDecline) details.network_decline_code = networkDecline;
  if (network) details.card_network = network;
  return details;
}
