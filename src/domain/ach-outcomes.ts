import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';
import { applyBillingEvent } from './billing-record.js';
import { idSchema } from './ids.js';
import { centsSchema } from './money.js';
import { REPRESENTMENT_ENTRY_DESCRIPTION, type PaymentRequest } from './ports/processor.js';
import type { BillingRecord } from './records.js';
import type { LoanPayment } from './loan-payments.js';
import { LOAN_LOST_SUBMISSION_STATUSES, MAY_RECORD_SUBMISSION_STATUSES, UNBOOKABLE_STATUSES } from './statuses.js';
import { formatInstant, instantSchema } from './time.js';
import { loanPaymentTransitions, type LoanPaymentEvent } from './transitions.js';
import { LOAN_MAX_ATTEMPTS, nextRetryAt } from './loan-retries.js';
import { classifyReturnCode, MAX_ACH_REPRESENTMENTS, RETURN_CODE_PATTERN, withinRepresentmentWindow, type ReturnCodeClass } from './nacha.js';

/** ACH outcomes (DESIGN 4): settlement, return, refund and chargeback of an accepted debit, decided purely. */

export const achReferenceSchema = lazySchema(() => z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('subscription'), user_id: idSchema, billing_date: instantSchema }),
  z.object({ kind: z.literal('loan_payment'), user_id: idSchema, loan_id: idSchema, payment_id: idSchema }),
]));

export const ACH_EVENT_TYPES = ['settled', 'returned', 'refunded', 'chargeback'] as const;

export const achEventSchema = lazySchema(() => z.object({
  event_id: idSchema,
  type: z.enum(ACH_EVENT_TYPES),
  confirmation_id: idSchema,
  return_code: z.optional(z.string().check(z.regex(RETURN_CODE_PATTERN, 'a NACHA return code such as R01'))),
  amount_cents: centsSchema,
  occurred_at: instantSchema,
  reference: achReferenceSchema,
}).check(z.superRefine((event, ctx) => {
  if (event.type === 'returned' && event.return_code === undefined) {
    ctx.addIssue({ code: 'custom', path: ['return_code'], message: 'required for a returned event' });
  }
})));
export type AchEvent = z.infer<typeof achEventSchema>;
export type AchEventType = AchEvent['type'];

/** A re-presented entry says so (DESIGN 4.1); at the limit the gate refuses it before any request. */
export function representmentFlags(record: Pick<BillingRecord, 'payment_method' | 'ach_represented'>): Pick<PaymentRequest, 'reinitiated' | 'entry_description'> {
  return record.payment_method === 'ach' && (record.ach_represented ?? 0) > 0 ? { reinitiated: true, entry_description: REPRESENTMENT_ENTRY_DESCRIPTION } : {};
}

/**
 * The same for a loan payment in RETRY after an R01/R09 return: from the count the return stored,
 * which every later write keeps (a processor error or a decline between does not drop the flag).
 */
export function loanRepresentmentFlags(
  payment: Pick<LoanPayment, 'loc_payment_method' | 'loc_status' | 'loc_update_reason' | 'loc_ach_represented' | 'loc_return_code'>,
): Pick<PaymentRequest, 'reinitiated' | 'entry_description'> {
  if (payment.loc_payment_method !== 'ach' || payment.loc_status !== 'RETRY') return {};
  // Payments returned before the count was stored are read from the last return's code.
  const code = payment.loc_return_code ?? /^ach_returned:(R\d{2})$/.exec(payment.loc_update_reason ?? '')?.[1];
  const represented = (payment.loc_ach_represented ?? 0) > 0 || (code !== undefined && classifyReturnCode(code) === 'represent');
  return represented ? { reinitiated: true, entry_description: REPRESENTMENT_ENTRY_DESCRIPTION } : {};
}

/** Curated, customer-safe texts saved as `payment_error`. */
export const ACH_RETURN_MESSAGES: Readonly<Record<ReturnCodeClass, string>> = {
  represent: 'The bank returned the debit for insufficient or uncollected funds.',
  account_error: 'The account on file cannot be debited by ACH.',
  unauthorized: 'The account holder reported the debit as unauthorized.',
};

/** 409: the outcome is for a submission the record does not show yet; its repair attempt records it first. */
export const NOT_YET_RECORDED = 'not_yet_recorded';

export type AchIgnoreReason =
  | 'already_applied'
  /** The record shows another entry (a newer submission, or not ours). */
  | 'confirmation_mismatch'
  /** Out of order, or after an operator acted. */
  | 'status'
  /** A refund of a loan payment. */
  | 'unsupported'
  | 'not_found';

/** What the outcome did, for logs and the answer. */
export type AchEffect =
  | 'settled'
  | 'exception'
  | 'represent'
  | 'blocked'
  | 'unauthorized'
  | 'refunded'
  | 'charged_back'
  | 'returned'
  | 'retry';

export type AchDecision<T> =
  /** `reversed`: a return after settlement undid a collection. */
  | { readonly kind: 'apply'; readonly after: T; readonly effect: AchEffect; readonly reversed?: boolean }
  | { readonly kind: 'ignore'; readonly reason: AchIgnoreReason }
  | { readonly kind: 'not_yet_recorded' }
  /** A replay if the history ever recorded `confirmation_id` (an older entry), else `otherwise`; the use case asks it. */
  | { readonly kind: 'unless_recorded'; readonly confirmation_id: string; readonly otherwise: AchDecision<T> };

const notYetRecorded = <T>(): AchDecision<T> => ({ kind: 'not_yet_recorded' });

const ignore = <T>(reason: AchIgnoreReason): AchDecision<T> => ({ kind: 'ignore', reason });

/** The unrecorded submission's outcome (409), or an older entry's the audit rows show: a replay, never a 409 forever. */
function unlessOlderEntry<T>(recorded: string | undefined, confirmationId: string): AchDecision<T> {
  if (recorded === undefined) return notYetRecorded();
  return { kind: 'unless_recorded', confirmation_id: confirmationId, otherwise: notYetRecorded() };
}

export function decideSubscriptionOutcome(record: BillingRecord, event: AchEvent, now: Date): AchDecision<BillingRecord> {
  if (record.transaction_id !== event.confirmation_id) {
    if (MAY_RECORD_SUBMISSION_STATUSES.has(record.billing_status)) return unlessOlderEntry(record.transaction_id, event.confirmation_id);
    // Money taken for a period written off is never dropped: it is flagged for refund.
    if (event.type === 'settled' && UNBOOKABLE_STATUSES.has(record.billing_status)) {
      if (record.ach_exception?.code === 'unowed_payment' && record.ach_exception.confirmation_id === event.confirmation_id) return ignore('already_applied');
      return { kind: 'unless_recorded', confirmation_id: event.confirmation_id, otherwise: unowedSettlement(record, event, now) };
    }
    return ignore('confirmation_mismatch');
  }
  const status = record.billing_status;
  switch (event.type) {
    case 'settled':
      if (status === 'ACHSENT' && event.amount_cents !== record.amount_cents) return settlementMismatch(record, event, now);
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
      // Returns come up to sixty days after settlement: the collection is reversed, never a replay.
      if (status === 'COMPLETED') return { ...subscriptionReturn(record, event.return_code!, now), reversed: true } as AchDecision<BillingRecord>;
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

/** The bank took money a written-off period does not owe: flagged `unowed_payment` for refund, status kept. */
function unowedSettlement(record: BillingRecord, event: AchEvent, now: Date): AchDecision<BillingRecord> {
  return {
    kind: 'apply',
    effect: 'exception',
    after: applyBillingEvent(record, 'EXCEPTION_RAISED', now, {
      set: { ach_exception: { code: 'unowed_payment', received_cents: event.amount_cents, confirmation_id: event.confirmation_id, at: formatInstant(now) } },
    }),
  };
}

/** A settlement for another amount than the debit: the period stays ACHSENT and is flagged for operators. */
function settlementMismatch(record: BillingRecord, event: AchEvent, now: Date): AchDecision<BillingRecord> {
  if (record.ach_exception?.received_cents === event.amount_cents) return ignore('already_applied');
  return {
    kind: 'apply',
    effect: 'exception',
    after: applyBillingEvent(record, 'EXCEPTION_RAISED', now, {
      set: { ach_exception: { code: 'amount_mismatch', received_cents: event.amount_cents, at: formatInstant(now) } },
    }),
  };
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
        set: { payment_error: ACH_RETURN_MESSAGES.account_error, ach_blocked: true, ach_return_code: returnCode, completed_date: undefined },
      }),
    };
  }
  // While nothing was re-presented yet, the entry being returned is the original one.
  const original = record.ach_original_entry_date ?? record.last_attempt_date ?? record.first_attempt_date ?? formatInstant(now);
  const represented = record.ach_represented ?? 0;
  const mayRepresent = represented < MAX_ACH_REPRESENTMENTS && withinRepresentmentWindow(original, now);
  return {
    kind: 'apply',
    effect: mayRepresent ? 'represent' : 'blocked',
    after: applyBillingEvent(record, 'ACH_RETURNED', now, {
      updatedEvent: 'ACH_RETURNED',
      set: {
        payment_error: ACH_RETURN_MESSAGES.represent,
        ach_return_code: returnCode,
        completed_date: undefined,
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
      set: { payment_error: ACH_RETURN_MESSAGES.unauthorized, ach_unauthorized: true, completed_date: undefined, ...(returnCode ? { ach_return_code: returnCode } : {}) },
    }),
  };
}

/** A re-presentable return goes to RETRY within NACHA's limits, otherwise RETURNED (DESIGN 2.7). */
export function decideLoanPaymentOutcome(payment: LoanPayment, event: AchEvent, now: Date): AchDecision<LoanPayment> {
  if (payment.loc_confirmation_id !== event.confirmation_id) {
    if (payment.loc_payment_method === 'ach' && LOAN_LOST_SUBMISSION_STATUSES.has(payment.loc_status)) {
      // Keys are sequential: an entry no audit row shows is attempt `attempts + 1`'s, recorded here.
      const submitted: LoanPayment = {
        ...payment,
        loc_status: loanPaymentTransitions.apply(payment.loc_status, 'SUBMISSION_RECORDED'),
        loc_payment_attempts: payment.loc_payment_attempts + 1,
        loc_confirmation_id: event.confirmation_id,
      };
      return { kind: 'unless_recorded', confirmation_id: event.confirmation_id, otherwise: decideLoanPaymentOutcome(submitted, event, now) };
    }
    if (payment.loc_status === 'PENDING' || payment.loc_status === 'RETRY') return unlessOlderEntry(payment.loc_confirmation_id, event.confirmation_id);
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
      const code = event.return_code!;
      const reason = `ach_returned:${code}`;
      if (status === 'COMPLETED') return { ...change('ACH_RETURNED', reason, 'returned', { loc_applications: [], loc_return_code: event.return_code! }), reversed: true } as AchDecision<LoanPayment>;
      if (status !== 'ACHSENT') return ignore(['RETRY', 'RETURNED', 'CHARGED_BACK'].includes(status) ? 'already_applied' : 'status');
      const codeClass = classifyReturnCode(code);
      // Kept: the account's next ACH debit meets its hold.
      const returned: Partial<LoanPayment> = { loc_return_code: code };
      if (codeClass === 'unauthorized') return change('CHARGED_BACK', reason, 'unauthorized', returned);
      const original = payment.loc_ach_original_entry_date ?? payment.loc_created_date;
      const withinWindow = withinRepresentmentWindow(original, now);
      // A payment returned before the count was stored: every attempt after the first was a re-presentment.
      const represented = payment.loc_ach_represented ?? Math.max(0, payment.loc_payment_attempts - 1);
      if (codeClass === 'represent' && represented < MAX_ACH_REPRESENTMENTS && withinWindow && payment.loc_payment_attempts < LOAN_MAX_ATTEMPTS) {
        const first = payment.loc_first_declined_at ?? formatInstant(now);
        return change('RETRY_SCHEDULED', reason, 'retry', {
          ...returned,
          // Granted here and kept on the entry: the retry that presents it flags it RETRY PYMT.
          loc_ach_represented: represented + 1,
          loc_ach_original_entry_date: original,
          loc_first_declined_at: first,
          loc_next_attempt_at: nextRetryAt(first, payment.loc_payment_attempts),
        });
      }
      return change('ACH_RETURNED', reason, 'returned', returned);
    }
    case 'chargeback':
      if (status === 'ACHSENT' || status === 'COMPLETED') return change('CHARGED_BACK', 'ach_chargeback', 'charged_back');
      return ignore(status === 'CHARGED_BACK' ? 'already_applied' : 'status');
    case 'refunded':
      return ignore('unsupported');
  }
}

/** The loan's newest other presented ACH payment on the account decides the hold (DESIGN 3.1); an unreturned one lifts it. */
export function loanAchHold(
  payment: Pick<LoanPayment, 'loc_payment_id' | 'loc_payment_method' | 'loc_account_last_four'>,
  newestFirst: readonly LoanPayment[],
): 'ach_authorization_required' | 'ach_account_invalid' | undefined {
  if (payment.loc_payment_method !== 'ach') return undefined;
  for (const other of newestFirst) {
    if (other.loc_payment_id === payment.loc_payment_id) continue;
    if (other.loc_payment_method !== 'ach' || other.loc_account_last_four !== payment.loc_account_last_four) continue;
    if (other.loc_payment_attempts === 0) continue;
    // Only a debit that settled proves the account debitable again; one still in flight proves nothing.
    if (other.loc_return_code === undefined) {
      if (other.loc_status === 'COMPLETED') return undefined;
      continue;
    }
    // A return on an instrument holds that instrument (instruments item); this reads only older returns.
    if (other.loc_instrument_id !== undefined) continue;
    const cls = classifyReturnCode(other.loc_return_code);
    if (cls === 'unauthorized') return 'ach_authorization_required';
    if (cls === 'account_error') return 'ach_account_invalid';
    return undefined;
  }
  return undefined;
}

/** A completed payment is applied to its intended installment, once. */
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

