import type { DeclineDetails } from '../declines.js';
import type { StripeCard } from '../instruments/instrument.js';
import type { PaymentMethod } from '../records.js';

export type PaymentReference =
  | { readonly kind: 'subscription'; readonly user_id: string; readonly billing_date: string; readonly subscription_id: string }
  | { readonly kind: 'loan_payment'; readonly user_id: string; readonly loan_id: string; readonly payment_id: string };

export interface PaymentRequest {
  readonly idempotency_key: string;
  readonly user_id: string;
  readonly amount_cents: number;
  readonly rail: PaymentMethod;
  readonly account_last_four?: string | undefined;
  readonly reference: PaymentReference;
  /** The instrument debited (DESIGN 3.2); absent only when the account directory names none for the rail. */
  readonly instrument_id?: string;
  /** NACHA: a re-presented R01/R09 entry is reinitiated, described `RETRY PYMT` (DESIGN 4.1). */
  readonly reinitiated?: true;
  readonly entry_description?: typeof REPRESENTMENT_ENTRY_DESCRIPTION;
  /** Card: the stored Stripe card to charge (DESIGN 3.2); without it the processor resolves the user's card once. */
  readonly card?: StripeCard;
}

/** Card: the card the processor had to resolve for this payment, for the attempt to store with its write. */
export interface ResolvedCard {
  readonly resolved_card?: StripeCard;
}

/** The company entry description NACHA requires on a re-presented entry. */
export const REPRESENTMENT_ENTRY_DESCRIPTION = 'RETRY PYMT';

export type PaymentResult =
  /** Pinless or card: the money is collected. */
  | ({ readonly outcome: 'approved'; readonly confirmation_id: string; readonly instrument_id?: string } & ResolvedCard)
  /** ACH: the debit was accepted; the ach-handler settles or returns it later. */
  | { readonly outcome: 'submitted'; readonly confirmation_id: string; readonly instrument_id?: string }
  /** The bank said no: `message` is customer-safe; the codes feed the dunning classification (DESIGN 5b). */
  | ({ readonly outcome: 'declined'; readonly confirmation_id?: string; readonly message: string } & DeclineDetails & ResolvedCard);

/**
 * The same idempotency key always answers the same result and never charges twice. Errors that are
 * not declines throw: ProcessorError, or TransientError when worth retrying.
 */
export interface PaymentProcessor {
  submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult>;
  /**
   * The processor's record of a refund on `rail`, or undefined when it does not know `refund_id`.
   * Every processor adapter has it; optional so that test doubles of `submit` need not: a caller
   * that finds it absent refuses (RefundLookupUnavailableError), never guesses.
   */
  findRefund?(query: RefundQuery, signal?: AbortSignal): Promise<ProcessorRefund | undefined>;
}

export interface RefundQuery {
  readonly refund_id: string;
  readonly rail: PaymentMethod;
}

/** A refund as the processor keeps it: which payment it returned money from, and how much. */
export interface ProcessorRefund {
  readonly refund_id: string;
  /** The refunded payment: the PaymentIntent for a card, the settled entry's confirmation id otherwise. */
  readonly transaction_id: string;
  readonly amount_cents: number;
  /** Only `failed` and `canceled` returned nothing. */
  readonly status: 'pending' | 'succeeded' | 'failed' | 'canceled';
}
