import type { DecidedBy } from '../instruments/holds.js';
import type { InstrumentsItem, InstrumentWrite } from '../instruments/instrument.js';
import type { AchRateCounts, AchRateTally } from '../ach-return-rates.js';
import type { MoneyMovement } from '../money-movements.js';
import type { LoanPayment, LoanPaymentHistoryRow, LoanPaymentStatus } from '../loan-payments.js';
import type { Page, PageRequest } from './page.js';

/** Who changed a loan payment and why: the audit row's `actor` and `reason` (DESIGN 2.7). */
export interface LoanPaymentAudit {
  /** The JWT `sub` of the caller, or `system:<function>` for automatic changes. */
  readonly actor: string;
  readonly reason?: string | undefined;
  /** The named rule of a refusal or stop (DESIGN 3.2). */
  readonly decided_by?: DecidedBy | undefined;
}

/** A RETRY payment the planner found due: its key only (the attempt reads the item itself). */
export interface DueLoanPaymentRetry {
  readonly user_id: string;
  readonly loan_id: string;
  readonly payment_id: string;
  readonly next_attempt_at: string;
}

/** What a loan attempt reads in one consistent request: the payment and the user's instruments (DESIGN 3.2). */
export interface LoanAttemptRead {
  readonly payment: LoanPayment | undefined;
  readonly instruments: InstrumentsItem;
}

export interface PaymentsStore {
  get(userId: string, loanId: string, paymentId: string): Promise<LoanPayment | undefined>;
  /** The payment and the user's instruments item in one consistent TransactGetItems (retried on a conflict). */
  getForAttempt(userId: string, loanId: string, paymentId: string): Promise<LoanAttemptRead>;
  /** Newest first (`loc_created_date`, then payment id). */
  listByLoan(userId: string, loanId: string, page?: PageRequest): Promise<Page<LoanPayment>>;
  listByLoanAndStatus(userId: string, loanId: string, status: LoanPaymentStatus, page?: PageRequest): Promise<Page<LoanPayment>>;
  /** Across all users and every GSI2 shard. */
  listByStatus(status: LoanPaymentStatus, page?: PageRequest): Promise<Page<LoanPayment>>;
  /** RETRY payments due at or before the bound, oldest first, read page by page: nothing later is read. */
  streamDueRetries(dueAtOrBefore: string, options?: { readonly pageSize?: number }): AsyncIterable<readonly DueLoanPaymentRetry[]>;
  findByConfirmationId(userId: string, confirmationId: string): Promise<LoanPayment | undefined>;
  /** The payment's audit rows, newest first. */
  listHistory(userId: string, loanId: string, paymentId: string, page?: PageRequest): Promise<Page<LoanPaymentHistoryRow>>;
  /** Put with attribute_not_exists and its audit row, in one transaction; AlreadyExistsError when the payment id is taken. */
  create(payment: LoanPayment, audit: LoanPaymentAudit): Promise<void>;
  /**
   * Full put conditioned on `expectedVersion`, with its audit row, any ACH tally, the money it moved
   * (DESIGN 14) and the presentment on the user's instruments item (DESIGN 3.2), in one transaction.
   */
  update(
    payment: LoanPayment,
    expectedVersion: number,
    audit: LoanPaymentAudit,
    achRates?: AchRateTally,
    movements?: readonly MoneyMovement[],
    instruments?: InstrumentWrite,
  ): Promise<void>;
  /** The loan payments' ACH return-rate counters summed over the UTC days `fromDay`..`toDay` (both included). */
  achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts>;
}
