import * as z from 'zod';
import { applyBillingEvent } from './billing-record.js';
import { idSchema } from './ids.js';
import { centsSchema } from './money.js';
import { COLLECTIBLE_STATUSES, type BillingRecord, type LoanPayment } from './records.js';
import { formatInstant, instantSchema } from './time.js';
import { loanPaymentTransitions, type LoanPaymentEvent } from './transitions.js';

/**
 * ACH outcomes (DESIGN 4): settlement, return, refund and chargeback of a debit the processor
 * accepted earlier. The decisions are pure; `applyAchEvent` runs them over the stores with the
 * record's version as the fence (the ach-handler takes no lock, DESIGN 2.6).
 */

/* ---------------- the event ---------------- */

export const achReferenceSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('subscription'), user_id: idSchema, billing_date: instantSchema }),
  z.object({ kind: z.literal('loan_payment'), user_id: idSchema, loan_id: idSchema, payment_id: idSchema }),
]);

export const ACH_EVENT_TYPES = ['settled', 'returned', 'refunded', 'chargeback'] as const;

export const achEventSchema = z
  .object({
    event_id: idSchema,
    type: z.enum(ACH_EVENT_TYPES),
    confirmation_id: idSchema,
    return_code: z.string().regex(/^R\d{2}$/, 'a NACHA return code such as R01').optional(),
    amount_cents: centsSchema,
    occurred_at: instantSchema,
    reference: achReferenceSchema,
  })
  .superRefine((event, ctx) => {
    if (event.type === 'returned' && event.return_code === undefined) {
      ctx.addIssue({ code: 'custom', path: ['return_code'], message: 'required for a returned event' });
    }
  });
export type AchEvent = z.infer<typeof achEventSchema>;
export type AchEventType = AchEvent['type'];

/* ---------------- NACHA return codes ---------------- */

export type ReturnCodeClass = 'represent' | 'account_error' | 'unauthorized';

/** Insufficient or uncollected funds: the same debit may be presented again. */
const REPRESENTABLE = new Set(['R01', 'R09']);
/** The account holder says the debit was not authorized: chargeback semantics. */
const UNAUTHORIZED = new Set(['R05', 'R07', 'R10', 'R11', 'R29']);

/** R01/R09 re-presentable; R05/R07/R10/R11/R29 unauthorized; every other code (R02, R03, R04, ...) stops ACH retries. */
export function classifyReturnCode(code: string): ReturnCodeClass {
  if (REPRESENTABLE.has(code)) return 'represent';
  if (UNAUTHORIZED.has(code)) return 'unauthorized';
  // Unknown or account-level codes: never debit the account again without a person deciding.
  return 'account_error';
}

/** NACHA: an R01/R09 entry may be re-presented at most twice, within 180 days of the original entry. */
export const MAX_ACH_REPRESENTMENTS = 2;
export const ACH_REPRESENTMENT_WINDOW_MS = 180 * 24 * 60 * 60 * 1000;

/** Curated, customer-safe texts saved as `payment_error`. */
export const ACH_RETURN_MESSAGES: Readonly<Record<ReturnCodeClass, string>> = {
  represent: 'The bank returned the debit for insufficient or uncollected funds.',
  account_error: 'The account on file cannot be debited by ACH.',
  unauthorized: 'The account holder reported the debit as unauthorized.',
};

/* ---------------- decisions ---------------- */

/**
 * The outcome is for a submission the record does not show yet (the attempt crashed after the bank
 * accepted the debit): the sender must deliver it again after the repair attempt records it (409).
 */
export const NOT_YET_RECORDED = 'not_yet_recorded';

export type AchIgnoreReason =
  /** The record already shows this outcome: a replay. */
  | 'already_applied'
  /** The record's confirmation id is another attempt's (a newer submission, or not ours). */
  | 'confirmation_mismatch'
  /** The outcome does not apply to the record's status (out of order, or after an operator acted). */
  | 'status'
  /** The outcome has no meaning for this kind of payment (a refund of a loan payment). */
  | 'unsupported'
  | 'not_found';

/** What the outcome did, for logs and the answer. */
export type AchEffect =
  | 'settled'
  | 'represent'
  | 'blocked'
  | 'unauthorized'
  | 'refunded'
  | 'charged_back'
  | 'returned'
  | 'retry';

export type AchDecision<T> =
  | { readonly kind: 'apply'; readonly after: T; readonly effect: AchEffect }
  | { readonly kind: 'ignore'; readonly reason: AchIgnoreReason }
  | { readonly kind: 'not_yet_recorded' };

const notYetRecorded = <T>(): AchDecision<T> => ({ kind: 'not_yet_recorded' });

const ignore = <T>(reason: AchIgnoreReason): AchDecision<T> => ({ kind: 'ignore', reason });

/** The after-image of a subscription period for one ACH outcome, or why nothing is written. */
export function decideSubscriptionOutcome(record: BillingRecord, event: AchEvent, now: Date): AchDecision<BillingRecord> {
  if (record.transaction_id !== event.confirmation_id) {
    // Still owed and showing no such submission: the attempt that made it has not recorded it yet.
    if (COLLECTIBLE_STATUSES.has(record.billing_status)) return notYetRecorded();
    // Each attempt overwrites transaction_id: a different one means this outcome is for an older entry.
    return ignore('confirmation_mismatch');
  }
  const status = record.billing_status;
  switch (event.type) {
    case 'settled':
      if (status === 'ACHSENT') {
        return {
          kind: 'apply',
          effect: 'settled',
          after: applyBillingEvent(record, 'ACH_SETTLED', now, { updatedEvent: 'ACH_SETTLED', set: { payment_error: '' } }),
        };
      }
      return ignore(status === 'COMPLETED' || status === 'REFUNDED' ? 'already_applied' : 'status');
    case 'returned':
      if (status === 'ACHSENT') return subscriptionReturn(record, event.return_code!, now);
      return ignore(status === 'FAILED' ? 'already_applied' : 'status');
    case 'refunded':
      if (status === 'COMPLETED') {
        return { kind: 'apply', effect: 'refunded', after: applyBillingEvent(record, 'REFUNDED', now, { updatedEvent: 'REFUNDED' }) };
      }
      return ignore(status === 'REFUNDED' ? 'already_applied' : 'status');
    case 'chargeback':
      if (status === 'ACHSENT' || status === 'COMPLETED') return subscriptionChargeback(record, now);
      return ignore(status === 'FAILED' && record.ach_unauthorized === true ? 'already_applied' : 'status');
  }
}

function subscriptionReturn(record: BillingRecord, returnCode: string, now: Date): AchDecision<BillingRecord> {
  const codeClass = classifyReturnCode(returnCode);
  if (codeClass === 'unauthorized') return subscriptionChargeback(record, now, returnCode);
  if (codeClass === 'account_error') {
    return {
      kind: 'apply',
      effect: 'blocked',
      after: applyBillingEvent(record, 'ACH_RETURNED', now, {
        updatedEvent: 'ACH_RETURNED',
        set: { payment_error: ACH_RETURN_MESSAGES.account_error, ach_blocked: true, ach_return_code: returnCode },
      }),
    };
  }
  // While nothing was re-presented yet, the entry being returned is the original one.
  const original = record.ach_original_entry_date ?? record.last_attempt_date ?? record.first_attempt_date ?? formatInstant(now);
  const represented = record.ach_represented ?? 0;
  const withinWindow = now.getTime() - Date.parse(original) <= ACH_REPRESENTMENT_WINDOW_MS;
  const mayRepresent = represented < MAX_ACH_REPRESENTMENTS && withinWindow;
  return {
    kind: 'apply',
    effect: mayRepresent ? 'represent' : 'blocked',
    after: applyBillingEvent(record, 'ACH_RETURNED', now, {
      updatedEvent: 'ACH_RETURNED',
      set: {
        payment_error: ACH_RETURN_MESSAGES.represent,
        ach_return_code: returnCode,
        ach_original_entry_date: original,
        // Counted when granted: the FAILED record's daily retry is the re-presentment.
        ...(mayRepresent ? { ach_represented: represented + 1 } : { ach_blocked: true }),
      },
    }),
  };
}

function subscriptionChargeback(record: BillingRecord, now: Date, returnCode?: string): AchDecision<BillingRecord> {
  return {
    kind: 'apply',
    effect: 'unauthorized',
    after: applyBillingEvent(record, 'CHARGED_BACK', now, {
      updatedEvent: 'ACH_CHARGEBACK',
      set: { payment_error: ACH_RETURN_MESSAGES.unauthorized, ach_unauthorized: true, ...(returnCode ? { ach_return_code: returnCode } : {}) },
    }),
  };
}

/**
 * The after-image of a loan payment (DESIGN 2.7, seed 004's diagram). A re-presentable return goes
 * to RETRY while the payment has been submitted fewer than three times (the original and two
 * re-presentments) within 180 days of its creation; otherwise RETURNED. Unauthorized returns and
 * chargebacks are CHARGED_BACK. Loan payments have no refunded state.
 */
export function decideLoanPaymentOutcome(payment: LoanPayment, event: AchEvent, now: Date): AchDecision<LoanPayment> {
  if (payment.loc_confirmation_id !== event.confirmation_id) {
    if (payment.loc_status === 'PENDING' || payment.loc_status === 'RETRY') return notYetRecorded();
    return ignore('confirmation_mismatch');
  }
  const status = payment.loc_status;
  const change = (loanEvent: LoanPaymentEvent, reason: string, effect: AchEffect, extra: Partial<LoanPayment> = {}): AchDecision<LoanPayment> => ({
    kind: 'apply',
    effect,
    after: {
      ...payment,
      ...extra,
      loc_status: loanPaymentTransitions.apply(status, loanEvent),
      loc_update_reason: reason,
      loc_last_updated: formatInstant(now),
      version: payment.version + 1,
    },
  });
  switch (event.type) {
    case 'settled':
      if (status === 'ACHSENT') return change('ACH_SETTLED', 'ach_settled', 'settled', applicationsOnSettlement(payment, event));
      return ignore(status === 'COMPLETED' ? 'already_applied' : 'status');
    case 'returned': {
      if (status !== 'ACHSENT') return ignore(['RETRY', 'RETURNED', 'CHARGED_BACK'].includes(status) ? 'already_applied' : 'status');
      const code = event.return_code!;
      const reason = `ach_returned:${code}`;
      const codeClass = classifyReturnCode(code);
      if (codeClass === 'unauthorized') return change('CHARGED_BACK', reason, 'unauthorized');
      const withinWindow = now.getTime() - Date.parse(payment.loc_created_date) <= ACH_REPRESENTMENT_WINDOW_MS;
      if (codeClass === 'represent' && payment.loc_payment_attempts <= MAX_ACH_REPRESENTMENTS && withinWindow) {
        return change('RETRY_SCHEDULED', reason, 'retry');
      }
      return change('ACH_RETURNED', reason, 'returned');
    }
    case 'chargeback':
      if (status === 'ACHSENT' || status === 'COMPLETED') return change('CHARGED_BACK', 'ach_chargeback', 'charged_back');
      return ignore(status === 'CHARGED_BACK' ? 'already_applied' : 'status');
    case 'refunded':
      return ignore('unsupported');
  }
}

/** Seed 004: a completed payment is applied to its intended installment, once. */
function applicationsOnSettlement(payment: LoanPayment, event: AchEvent): Partial<LoanPayment> {
  if (!payment.loc_intended_installment_id || (payment.loc_applications?.length ?? 0) > 0) return {};
  return {
    loc_applications: [
      {
        payment_id: payment.loc_payment_id,
        installment_id: payment.loc_intended_installment_id,
        amount: payment.loc_amount,
        payment_date: event.occurred_at,
      },
    ],
  };
}

