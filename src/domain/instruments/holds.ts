/**
 * The one closed table of holds (DESIGN 3.2): what each outcome holds, the rule that decides it,
 * what lifts it and who may release it. Every path's refusal and every return's hold reads it.
 */

/** The refusal codes of a hold (DESIGN 3.1): the 409's `code`, and the key of a hold on an instrument. */
export const HOLD_CODES = ['ach_authorization_required', 'ach_account_invalid', 'ach_representment_limit', 'card_disputed', 'payment_method_required'] as const;
export type HoldCode = (typeof HOLD_CODES)[number];

/** The named rules: every refusal and every stop names the one that decided it. */
export const DECIDED_BY = [
  'nacha.representment_limit',
  'nacha.account_error',
  'nacha.unauthorized_return',
  'card.do_not_retry',
  'card.dispute',
  'visa.ceiling_30d',
  'visa.category1',
  'mastercard.ceiling_24h',
  'mastercard.ceiling_30d',
  'dunning.window',
] as const;
export type DecidedBy = (typeof DECIDED_BY)[number];

export const HOLD_CLASSES = ['ach_represent', 'ach_account', 'ach_unauthorized', 'card_never', 'card_dispute'] as const;
export type HoldClass = (typeof HOLD_CLASSES)[number];

/** What a hold binds: one ACH entry, the bank account, one authorization on it, or a card. */
export type HoldScope = 'entry' | 'account' | 'authorization' | 'card';
export type LiftedBy = 'another_account' | 'newer_authorization' | 'another_card' | 'dispute_won' | 'operator';

export interface HoldRule {
  readonly class: HoldClass;
  readonly code: HoldCode;
  readonly scope: HoldScope;
  readonly decided_by: DecidedBy;
  /** Empty: the limit is the rule, nothing lifts it. */
  readonly lifted_by: readonly LiftedBy[];
  /** Only a hold an operator may lift answers the release route; NACHA and the networks decide the others. */
  readonly operator_releasable: boolean;
}

export const HOLD_RULES: Readonly<Record<HoldClass, HoldRule>> = {
  ach_represent: { class: 'ach_represent', code: 'ach_representment_limit', scope: 'entry', decided_by: 'nacha.representment_limit', lifted_by: [], operator_releasable: false },
  ach_account: { class: 'ach_account', code: 'ach_account_invalid', scope: 'account', decided_by: 'nacha.account_error', lifted_by: ['another_account'], operator_releasable: false },
  ach_unauthorized: {
    class: 'ach_unauthorized',
    code: 'ach_authorization_required',
    scope: 'authorization',
    decided_by: 'nacha.unauthorized_return',
    lifted_by: ['newer_authorization', 'another_account'],
    operator_releasable: false,
  },
  card_never: { class: 'card_never', code: 'payment_method_required', scope: 'card', decided_by: 'card.do_not_retry', lifted_by: ['another_card'], operator_releasable: false },
  card_dispute: { class: 'card_dispute', code: 'card_disputed', scope: 'card', decided_by: 'card.dispute', lifted_by: ['dispute_won', 'operator'], operator_releasable: true },
};

/** NACHA return codes by class; a code not listed holds nothing (its entry is not re-presented automatically). */
const RETURN_CODE_CLASSES: Readonly<Record<string, HoldClass>> = {
  ...Object.fromEntries(['R01', 'R09'].map((c) => [c, 'ach_represent'])),
  ...Object.fromEntries(['R02', 'R03', 'R04', 'R12', 'R13', 'R14', 'R15', 'R16', 'R20'].map((c) => [c, 'ach_account'])),
  ...Object.fromEntries(['R05', 'R07', 'R08', 'R10', 'R11', 'R29', 'R51'].map((c) => [c, 'ach_unauthorized'])),
};

export function holdClassOfReturn(returnCode: string): HoldClass | undefined {
  return RETURN_CODE_CLASSES[returnCode];
}

const RULE_BY_CODE: ReadonlyMap<HoldCode, HoldRule> = new Map(Object.values(HOLD_RULES).map((rule) => [rule.code, rule]));

export function ruleOfCode(code: HoldCode): HoldRule {
  return RULE_BY_CODE.get(code)!;
}

/** Customer-safe texts of the 409 answers. */
export const HOLD_MESSAGES: Readonly<Record<HoldCode, string>> = {
  ach_authorization_required: 'the account holder reported an ACH debit as unauthorized: a new authorization is required before the account is debited again',
  ach_account_invalid: 'the bank returned an ACH debit for an account error (closed, missing or invalid account): a new account is required',
  ach_representment_limit: 'this ACH debit was already presented again as often as NACHA allows (twice within 180 days of the original entry)',
  card_disputed: 'the cardholder disputed a payment with this card: the card is not charged again',
  payment_method_required: 'the card on file was declined as one that will never be approved (lost, stolen, closed, ...): a new payment method is required',
};

const HOLD_CODE_SET: ReadonlySet<string> = new Set(HOLD_CODES);
export function isHoldCode(reason: string): reason is HoldCode {
  return HOLD_CODE_SET.has(reason);
}
