import type Stripe from 'stripe';
import type { CardPaymentDirectory, CardPaymentReference, CustomerCard } from '../../domain/card-outcomes.js';
import { cardReferenceSchema } from './events.js';
import { mapStripeError, stripeCardOf } from './processor.js';
import { safeParseCold } from '../../domain/lazy-schema.js';

/**
 * Finds a PaymentIntent's billing record by reading its metadata back from Stripe: the one way a
 * dispute (which carries only the charge and PaymentIntent ids) reaches its record.
 */
export class StripePaymentIntentDirectory implements CardPaymentDirectory {
  constructor(private readonly stripe: Stripe) {}

  async findReference(paymentIntentId: string): Promise<CardPaymentReference | undefined> {
    let intent: Stripe.PaymentIntent;
    try {
      intent = await this.stripe.paymentIntents.retrieve(paymentIntentId);
    } catch (error) {
      if (error instanceof this.stripe.errors.StripeInvalidRequestError && error.statusCode === 404) return undefined;
      throw mapStripeError(error, this.stripe.errors);
    }
    const parsed = safeParseCold(cardReferenceSchema, intent.metadata);
    return parsed.success ? parsed.data : undefined;
  }

  /** One request: the customer with its default payment method expanded, for the card's fingerprint. */
  async cardOfCustomer(customerId: string): Promise<CustomerCard | undefined> {
    let customer: Stripe.Customer | Stripe.DeletedCustomer;
    try {
      customer = await this.stripe.customers.retrieve(customerId, { expand: ['invoice_settings.default_payment_method'] });
    } catch (error) {
      if (error instanceof this.stripe.errors.StripeInvalidRequestError && error.statusCode === 404) return undefined;
      throw mapStripeError(error, this.stripe.errors);
    }
    if ('deleted' in customer && customer.deleted) return undefined;
    const live = customer as Stripe.Customer;
    return { user_id: live.metadata?.user_id, card: stripeCardOf(live) };
  }
}
