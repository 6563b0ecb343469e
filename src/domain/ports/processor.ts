import type { DeclineDetails } from '../dunning.js';
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
  /**
   * NACHA: a re-presented R01/R09 entry is flagged as reinitiated with the company entry description
   * `RETRY PYMT` (DESIGN 4.1). Absent on an original entry.
   */
  readonly reinitiated?: true;
  readonly entry_description?: typeof REPRESENTMENT_ENTRY_DESCRIPTION;
}

/** The company entry description NACHA requires on a re-presented entry. */
export const REPRESENTMENT_ENTRY_DESCRIPTION = 'RETRY PYMT';

export type PaymentResult =
  /** Pinless or card: the money is collected. */
  | { readonly outcome: 'approved'; readonly confirmation_id: string }
  /** ACH: the debit was accepted; the ach-handler settles or returns it later. */
  | { readonly outcome: 'submitted'; readonly confirmation_id: string }
  /**
   * A decline: the customer's bank said no. `message` is a curated, customer-safe sentence; the
   * codes (DeclineDetails: decline, advice and network codes, the card's network) feed the dunning
   * classification (DESIGN 5b).
   */
  | ({ readonly outcome: 'declined'; readonly confirmation_id?: string; readonly message: string } & DeclineDetails);

/**
 * Submits a payment. The same idempotency key always returns the same result and never charges
 * twice. Throws ProcessorError for errors that are not declines and TransientError for outages
 * worth retrying.
 */
export interface PaymentProcessor {
  submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult>;
}
