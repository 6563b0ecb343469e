import { AsyncLocalStorage } from 'node:async_hooks';
import type { BillingFailureFields } from '../domain/ladder.js';
import type { BillingTransaction } from '../domain/ports/billing-ledger.js';
import type { BillingStore } from '../domain/ports/billing-store.js';
import type { PaymentsStore } from '../domain/ports/loan-payments.js';
import type { BillingRecord, HistoryRow } from '../domain/records.js';
import type { LoanPaymentStatus } from '../domain/loan-payments.js';

/** What one collections run did, counted from the writes its attempts committed. */
export interface OutcomeCounts {
  collected: number;
  submitted: number;
  declined: number;
  cancelled: number;
  inactive: number;
  pause_advanced: number;
  /** Saved failures (docs/design.md, retry ladder); `parked` counts the ones that parked the record. */
  failed_counted: number;
  parked: number;
  /** Loan payment retries, by the status the retry left: COMPLETED, ACHSENT, RETRY again, FAILED. */
  loan_collected: number;
  loan_submitted: number;
  loan_declined: number;
  loan_failed: number;
  /** Delivered and acknowledged without a write: not due, gate closed, nothing left to do. */
  no_change: number;
  /** Reported as batch item failures: the queue delivers them again after the visibility timeout. */
  retry_later: number;
}

export function emptyCounts(): OutcomeCounts {
  return {
    collected: 0,
    submitted: 0,
    declined: 0,
    cancelled: 0,
    inactive: 0,
    pause_advanced: 0,
    failed_counted: 0,
    parked: 0,
    loan_collected: 0,
    loan_submitted: 0,
    loan_declined: 0,
    loan_failed: 0,
    no_change: 0,
    retry_later: 0,
  };
}

/** The counts that acknowledge a delivered message with a write (the rest of the deliveries changed nothing). */
export const WRITTEN_OUTCOMES = [
  'collected',
  'submitted',
  'declined',
  'cancelled',
  'inactive',
  'pause_advanced',
  'failed_counted',
  'loan_collected',
  'loan_submitted',
  'loan_declined',
  'loan_failed',
] as const satisfies readonly (keyof OutcomeCounts)[];

const BY_STATUS: Partial<Record<BillingRecord['billing_status'], keyof OutcomeCounts>> = {
  COMPLETED: 'collected',
  ACHSENT: 'submitted',
  FAILED: 'declined',
  CANCELLED: 'cancelled',
  INACTIVE: 'inactive',
  SKIPPED: 'pause_advanced',
};

const BY_LOAN_STATUS: Partial<Record<LoanPaymentStatus, keyof OutcomeCounts>> = {
  COMPLETED: 'loan_collected',
  ACHSENT: 'loan_submitted',
  RETRY: 'loan_declined',
  FAILED: 'loan_failed',
};

/**
 * A BillingStore decorator that counts, per collections run, the outcomes its attempts wrote.
 * It reads only the port's contract (after-images and saved failures), so it does not depend on
 * how the batch-worker logs; writes outside a run (API, webhooks) are not counted. `wrapPayments`
 * does the same for the loan payment retries a run sends.
 */
export class OutcomeTally {
  private readonly current = new AsyncLocalStorage<OutcomeCounts>();

  /** Runs `fn` with its committed writes counted into `counts`. */
  run<T>(counts: OutcomeCounts, fn: () => Promise<T>): Promise<T> {
    return this.current.run(counts, fn);
  }

  wrap(store: BillingStore): BillingStore {
    const tally = this.current;
    return new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'commit') {
          return async (tx: BillingTransaction) => {
            const result = await target.commit(tx);
            const counts = tally.getStore();
            if (counts) {
              for (const write of tx.writes) {
                if (write.kind !== 'update') continue;
                const key = BY_STATUS[write.record.billing_status];
                if (key) counts[key] += 1;
              }
            }
            return result;
          };
        }
        if (property === 'recordBillingFailure') {
          return async (read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow) => {
            const landed = await target.recordBillingFailure(read, after, history);
            const counts = tally.getStore();
            if (landed && counts) {
              counts.failed_counted += 1;
              if (after.billing_next_attempt_at === undefined) counts.parked += 1;
            }
            return landed;
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  wrapPayments(store: PaymentsStore): PaymentsStore {
    const tally = this.current;
    return new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'update') {
          // Every argument passes through: the movement rows ride in the payment's transaction (DESIGN 14).
          return async (...args: Parameters<PaymentsStore['update']>) => {
            const [payment] = args;
            await target.update(...args);
            const counts = tally.getStore();
            const key = BY_LOAN_STATUS[payment.loc_status];
            if (counts && key) counts[key] += 1;
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
