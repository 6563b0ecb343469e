/**
 * Stripe decline and error codes → curated, customer-safe sentences saved as `payment_error`.
 * Stripe's own messages are never stored: they change without notice and may name card details.
 */

const BY_CODE: Readonly<Record<string, string>> = {
  insufficient_funds: 'The card has insufficient funds.',
  expired_card: 'The card has expired.',
  incorrect_cvc: 'The card was declined.',
  incorrect_number: 'The card number on file is invalid.',
  invalid_number: 'The card number on file is invalid.',
  invalid_expiry_month: 'The card on file has an invalid expiry date.',
  invalid_expiry_year: 'The card on file has an invalid expiry date.',
  lost_card: 'The card was declined.',
  stolen_card: 'The card was declined.',
  pickup_card: 'The card was declined.',
  fraudulent: 'The card was declined.',
  do_not_honor: 'The card was declined.',
  generic_decline: 'The card was declined.',
  card_declined: 'The card was declined.',
  card_velocity_exceeded: 'The card has exceeded its spending limit.',
  withdrawal_count_limit_exceeded: 'The card has exceeded its spending limit.',
  processing_error: 'The card could not be processed.',
  authentication_required: 'The card requires the customer to authenticate the payment.',
  card_not_supported: 'The card does not support this kind of payment.',
  currency_not_supported: 'The card does not support this kind of payment.',
  no_payment_method: 'No card is on file for this account.',
};

export const GENERIC_CARD_DECLINE = 'The card was declined.';

/** The most specific curated sentence for Stripe's decline_code, then its error code. */
export function cardDeclineMessage(declineCode?: string | null, code?: string | null): string {
  for (const candidate of [declineCode, code]) {
    if (candidate && Object.hasOwn(BY_CODE, candidate)) return BY_CODE[candidate]!;
  }
  return GENERIC_CARD_DECLINE;
}
