import { DUNNING_RETRY_DAYS } from './dunning.js';
import { classifyDecline } from './declines.js';
import { ProcessorError } from './errors.js';
import type { PaymentResult } from './ports/processor.js';
import type { LoanPayment } from './loan-payments.js';
import { formatInstant } from './time.js';
import { loanPaymentTransitions } from './transitions.js';

/** A loan payment's retries (DESIGN 2.7): declines classified as for periods, retried at the first 5b waits. */

/** 1 attempt plus 3 retries. */
export const LOAN_MAX_ATTEMPTS = 4;
export const LOAN_RETRY_DAYS: readonly number[] = DUNNING_RETRY_DAYS.slice(0, LOAN_MAX_ATTEMPTS - 1);
/** Processor errors (not declines) before FAILED: a processor that keeps failing ends it, not a daily retry forever. */
export const LOAN_MAX_ERRORS = DUNNING_RETRY_DAYS.length + 1;

const DAY_MS = 24 * 60 * 60 * 1000;

export const LOAN_RETRY_REASONS = {
  doNotRetry: 'Payment declined and must not be retried (dunning: do_not_retry).',
  exhausted: 'Payment declined on its last allowed attempt (max retries).',
  processorError: 'The payments service failed before an answer; the retry is rescheduled.',
  processorErrorsExhausted: 'The payments service kept failing; automatic retries stopped.',
  unreadableAnswer: 'The payments service accepted the request but its answer could not be read; the same attempt is sent again until it answers.',
} as const;

export function afterLoanDecline(read: LoanPayment, result: Extract<PaymentResult, { outcome: 'declined' }>, now: Date): LoanPayment {
  const at = formatInstant(now);
  const attempts = read.loc_payment_attempts + 1;
  const { decline_code, decline_class } = classifyDecline(result);
  const firstDeclinedAt = read.loc_first_declined_at ?? at;
  const base: LoanPayment = {
    ...read,
    loc_payment_attempts: attempts,
    loc_decline_code: decline_code,
    loc_decline_class: decline_class,
    loc_first_declined_at: firstDeclinedAt,
    loc_last_updated: at,
    version: read.version + 1,
  };
  if (result.confirmation_id !== undefined) base.loc_confirmation_id = result.confirmation_id;
  delete base.loc_next_attempt_at;
  if (decline_class === 'do_not_retry' || attempts >= LOAN_MAX_ATTEMPTS) {
    return {
      ...base,
      loc_status: loanPaymentTransitions.apply(read.loc_status, 'RETRIES_EXHAUSTED'),
      loc_update_reason: decline_class === 'do_not_retry' ? LOAN_RETRY_REASONS.doNotRetry : LOAN_RETRY_REASONS.exhausted,
    };
  }
  return {
    ...base,
    loc_status: loanPaymentTransitions.apply(read.loc_status, 'RETRY_SCHEDULED'),
    loc_next_attempt_at: nextRetryAt(firstDeclinedAt, attempts),
    loc_update_reason: result.message,
  };
}

/** Counted from the first decline. */
export function nextRetryAt(firstDeclinedAt: string, attempts: number): string {
  const days = LOAN_RETRY_DAYS[Math.min(attempts, LOAN_RETRY_DAYS.length) - 1] ?? LOAN_RETRY_DAYS.at(-1)!;
  return formatInstant(new Date(Date.parse(firstDeclinedAt) + days * DAY_MS));
}

/** The processor's codes for a 2xx whose body could not be read: it accepted the request, so money may have moved. */
const ACCEPTED_UNREADABLE: ReadonlySet<string> = new Set(['processor_bad_answer']);

export function acceptedButUnreadable(error: unknown): boolean {
  return error instanceof ProcessorError && ACCEPTED_UNREADABLE.has(error.code);
}

/**
 * Nothing was presented (or the same key goes again), so the attempt count stays; the next attempt moves.
 * An accepted request is never ended at the error limit: only the same key can record the charge it may hold.
 */
export function afterLoanProcessorError(read: LoanPayment, now: Date, mayHoldCharge = false): LoanPayment {
  const at = formatInstant(now);
  const errors = (read.loc_error_count ?? 0) + 1;
  const base: LoanPayment = { ...read, loc_error_count: errors, loc_last_updated: at, version: read.version + 1 };
  if (errors >= LOAN_MAX_ERRORS && mayHoldCharge) {
    return { ...base, loc_next_attempt_at: formatInstant(new Date(now.getTime() + DAY_MS)), loc_update_reason: LOAN_RETRY_REASONS.unreadableAnswer };
  }
  if (errors >= LOAN_MAX_ERRORS) {
    delete base.loc_next_attempt_at;
    return { ...base, loc_status: loanPaymentTransitions.apply(read.loc_status, 'RETRIES_EXHAUSTED'), loc_update_reason: LOAN_RETRY_REASONS.processorErrorsExhausted };
  }
  const days = DUNNING_RETRY_DAYS[errors - 1]!;
  return {
    ...base,
    loc_next_attempt_at: formatInstant(new Date(now.getTime() + days * DAY_MS)),
    loc_update_reason: LOAN_RETRY_REASONS.processorError,
  };
}

/** How many of the loan's newest payments the hold reads. */
export const LOAN_HOLD_LOOKBACK = 25;
