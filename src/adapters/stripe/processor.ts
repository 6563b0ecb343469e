import type Stripe from 'stripe';
import { InterruptedError, ProcessorError, ProcessorOutageError, ProcessorThrottledError, TransientError } from '../../domain/errors.js';
import type { StripeCard } from '../../domain/instruments/instrument.js';
import type { PaymentProcessor, PaymentReference, PaymentRequest, PaymentResult, ProcessorRefund, RefundQuery } from '../../domain/ports/processor.js';
import { cardDeclineMessage } from './decline-messages.js';
import { declineDetailsOf } from './decline-details.js';

/**
 * Card payments through Stripe PaymentIntents (DESIGN 6): created and confirmed off-session in one
 * call, with the attempt's idempotency key as Stripe's `Idempotency-Key`, so a repeated attempt
 * number gets Stripe's stored answer back instead of a second charge (Stripe keeps keys 24 h).
 * Metadata carries the record's key so that webhook events find it.
 */

/**
 * Who to charge when the attempt has no stored card (DESIGN 3.2): the customer named by id when it is
 * known (`customers.retrieve`), else the one whose `metadata.user_id` is the user (a search, once per
 * member: the attempt stores what it finds). The default payment method comes expanded, with its
 * card's fingerprint.
 */
export interface StripeCustomerResolver {
  cardFor(userId: string, customerId?: string): Promise<StripeCard | undefined>;
}

export interface StripeCardProcessorOptions {
  readonly stripe: Stripe;
  readonly customers: StripeCustomerResolver;
  /** ISO currency, lower case; amounts are in its minor unit. */
  readonly currency?: string;
}

/** The SDK's error classes, as every client carries them (`stripe.errors`). */
export type StripeErrors = Stripe['errors'];

const REJECTED = 'The payment processor rejected the request.';
const UNAVAILABLE = 'The payment processor is unavailable.';

export class StripeCardProcessor implements PaymentProcessor {
  private readonly stripe: Stripe;
  private readonly customers: StripeCustomerResolver;
  private readonly currency: string;

  constructor(options: StripeCardProcessorOptions) {
    this.stripe = options.stripe;
    this.customers = options.customers;
    this.currency = options.currency ?? 'usd';
  }

  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    if (request.rail !== 'card') throw new ProcessorError('unsupported_rail', REJECTED);
    // The SDK takes no AbortSignal: the deadline is honoured before each call, and by its timeout.
    throwIfAborted(signal);
    // The stored card costs no request; only a member whose card is not stored yet is looked up.
    let card = request.card?.payment_method !== undefined ? request.card : undefined;
    let resolved: StripeCard | undefined;
    if (!card) {
      try {
        resolved = await this.customers.cardFor(request.user_id, request.card?.customer);
      } catch (error) {
        throw mapStripeError(error, this.stripe.errors);
      }
      if (!resolved?.payment_method) return { outcome: 'declined', decline_code: 'no_payment_method', message: cardDeclineMessage('no_payment_method') };
      card = resolved;
    }
    const found = resolved ? { resolved_card: resolved } : {};
    throwIfAborted(signal);
    try {
      const intent = await this.stripe.paymentIntents.create(
        {
          amount: request.amount_cents,
          currency: this.currency,
          customer: card.customer,
          payment_method: card.payment_method,
          off_session: true,
          confirm: true,
          metadata: metadataOf(request.reference),
        },
        { idempotencyKey: request.idempotency_key },
      );
      return { ...resultOf(intent), ...found } as PaymentResult;
    } catch (error) {
      if (error instanceof this.stripe.errors.StripeCardError) {
        return {
          ...found,
          outcome: 'declined',
          ...declineDetailsOf(error, error.payment_intent),
          message: cardDeclineMessage(error.decline_code, error.code),
          ...(error.payment_intent?.id ? { confirmation_id: error.payment_intent.id } : {}),
        };
      }
      throw mapStripeError(error, this.stripe.errors);
    }
  }

  /** A refund by its id (`re_...`); Stripe's `resource_missing` means it knows none. */
  async findRefund(query: RefundQuery, signal?: AbortSignal): Promise<ProcessorRefund | undefined> {
    if (query.rail !== 'card') throw new ProcessorError('unsupported_rail', REJECTED);
    throwIfAborted(signal);
    let refund: Stripe.Refund;
    try {
      refund = await this.stripe.refunds.retrieve(query.refund_id);
    } catch (error) {
      if (error instanceof this.stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing') return undefined;
      throw mapStripeError(error, this.stripe.errors);
    }
    // Our payments are PaymentIntents; a refund of a bare charge names the charge, which matches none of ours.
    const refunded = idOf(refund.payment_intent) ?? idOf(refund.charge) ?? '';
    return { refund_id: refund.id, transaction_id: refunded, amount_cents: refund.amount, status: refundStatusOf(refund.status) };
  }
}

function idOf(value: string | { readonly id: string } | null | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.id;
}

/** Stripe's refund statuses, as the port names them: `requires_action` is still pending. */
function refundStatusOf(status: string | null): ProcessorRefund['status'] {
  if (status === 'succeeded' || status === 'failed' || status === 'canceled') return status;
  return 'pending';
}

/** The metadata every PaymentIntent carries (DESIGN 6): the webhook finds the record by it. */
export function metadataOf(reference: PaymentReference): Record<string, string> {
  return reference.kind === 'subscription'
    ? { user_id: reference.user_id, billing_date: reference.billing_date, subscription_id: reference.subscription_id }
    : { user_id: reference.user_id, loan_id: reference.loan_id, payment_id: reference.payment_id };
}

function resultOf(intent: Stripe.PaymentIntent): PaymentResult {
  switch (intent.status) {
    case 'succeeded':
      return { outcome: 'approved', confirmation_id: intent.id };
    case 'requires_payment_method': {
      const failure = intent.last_payment_error;
      return {
        outcome: 'declined',
        confirmation_id: intent.id,
        ...declineDetailsOf(failure ?? {}, intent),
        message: cardDeclineMessage(failure?.decline_code, failure?.code),
      };
    }
    case 'requires_action':
      // Off-session: the customer must come back and authenticate (3-D Secure).
      return { outcome: 'declined', confirmation_id: intent.id, decline_code: 'authentication_required', message: cardDeclineMessage('authentication_required') };
    case 'processing':
      // Settles on its own; payment_intent.succeeded/payment_failed writes it. Not counted as a failure.
      throw new TransientError(`payment intent ${intent.id} is still processing`);
    default:
      throw new ProcessorError('unexpected_intent_status', REJECTED, { cause: new Error(`payment intent ${intent.id} is ${intent.status}`) });
  }
}

/**
 * Stripe errors by type, never by message: throttling is ProcessorThrottledError, Stripe's outages
 * transient, a key it refuses is our outage, the rest counted.
 * `errors` is the error classes of the SDK instance that made the call (`stripe.errors`): the
 * adapters import the SDK for its types only, so that in a Lambda bundle the one load of the SDK
 * is src/runtime/wiring/stripe.ts's `import('stripe')`, on the first card use (lib/bundling.ts).
 */
export function mapStripeError(error: unknown, errors: StripeErrors): Error {
  if (error instanceof TransientError || error instanceof ProcessorError || error instanceof InterruptedError || error instanceof ProcessorOutageError) return error;
  if (error instanceof errors.StripeError) {
    // Stripe's rate limit (429, `rate_limit`): nothing was taken; the worker stops presenting (DESIGN 13).
    // A 429 `lock_timeout` is a busy object, not the account's rate: a plain transient error.
    if (error instanceof errors.StripeRateLimitError && error.code !== 'lock_timeout') {
      return new ProcessorThrottledError('stripe', { cause: error });
    }
    if (
      error instanceof errors.StripeConnectionError ||
      error instanceof errors.StripeRateLimitError ||
      error instanceof errors.StripeAPIError ||
      (error.statusCode !== undefined && error.statusCode >= 500) ||
      // Another request with the same idempotency key is still in flight, or Stripe's lock timed out.
      error.code === 'idempotency_key_in_use' ||
      error.code === 'lock_timeout'
    ) {
      return new TransientError(UNAVAILABLE, { cause: error });
    }
    if (error instanceof errors.StripeIdempotencyError) return new ProcessorError('idempotency_conflict', REJECTED, { cause: error });
    // A revoked, expired or wrong key, or a restricted key without the permission: our outage (DESIGN 15).
    if (error instanceof errors.StripeAuthenticationError || error instanceof errors.StripePermissionError) {
      return new ProcessorOutageError('stripe', 'processor_auth', { cause: error });
    }
    return new ProcessorError('processor_rejected', REJECTED, { cause: error });
  }
  return new ProcessorError('processor_error', UNAVAILABLE, { cause: error });
}

function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new InterruptedError('the payment was not submitted: the invocation was interrupted', { cause: signal.reason });
}

/** The customer by id, or by `metadata.user_id`, and its default card, expanded to read the fingerprint. */
export class StripeCustomerSearchResolver implements StripeCustomerResolver {
  constructor(private readonly stripe: Stripe) {}

  async cardFor(userId: string, customerId?: string): Promise<StripeCard | undefined> {
    const expand = ['invoice_settings.default_payment_method'];
    if (customerId !== undefined) {
      const customer = await this.stripe.customers.retrieve(customerId, { expand });
      return 'deleted' in customer && customer.deleted ? undefined : stripeCardOf(customer as Stripe.Customer);
    }
    const found = await this.stripe.customers.search({ query: `metadata['user_id']:'${userId.replace(/['\\]/g, '\\$&')}'`, limit: 2, expand: expand.map((e) => `data.${e}`) });
    if (found.data.length > 1) throw new ProcessorError('ambiguous_customer', REJECTED, { cause: new Error(`${found.data.length}+ Stripe customers for user ${userId}`) });
    return found.data[0] && stripeCardOf(found.data[0]);
  }
}

/** The customer's default card as we store it; a default not expanded is named by id only. */
export function stripeCardOf(customer: Stripe.Customer): StripeCard {
  const method = customer.invoice_settings?.default_payment_method;
  if (!method) return { customer: customer.id };
  if (typeof method === 'string') return { customer: customer.id, payment_method: method };
  const card = method.card;
  return {
    customer: customer.id,
    payment_method: method.id,
    ...(card?.fingerprint ? { fingerprint: card.fingerprint } : {}),
    ...(card?.brand ? { brand: card.brand } : {}),
  };
}
