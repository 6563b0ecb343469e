import type { CardNetwork, DeclineClass } from './records.js';

/** The processors' and card networks' decline codes, classified for the dunning schedule (dunning.ts). */

/** What a processor said about a decline. */
export interface DeclineDetails {
  /** Stripe's `decline_code` (or its error `code`); the payments service uses the same names. */
  readonly decline_code: string;
  readonly advice_code?: string | undefined;
  /** Mastercard's merchant advice code. */
  readonly network_advice_code?: string | undefined;
  readonly network_decline_code?: string | undefined;
  readonly card_network?: CardNetwork | undefined;
}

type Field = 'decline_code' | 'advice_code' | 'network_advice_code' | 'network_decline_code';

interface DeclineRule {
  readonly field: Field;
  readonly code: string;
  readonly class: DeclineClass;
  /** Read only for that network, or for a card whose network is unknown. */
  readonly network?: Exclude<CardNetwork, 'other'>;
}

const rule = (field: Field, cls: DeclineClass, codes: readonly string[], network?: DeclineRule['network']): DeclineRule[] =>
  codes.map((code) => ({ field, code, class: cls, ...(network ? { network } : {}) }));

/**
 * Sources: Stripe's decline codes (docs.stripe.com/declines/codes) and `advice_code`s; Visa's Rules for
 * Decline Response Codes (category 1 never reattempted, category 3 needs new data); Mastercard's
 * Merchant Advice Codes and response codes. DESIGN 5b decides the buckets; an unknown code is retry_later.
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
  /** False when no code matched: the caller logs it. */
  readonly known: boolean;
}

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
