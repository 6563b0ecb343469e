import { achDebitTally, originatesLoanAchDebit } from '../ach-return-rates.js';
import { AlreadyExistsError, DomainError, NotFoundError, PaymentHoldError } from '../errors.js';
import { loanAttemptRequest, loanDebitMovements } from '../loan-attempt.js';
import { refusalMessage } from '../instruments/gate.js';
import { decideLoanInstrument, loanPresentmentWrite, type LoanInstrumentDecision, type LoanInstrumentDeps } from '../instruments/loans.js';
import { afterLoanDecline, LOAN_HOLD_LOOKBACK } from '../loan-retries.js';
import type { Clock } from '../ports/clock.js';
import type { LoanAttemptRead, LoanPaymentAudit, PaymentsStore } from '../ports/loan-payments.js';
import type { Page, PageRequest } from '../ports/page.js';
import type { PaymentProcessor, PaymentResult } from '../ports/processor.js';
import type { LoanPayment, LoanPaymentHistoryRow, LoanPaymentStatus } from '../loan-payments.js';
import { formatInstant } from '../time.js';
import { withinDailyDebitLimit, type PersonDebitCap } from '../person-debits.js';
import { loanPaymentTransitions, type LoanPaymentEvent } from '../transitions.js';

export interface LoanPaymentDeps extends LoanInstrumentDeps {
  readonly payments: PaymentsStore;
  readonly processor: PaymentProcessor;
  readonly clock: Clock;
  /** The daily cap on debits people start (DESIGN 15); absent, no cap. */
  readonly personDebits?: PersonDebitCap;
}

export interface LoanPaymentRequest {
  readonly user_id: string;
  readonly loan_id: string;
  /** Deterministic per (user, loan, Idempotency-Key). */
  readonly payment_id: string;
  readonly amount_cents: number;
  readonly payment_method: LoanPayment['loc_payment_method'];
  readonly account_last_four?: string | undefined;
  readonly intended_installment_id?: string | undefined;
  /** The JWT `sub`: the audit rows' actor. */
  readonly actor?: string | undefined;
  readonly signal?: AbortSignal;
}

export interface LoanPaymentResult {
  readonly payment: LoanPayment;
  /** False when the Idempotency-Key had already made this payment. */
  readonly created: boolean;
}

/** The same Idempotency-Key was sent with a different payment (amount, method, account or installment). */
export class IdempotencyKeyReusedError extends DomainError {
  override readonly name = 'IdempotencyKeyReusedError';
  readonly code = 'idempotency_key_reused';
}

export const LOAN_PAYMENT_REASONS = {
  created: 'Payment requested by the user.',
  submitted: 'ACH debit submitted; awaiting settlement.',
  collected: 'Payment collected.',
} as const;

/**
 * Creates the payment PENDING, then submits it. The payment id comes from the Idempotency-Key, so a
 * repeat finds the payment it made; an ACH debit of a held account is refused (409) before any write.
 */
export async function makeLoanPayment(deps: LoanPaymentDeps, request: LoanPaymentRequest): Promise<LoanPaymentResult> {
  // The user's instruments item comes with the payment (its Idempotency-Key) in one read.
  const read = await deps.payments.getForAttempt(request.user_id, request.loan_id, request.payment_id);
  if (read.payment) return repeat(deps, { ...read, payment: read.payment }, request);

  const instrument = await refuseHeld(
    deps,
    { loc_user_id: request.user_id, loc_loan_id: request.loan_id, loc_payment_id: request.payment_id, loc_payment_method: request.payment_method, loc_account_last_four: request.account_last_four },
    read.instruments,
    request.signal,
  );
  const audit = auditOf(request);

  const now = formatInstant(deps.clock.now());
  const pending: LoanPayment = {
    loc_user_id: request.user_id,
    loc_loan_id: request.loan_id,
    loc_payment_id: request.payment_id,
    loc_amount: request.amount_cents,
    loc_status: 'PENDING',
    loc_payment_method: request.payment_method,
    loc_process: 'MANUAL',
    loc_payment_attempts: 0,
    loc_update_reason: LOAN_PAYMENT_REASONS.created,
    loc_created_date: now,
    loc_last_updated: now,
    version: 0,
    ...(request.account_last_four !== undefined ? { loc_account_last_four: request.account_last_four } : {}),
    ...(request.intended_installment_id !== undefined ? { loc_intended_installment_id: request.intended_installment_id } : {}),
  };
  // Reserved under the daily cap (DESIGN 15) before the payment is written: a 409 writes nothing.
  return withinDailyDebitLimit(deps.personDebits, deps.clock, { userId: request.user_id, cents: request.amount_cents }, async () => {
    try {
      await deps.payments.create(pending, audit);
    } catch (error) {
      // A concurrent request with the same key won the create: answer as its repeat.
      if (!(error instanceof AlreadyExistsError)) throw error;
      const raced = await deps.payments.getForAttempt(request.user_id, request.loan_id, request.payment_id);
      if (!raced.payment) throw error;
      return repeat(deps, { ...raced, payment: raced.payment }, request);
    }
    return { payment: await submit(deps, pending, audit, instrument, request.signal), created: true };
  }, (result) => result.created && MOVED_LOAN_STATUSES.has(result.payment.loc_status));
}

/** A loan payment the processor took or handed to the bank: what the daily cap counts. */
const MOVED_LOAN_STATUSES: ReadonlySet<LoanPayment['loc_status']> = new Set(['ACHSENT', 'COMPLETED']);

/** A repeat of the same request: the payment as it is, resuming a submission a crash cut short. */
async function repeat(deps: LoanPaymentDeps, { payment: existing, instruments }: ExistingPayment, request: LoanPaymentRequest): Promise<LoanPaymentResult> {
  if (!sameRequest(existing, request)) {
    throw new IdempotencyKeyReusedError(`Idempotency-Key already used for payment ${existing.loc_payment_id} with different details`);
  }
  if (existing.loc_status === 'PENDING' && existing.loc_process === 'MANUAL') {
    // The interrupted attempt may never have reached the bank, so the hold is judged again; the key
    // is the interrupted attempt's, so this never charges twice.
    const instrument = await refuseHeld(deps, existing, instruments, request.signal);
    return { payment: await submit(deps, existing, auditOf(request), instrument, request.signal), created: false };
  }
  return { payment: existing, created: false };
}

/** A payment on a held instrument (a subscription's return holds it too) is refused (409) before any write. */
async function refuseHeld(
  deps: LoanPaymentDeps,
  payment: Pick<LoanPayment, 'loc_user_id' | 'loc_loan_id' | 'loc_payment_id' | 'loc_payment_method' | 'loc_account_last_four'>,
  instruments: LoanAttemptRead['instruments'],
  signal?: AbortSignal,
): Promise<LoanInstrumentDecision> {
  const recent = payment.loc_payment_method === 'ach' ? (await deps.payments.listByLoan(payment.loc_user_id, payment.loc_loan_id, { limit: LOAN_HOLD_LOOKBACK, cursor: null })).items : [];
  const decision = await decideLoanInstrument(deps, payment, instruments, recent, deps.clock.now(), 'customer', signal);
  const { refusal } = decision;
  if (refusal) throw new PaymentHoldError(refusal.code, refusalMessage(refusal.code), refusal);
  return decision;
}

function auditOf(request: LoanPaymentRequest): LoanPaymentAudit {
  return { actor: request.actor ?? `user:${request.user_id}` };
}

function sameRequest(existing: LoanPayment, request: LoanPaymentRequest): boolean {
  return (
    existing.loc_amount === request.amount_cents &&
    existing.loc_payment_method === request.payment_method &&
    existing.loc_account_last_four === request.account_last_four &&
    existing.loc_intended_installment_id === request.intended_installment_id
  );
}

/** The payment found under the Idempotency-Key, with the user's instruments item read beside it. */
type ExistingPayment = LoanAttemptRead & { readonly payment: LoanPayment };

/** Submits with key `{payment_id}:{attempts + 1}` and writes the outcome and its presentment in one transaction, conditional on the version read. */
async function submit(deps: LoanPaymentDeps, read: LoanPayment, audit: LoanPaymentAudit, { instrument, item }: LoanInstrumentDecision, signal?: AbortSignal): Promise<LoanPayment> {
  const result = await deps.processor.submit(loanAttemptRequest(read, instrument), signal);
  const now = deps.clock.now();
  const after = { ...afterSubmission(read, result, now), ...(instrument ? { loc_instrument_id: instrument.instrument_id } : {}) };
  const presented = loanPresentmentWrite(read, instrument, now, 'customer', { ...(result.outcome === 'declined' ? { decline_class: after.loc_decline_class, decline_code: after.loc_decline_code } : {}), item });
  await deps.payments.update(after, read.version, audit, originatesLoanAchDebit(read, after) ? achDebitTally(now) : undefined, loanDebitMovements(read, after, now), presented);
  return after;
}

/** The payment after the processor's answer to attempt `attempts + 1` (any process). */
export function afterSubmission(read: LoanPayment, result: PaymentResult, now: Date): LoanPayment {
  if (result.outcome === 'declined') return afterLoanDecline(read, result, now);
  const at = formatInstant(now);
  const event: LoanPaymentEvent = result.outcome === 'approved' ? 'COLLECTED' : 'ACH_SUBMITTED';
  const after: LoanPayment = {
    ...read,
    loc_status: loanPaymentTransitions.apply(read.loc_status, event),
    loc_payment_attempts: read.loc_payment_attempts + 1,
    loc_confirmation_id: result.confirmation_id,
    loc_last_updated: at,
    version: read.version + 1,
  };
  delete after.loc_next_attempt_at;
  if (result.outcome === 'approved') {
    after.loc_update_reason = LOAN_PAYMENT_REASONS.collected;
    if (read.loc_intended_installment_id !== undefined) {
      after.loc_applications = [
        { payment_id: read.loc_payment_id, installment_id: read.loc_intended_installment_id, amount: read.loc_amount, payment_date: at },
      ];
    }
  } else {
    after.loc_update_reason = LOAN_PAYMENT_REASONS.submitted;
  }
  return after;
}

export async function getLoanPayment(deps: Pick<LoanPaymentDeps, 'payments'>, userId: string, loanId: string, paymentId: string): Promise<LoanPayment> {
  const payment = await deps.payments.get(userId, loanId, paymentId);
  if (!payment) throw new NotFoundError(`payment ${paymentId} of loan ${loanId} not found`);
  return payment;
}

export async function listLoanPayments(
  deps: Pick<LoanPaymentDeps, 'payments'>,
  userId: string,
  loanId: string,
  options: PageRequest & { readonly status?: LoanPaymentStatus | undefined },
): Promise<Page<LoanPayment>> {
  const page: PageRequest = { ...(options.limit !== undefined ? { limit: options.limit } : {}), cursor: options.cursor ?? null };
  return options.status === undefined
    ? deps.payments.listByLoan(userId, loanId, page)
    : deps.payments.listByLoanAndStatus(userId, loanId, options.status, page);
}

/** A payment's audit rows, newest first (404 when the payment does not exist). */
export async function listLoanPaymentHistory(
  deps: Pick<LoanPaymentDeps, 'payments'>,
  userId: string,
  loanId: string,
  paymentId: string,
  page: PageRequest,
): Promise<Page<LoanPaymentHistoryRow>> {
  await getLoanPayment(deps, userId, loanId, paymentId);
  return deps.payments.listHistory(userId, loanId, paymentId, page);
}
