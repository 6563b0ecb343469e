import type { PaymentRequest } from '../../src/domain/ports/processor.js';

/** One ACH debit of a subscription period, as the attempt asks a processor for it. */
export const ACH_PAYMENT_REQUEST: PaymentRequest = {
  idempotency_key: 'sub-1:1',
  user_id: 'u1',
  amount_cents: 1999,
  rail: 'ach',
  account_last_four: '6789',
  reference: { kind: 'subscription', user_id: 'u1', billing_date: '2026-12-01T00:00:00.000000000Z', subscription_id: 'sub-1' },
};
