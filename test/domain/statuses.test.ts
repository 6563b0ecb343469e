import { describe, expect, it } from 'vitest';
import { BILLING_STATUSES, type BillingStatus } from '../../src/domain/records.js';
import { LOAN_PAYMENT_STATUSES } from '../../src/domain/loan-payments.js';
import {
  COLLECTIBLE_STATUSES,
  displayStatus,
  LOAN_LOST_SUBMISSION_STATUSES,
  MAY_BE_OPEN_STATUSES,
  MAY_RECORD_SUBMISSION_STATUSES,
  OPEN_CHAIN_STATUSES,
  OWED_OR_PAID_STATUSES,
  REACTIVATABLE_STATUSES,
  TERMINAL_STATUSES,
  UNBOOKABLE_STATUSES,
} from '../../src/domain/statuses.js';
import { billingTransitions, loanPaymentTransitions } from '../../src/domain/transitions.js';
import { DAY } from '../support/time.js';

const BILLING_DATE = '2026-03-01T00:00:00.000000000Z';
const billingMs = Date.parse('2026-03-01T00:00:00.000Z');

describe('the status sets, read off the transition tables', () => {
  const sorted = <S extends string>(set: ReadonlySet<S>) => [...set].sort();
  const exits = (status: BillingStatus) => billingTransitions.exitsOf(status);

  it('are the sets the rules were written against', () => {
    expect(sorted(COLLECTIBLE_STATUSES)).toEqual(['FAILED', 'PENDING']);
    expect(sorted(TERMINAL_STATUSES)).toEqual(['CANCELLED', 'COMPLETED', 'REFUNDED', 'SKIPPED', 'WAIVED']);
    expect(sorted(OPEN_CHAIN_STATUSES)).toEqual(['ACHSENT', 'FAILED', 'INACTIVE', 'PAUSED', 'PENDING']);
    expect(sorted(MAY_BE_OPEN_STATUSES)).toEqual(['ACHSENT', 'COMPLETED', 'FAILED', 'INACTIVE', 'PAUSED', 'PENDING']);
    expect(sorted(UNBOOKABLE_STATUSES)).toEqual(['CANCELLED', 'SKIPPED', 'WAIVED']);
    expect(sorted(OWED_OR_PAID_STATUSES)).toEqual(['ACHSENT', 'COMPLETED', 'FAILED', 'PENDING']);
    expect(sorted(REACTIVATABLE_STATUSES)).toEqual(['INACTIVE']);
    expect(sorted(MAY_RECORD_SUBMISSION_STATUSES)).toEqual(['FAILED', 'INACTIVE', 'PENDING']);
    expect(sorted(LOAN_LOST_SUBMISSION_STATUSES)).toEqual(['FAILED', 'PENDING']);
  });

  it('collectible: exactly the statuses every attempt outcome (collected, submitted, declined) may leave', () => {
    for (const status of BILLING_STATUSES) {
      for (const event of ['COLLECTED', 'ACH_SUBMITTED', 'DECLINED'] as const) {
        expect(billingTransitions.allows(status, event), `${status} ${event}`).toBe(COLLECTIBLE_STATUSES.has(status));
      }
    }
  });

  it('terminal: no event leads from a closed period to a collectible one but a reversal of money taken', () => {
    for (const status of TERMINAL_STATUSES) {
      for (const event of exits(status)) {
        const to = billingTransitions.apply(status, event);
        if (COLLECTIBLE_STATUSES.has(to)) expect(['ACH_RETURNED', 'CHARGED_BACK'], `${status} ${event}`).toContain(event);
      }
    }
    for (const status of OPEN_CHAIN_STATUSES) expect(TERMINAL_STATUSES.has(status)).toBe(false);
    expect(OPEN_CHAIN_STATUSES.size + TERMINAL_STATUSES.size).toBe(BILLING_STATUSES.length);
  });

  it('written off: a closed period whose only way out is an exception raised in place', () => {
    for (const status of UNBOOKABLE_STATUSES) {
      expect(TERMINAL_STATUSES.has(status)).toBe(true);
      expect(exits(status)).toEqual(['EXCEPTION_RAISED']);
      expect(billingTransitions.apply(status, 'EXCEPTION_RAISED')).toBe(status);
    }
  });

  it('a lost loan submission is recorded by the outcome exactly where the table allows it', () => {
    for (const status of LOAN_PAYMENT_STATUSES) {
      expect(loanPaymentTransitions.allows(status, 'SUBMISSION_RECORDED')).toBe(LOAN_LOST_SUBMISSION_STATUSES.has(status));
    }
  });

  it('sourcesOf and exitsOf read the table both ways', () => {
    for (const event of billingTransitions.events()) {
      for (const status of BILLING_STATUSES) {
        expect(billingTransitions.sourcesOf(event).includes(status)).toBe(billingTransitions.allows(status, event));
        expect(billingTransitions.exitsOf(status).includes(event)).toBe(billingTransitions.allows(status, event));
      }
    }
    expect(billingTransitions.sourcesOf('constructor' as never)).toEqual([]);
  });
});

describe('displayStatus', () => {
  const at = (status: BillingStatus, nowMs: number) =>
    displayStatus({ billing_status: status, billing_date: BILLING_DATE }, new Date(nowMs));

  it.each(['PENDING', 'FAILED'] as const)('shows %s as PASTDUE more than 30 days past billing_date', (status) => {
    expect(at(status, billingMs + 30 * DAY + 1)).toBe('PASTDUE');
    expect(at(status, billingMs + 90 * DAY)).toBe('PASTDUE');
  });

  it.each(['PENDING', 'FAILED'] as const)('keeps %s at exactly 30 days and before', (status) => {
    expect(at(status, billingMs + 30 * DAY)).toBe(status);
    expect(at(status, billingMs + 29 * DAY)).toBe(status);
    expect(at(status, billingMs - DAY)).toBe(status);
  });

  it.each(BILLING_STATUSES.filter((s) => s !== 'PENDING' && s !== 'FAILED'))('never shows %s as PASTDUE', (status) => {
    expect(at(status, billingMs + 365 * DAY)).toBe(status);
  });

  it('reads a billing_date with an offset as its instant', () => {
    const record = { billing_status: 'PENDING' as const, billing_date: '2026-03-01T02:00:00+02:00' };
    expect(displayStatus(record, new Date(billingMs + 30 * DAY + 1))).toBe('PASTDUE');
  });
});
