import type { CardNetwork, DeclineClass } from './records.js';

/**
 * How a decline bears on the next automatic attempt (DESIGN 5b): the processors' and card networks'
 * decline codes, classified. The schedule that reads the class is dunning.ts.
 */

/** What a processor said about a decline (the PaymentResult 'declined' carries it). */
export interface DeclineDetails {
  /** Stripe's `decline_code` (or its error `code` when Stripe sent none); the payments service uses the same names. */
  readonly decline_code: string;
  /** Stripe's `advice_code`: `do_not_try_again`, `confirm_card_data`, `try_again_later`. */
  readonly advice_code?: string | undefined;
  /** The network's merchant advice code (Mastercard MAC, e.g. `03`, `21`). */
  readonly network_advice_code?: string | undefined;
  /** The network's raw response code (Visa `41`, Mastercard `54`, ...). */
  readonly network_decline_code?: string | undefined;
  /** The card's network, when the processor said. */
  readonly card_network?: CardNetwork | undefined;
}

type Field = 'decline_code' | 'advice_code' | 'network_advice_code' | 'network_decline_code';

interface DeclineRule {
  readonly field: Field;
  readonly code: string;
  readonly class: DeclineClass;
  /** A network code read only for that network (for an unknown network every network's rule is read). */
  readonly network?: Exclude<CardNetwork, 'other'>;
}

const rule = (field: Field, cls: DeclineClass, codes: readonly string[], network?: DeclineRule['network']): DeclineRule[] =>
  codes.map((code) => ({ field, code, class: cls, ...(network ? { network } : {}) }));

/**
 * THE classification table. Sources:
 * - Stripe decline codes, https://docs.stripe.com/declines/codes ("next steps" column), and the
 *   `advice_code` values of https://docs.stripe.com/api/errors (`do_not_try_again`,
 *   `confirm_card_data`, `try_again_later`). The payments service answers pinless declines with the
 *   same decline-code names (its contract, src/adapters/payments-service).
 * - Visa: "Visa Rules for Decline Response Codes" (excessive reattempts, April 2021): category 1,
 *   "issuer will never approve" (04, 07, 12, 14, 15, 41, 43, 46, 57, R0, R1, R3), is never
 *   reattempted; category 3, "data quality" (54, 55, 6P, 82, N7; 70 and 1A ask for PIN or
 *   authentication), needs the cardholder or the card data first.
 * - Mastercard Merchant Advice Codes (Transaction Processing Rules, "MAC"): 03 "do not try again"
 *   and 21 "payment cancellation" are never retried; 01 "new account information"; 02 and 24-30
 *   "retry later"; 40/41 prepaid or single-use virtual card numbers. Mastercard response codes
 *   04 capture, 41 lost, 43 stolen, 14 invalid number, 54 expired.
 * - DESIGN 5b decides the buckets: lost, stolen, pick-up, fraudulent, revoked, closed or invalid
 *   account, card not supported → do_not_retry; expired, incorrect number/CVC/expiry → update;
 *   authentication → customer_action; everything else (and any unknown code) → retry_later.
 */
export const DECLINE_TABLE: readonly DeclineRule[] = [
  ...rule('decline_code', 'do_not_retry', [
    'lost_card',
    'stolen_card',
    'pickup_card',
    'fraudulent',
    'merchant_blacklist',
    'revocation_of_authorization',
    'revocation_of_all_authorizations',
    'stop_payment_order',
    'invalid_account',
    'account_closed',
    'card_not_supported',
    'currency_not_supported',
    'restricted_card',
    'security_violation',
    'service_not_allowed',
    'transaction_not_allowed',
    'not_permitted',
    'do_not_try_again',
  ]),
  ...rule('decline_code', 'update_payment_method', [
    'expired_card',
    'incorrect_number',
    'invalid_number',
    'incorrect_cvc',
    'invalid_cvc',
    'invalid_expiry_month',
    'invalid_expiry_year',
    'incorrect_zip',
    'incorrect_pin',
    'invalid_pin',
    'pin_try_exceeded',
    'new_account_information_available',
    'no_payment_method',
  ]),
  ...rule('decline_code', 'customer_action', ['authentication_required', 'offline_pin_required', 'online_or_offline_pin_required']),
  ...rule('decline_code', 'retry_later', [
    'insufficient_funds',
    'do_not_honor',
    'generic_decline',
    'card_declined',
    'try_again_later',
    'processing_error',
    'issuer_not_available',
    'reenter_transaction',
    'call_issuer',
    'approve_with_id',
    'no_action_taken',
    'duplicate_transaction',
    'card_velocity_exceeded',
    'withdrawal_count_limit_exceeded',
  ]),
  ...rule('advice_code', 'do_not_retry', ['do_not_try_again']),
  ...rule('advice_code', 'update_payment_method', ['confirm_card_data']),
  ...rule('advice_code', 'retry_later', ['try_again_later']),
  ...rule('network_advice_code', 'do_not_retry', ['03', '21', '40', '41'], 'mastercard'),
  ...rule('network_advice_code', 'update_payment_method', ['01'], 'mastercard'),
  ...rule('network_advice_code', 'retry_later', ['02', '24', '25', '26', '27', '28', '29', '30'], 'mastercard'),
  ...rule('network_decline_code', 'do_not_retry', ['04', '07', '12', '14', '15', '41', '43', '46', '57', 'R0', 'R1', 'R3'], 'visa'),
  ...rule('network_decline_code', 'update_payment_method', ['54', '55', '6P', '82', 'N7'], 'visa'),
  ...rule('network_decline_code', 'customer_action', ['70', '1A'], 'visa'),
  ...rule('network_decline_code', 'do_not_retry', ['04', '41', '43'], 'mastercard'),
  ...rule('network_decline_code', 'update_payment_method', ['14', '54'], 'mastercard'),
];

/** Most restrictive first: when the codes disagree, the one that stops sooner wins. */
const SEVERITY: Readonly<Record<DeclineClass, number>> = { do_not_retry: 3, update_payment_method: 2, customer_action: 1, retry_later: 0 };

export interface DeclineClassification {
  readonly decline_code: string;
  readonly decline_class: DeclineClass;
  /** False when no code matched the table: retry_later by default (the caller logs the code). */
  readonly known: boolean;
}

/** Classifies one decline from every code the processor sent; an unknown code is `retry_later`, never an error. */
export function classifyDecline(details: DeclineDetails): DeclineClassification {
  let best: DeclineClass | undefined;
  for (const r of DECLINE_TABLE) {
    const value = details[r.field];
    if (value === undefined || value !== r.code) continue;
    if (r.network !== undefined && details.card_network !== undefined && details.card_network !== 'other' && details.card_network !== r.network) continue;
    if (best === undefined || SEVERITY[r.class] > SEVERITY[best]) best = r.class;
  }
  return { decline_code: details.decline_code, decline_class: best ?? 'retry_later', known: best !== undefined };
}

/** Stripe's `brand` (or a payments-service network name) as a ceiling network. */
export function cardNetworkOf(brand: string | null | undefined): CardNetwork | undefined {
  if (!brand) return undefined;
  const b = brand.toLowerCase();
  if (b === 'visa') return 'visa';
  if (b === 'mastercard' || b === 'master card') return 'mastercard';
  return b === 'unknown' ? undefined : 'other';
}
