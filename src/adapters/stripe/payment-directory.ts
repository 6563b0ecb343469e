import type Stripe from 'stripe';
import type { CardPaymentDirectory, CardPaymentReference } from '../../domain/card-outcomes.js';
import { cardReferenceSchema } from './events.js';
import { mapStripeError } from './processor.js';
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
}
