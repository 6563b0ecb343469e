import { achDebitTally, originatesLoanAchDebit } from '../ach-return-rates.js';
import { ConcurrentModificationError, LockedError } from '../errors.js';
import { classifyFailure } from '../ladder.js';
import { loanAttemptKey, loanAttemptRequest, loanDebitMovements } from '../loan-attempt.js';
import { acceptedButUnreadable, afterLoanProcessorError, LOAN_HOLD_LOOKBACK } from '../loan-retries.js';
import { withUserLock, type HeldLock, type LockDeps } from '../lock.js';
import type { LoanPaymentAudit, PaymentsStore } from '../ports/loan-payments.js';
import type { InstrumentWrite } from '../instruments/instrument.js';
import type { PaymentProcessor } from '../ports/processor.js';
import type { LoanPayment } from '../loan-payments.js';
import { formatInstant } from '../time.js';
import { decideLoanInstrument, loanPresentmentWrite, type LoanInstrumentDeps } from '../instruments/loans.js';
import { loanPaymentTransitions } from '../transitions.js';
import { afterSubmission } from './make-loan-payment.js';

export interface RetryLoanPaymentDeps extends LockDeps, LoanInstrumentDeps {
  readonly payments: PaymentsStore;
  readonly processor: PaymentProcessor;
  readonly onError?: (error: unknown, context: { user_id: string; payment_id: string; class: string }) => void;
}

export interface RetryLoanPaymentRequest {
  readonly user_id: string;
  readonly loan_id: string;
  readonly payment_id: string;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  readonly signal?: AbortSignal;
}

export type RetryLoanPaymentOutcome =
  | { readonly kind: 'collected' | 'submitted' | 'retry_scheduled' | 'failed' | 'held' | 'ceiling' | 'error_rescheduled'; readonly payment: LoanPayment }
  | { readonly kind: 'skipped_locked' }
  | { readonly kind: 'not_due'; readonly reason: 'not_found' | 'status' | 'not_yet_due'; readonly payment?: LoanPayment }
  /** Another writer changed the payment between our read and our write: nothing of ours was written. */
  | { readonly kind: 'raced' };

export const RETRY_ACTOR = 'system:collections';

/**
 * The automatic retry of a loan payment, shaped like the billing attempt: lock, read, gate, holds,
 * submit, one fenced write. A transient failure writes nothing and is thrown (the queue redelivers).
 */
export async function retryLoanPayment(deps: RetryLoanPaymentDeps, request: RetryLoanPaymentRequest): Promise<RetryLoanPaymentOutcome> {
  try {
    return await withUserLock(deps, request.user_id, request.owner, (lock) => underLock(deps, request, lock), (error) =>
      deps.onError?.(error, { user_id: request.user_id, payment_id: request.payment_id, class: 'lock_release' }),
    );
  } catch (error) {
    if (error instanceof LockedError) return { kind: 'skipped_locked' };
    throw error;
  }
}

async function underLock(deps: RetryLoanPaymentDeps, request: RetryLoanPaymentRequest, lock: HeldLock): Promise<RetryLoanPaymentOutcome> {
  // A corrupt item throws CorruptItemError here: the caller reports it, nothing is written.
  const { payment: read, instruments: item } = await deps.payments.getForAttempt(request.user_id, request.loan_id, request.payment_id);
  if (!read) return { kind: 'not_due', reason: 'not_found' };
  if (read.loc_status !== 'RETRY') return { kind: 'not_due', reason: 'status', payment: read };
  const now = deps.clock.now();
  if (read.loc_next_attempt_at !== undefined && Date.parse(read.loc_next_attempt_at) > now.getTime()) {
    return { kind: 'not_due', reason: 'not_yet_due', payment: read };
  }

  const signal = request.signal ? AbortSignal.any([request.signal, lock.signal]) : lock.signal;
  const recent = read.loc_payment_method === 'ach' ? (await deps.payments.listByLoan(read.loc_user_id, read.loc_loan_id, { limit: LOAN_HOLD_LOOKBACK, cursor: null })).items : [];
  const { instrument, refusal } = await decideLoanInstrument(deps, read, item, recent, now, 'merchant', signal);
  if (refusal?.free_at !== undefined) {
    // A network ceiling frees up with time: the retry waits for it, nothing presented.
    if (read.loc_next_attempt_at === refusal.free_at) return { kind: 'not_due', reason: 'not_yet_due', payment: read };
    const waiting: LoanPayment = { ...read, loc_next_attempt_at: refusal.free_at, loc_last_updated: formatInstant(now), version: read.version + 1 };
    return write(deps, read, waiting, 'ceiling', { actor: RETRY_ACTOR, reason: `automatic retry waits for the card's ${refusal.decided_by} ceiling`, decided_by: refusal.decided_by });
  }
  const hold = refusal?.code;
  if (hold) {
    // A hold ends automatic retries: nothing is presented.
    const failed: LoanPayment = {
      ...read,
      loc_status: loanPaymentTransitions.apply(read.loc_status, 'RETRIES_EXHAUSTED'),
      loc_update_reason: `hold:${hold}`,
      loc_last_updated: formatInstant(now),
      version: read.version + 1,
    };
    delete failed.loc_next_attempt_at;
    return write(deps, read, failed, 'held', { actor: RETRY_ACTOR, reason: `automatic retry refused by the ${hold} hold (${refusal.decided_by})`, decided_by: refusal.decided_by });
  }

  const key = loanAttemptKey(read);
  let after: LoanPayment;
  try {
    const result = await deps.processor.submit(loanAttemptRequest(read, instrument), signal);
    after = { ...afterSubmission(read, result, deps.clock.now()), loc_process: 'RETRY', ...(instrument ? { loc_instrument_id: instrument.instrument_id } : {}) };
  } catch (error) {
    const cls = classifyFailure(error, signal);
    deps.onError?.(error, { user_id: read.loc_user_id, payment_id: read.loc_payment_id, class: cls });
    // Transient or interrupted: nothing written; the message is delivered again with the same key.
    if (cls !== 'counted') throw error;
    const moved = afterLoanProcessorError(read, deps.clock.now(), acceptedButUnreadable(error));
    const kind = moved.loc_status === 'FAILED' ? 'failed' : 'error_rescheduled';
    return write(deps, read, moved, kind, { actor: RETRY_ACTOR, reason: `processor error on attempt key ${key}` });
  }
  const presented = loanPresentmentWrite(read, instrument, deps.clock.now(), 'merchant', { ...(after.loc_status === 'RETRY' || after.loc_status === 'FAILED' ? { decline_class: after.loc_decline_class, decline_code: after.loc_decline_code } : {}), item });
  const kind =
    after.loc_status === 'COMPLETED' ? 'collected' : after.loc_status === 'ACHSENT' ? 'submitted' : after.loc_status === 'RETRY' ? 'retry_scheduled' : 'failed';
  return write(deps, read, after, kind, { actor: RETRY_ACTOR, reason: `automatic retry, attempt key ${key}` }, presented);
}

/** The payment's write, with the presentment's on the instruments item in the same transaction when one was made. */
async function write(
  deps: RetryLoanPaymentDeps,
  read: LoanPayment,
  after: LoanPayment,
  kind: 'collected' | 'submitted' | 'retry_scheduled' | 'failed' | 'held' | 'ceiling' | 'error_rescheduled',
  audit: LoanPaymentAudit,
  presented?: InstrumentWrite,
): Promise<RetryLoanPaymentOutcome> {
  try {
    const now = deps.clock.now();
    await deps.payments.update(after, read.version, audit, originatesLoanAchDebit(read, after) ? achDebitTally(now) : undefined, loanDebitMovements(read, after, now), presented);
  } catch (error) {
    // Another writer moved the payment; a submission of ours (and its presentment) is recorded by the next attempt's same key.
    if (error instanceof ConcurrentModificationError) return { kind: 'raced' };
    throw error;
  }
  return { kind, payment: after };
}
