/**
 * What the stripe-webhook handler takes from the Stripe adapter, named here so no handler reaches
 * into an adapter: the event schemas, the signature check, and the decline's message and codes.
 */
export {
  cardReferenceSchema,
  chargeSchema,
  checkoutSessionSchema,
  customerSchema,
  detachedFromSchema,
  disputeSchema,
  paymentMethodSchema,
  paymentIntentSchema,
  stripeEventEnvelopeSchema,
  type StripeEventEnvelope,
} from '../adapters/stripe/events.js';
export { StripeSignatureVerificationError, stripeWebhooks } from '../adapters/stripe/webhook-signature.js';
export { cardDeclineMessage } from '../adapters/stripe/decline-messages.js';
export { declineDetailsOf } from '../adapters/stripe/decline-details.js';
