import { describe, expect, it } from 'vitest';
import type { AchRateTally } from '../../src/domain/ach-return-rates.js';
import type { MoneyMovement } from '../../src/domain/money-movements.js';
import type { LoanPaymentAudit, PaymentsStore } from '../../src/domain/ports/loan-payments.js';
import type { LoanPayment, LoanPaymentStatus } from '../../src/domain/loan-payments.js';
import { emptyCounts, OutcomeTally, WRITTEN_OUTCOMES } from '../../src/local/outcome-tally.js';

/** Only `update` is reached by these tests; the tally passes every other call through untouched. */
function recordingStore(): PaymentsStore & { updates: LoanPaymentStatus[] } {
  const updates: LoanPaymentStatus[] = [];
  return {
    updates,
    update: async (payment: LoanPayment) => {
      updates.push(payment.loc_status);
    },
  } as unknown as PaymentsStore & { updates: LoanPaymentStatus[] };
}

const payment = (loc_status: LoanPaymentStatus) => ({ loc_status }) as LoanPayment;
const audit: LoanPaymentAudit = { actor: 'system:collections' } as LoanPaymentAudit;

describe('local collections run outcomes: loan payment retries', () => {
  it('counts a run’s loan retries by the status they left, not as no_change', async () => {
    const tally = new OutcomeTally();
    const store = recordingStore();
    const payments = tally.wrapPayments(store);
    const counts = emptyCounts();
    await tally.run(counts, async () => {
      await payments.update(payment('COMPLETED'), 1, audit);
      await payments.update(payment('ACHSENT'), 1, audit);
      await payments.update(payment('RETRY'), 2, audit);
      await payments.update(payment('FAILED'), 3, audit);
    });
    expect(store.updates).toEqual(['COMPLETED', 'ACHSENT', 'RETRY', 'FAILED']);
    expect(counts).toMatchObject({ loan_collected: 1, loan_submitted: 1, loan_declined: 1, loan_failed: 1, collected: 0 });
    // Every loan count acknowledges a delivery, so the run's no_change leaves them out.
    for (const key of ['loan_collected', 'loan_submitted', 'loan_declined', 'loan_failed'] as const) expect(WRITTEN_OUTCOMES).toContain(key);
  });

  it('passes the ACH tally and the money-movement rows of a loan payment update through to the store (regression: npm start wrote no movement row for a loan payment)', async () => {
    const seen: unknown[][] = [];
    const store = { update: async (...args: unknown[]) => void seen.push(args) } as unknown as PaymentsStore;
    const payments = new OutcomeTally().wrapPayments(store);
    const achRates = { day: '2026-12-08', debits: 1 } as unknown as AchRateTally;
    const movements = [{ movement_id: 'mv-1', kind: 'debit' }] as unknown as MoneyMovement[];
    await payments.update(payment('ACHSENT'), 1, audit, achRates, movements);
    expect(seen).toEqual([[payment('ACHSENT'), 1, audit, achRates, movements]]);
  });

  it('counts nothing for loan writes outside a run (API, webhooks)', async () => {
    const tally = new OutcomeTally();
    const payments = tally.wrapPayments(recordingStore());
    const counts = emptyCounts();
    await payments.update(payment('COMPLETED'), 1, audit);
    expect(counts).toEqual(emptyCounts());
  });
});
