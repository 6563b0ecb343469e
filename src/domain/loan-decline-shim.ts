/**
 * TEMPORARY: the shape of the dunning classification (DESIGN 5b, src/domain/dunning.ts, being
 * written on another branch). Loan payments call `classifyDecline` and `DUNNING_RETRY_DAYS` through
 * this file only; when dunning.ts lands, this file is deleted and loan-retries.ts imports from it.
 */

export type DeclineClass = 'do_not_retry' | 'update_payment_method' | 'customer_action' | 'retry_later';

export interface DeclineDetails {
  readonly decline_code: string;
}

export interface DeclineClassification {
  readonly decline_code: string;
  readonly decline_class: DeclineClass;
  readonly known: boolean;
}

const DO_NOT_RETRY = new Set(['lost_card', 'stolen_card', 'pickup_card', 'fraudulent', 'invalid_account', 'account_closed', 'do_not_try_again', 'revocation_of_authorization']);
const UPDATE = new Set(['expired_card', 'incorrect_number', 'invalid_number', 'incorrect_cvc', 'invalid_expiry_month', 'invalid_expiry_year']);

export function classifyDecline(details: DeclineDetails): DeclineClassification {
  const code = details.decline_code;
  if (DO_NOT_RETRY.has(code)) return { decline_code: code, decline_class: 'do_not_retry', known: true };
  if (UPDATE.has(code)) return { decline_code: code, decline_class: 'update_payment_method', known: true };
  if (code === 'authentication_required') return { decline_code: code, decline_class: 'customer_action', known: true };
  return { decline_code: code, decline_class: 'retry_later', known: code === 'insufficient_funds' || code === 'do_not_honor' || code === 'generic_decline' };
}

export const DUNNING_RETRY_DAYS: readonly number[] = [1, 2, 3, 5, 7, 10, 14];
