import { describe, expect, it } from 'vitest';
import { IllegalTransitionError } from '../../src/domain/errors.js';
import { BILLING_STATUSES, type BillingStatus } from '../../src/domain/records.js';
import { LOAN_PAYMENT_STATUSES, type LoanPaymentStatus } from '../../src/domain/loan-payments.js';
import {
  billingTransitions,
  loanPaymentTransitions,
  type BillingEvent,
  type LoanPaymentEvent,
  type TransitionTable,
} from '../../src/domain/transitions.js';

/**
 * The expected tables, written out by hand. Every (status, event) pair not listed here must be
 * refused, so any change to the production table fails this file until it is made here too.
 */
const EXPECTED_BILLING: Record<BillingEvent, Partial<Record<BillingStatus, BillingStatus>>> = {
  COLLECTED: { PENDING: 'COMPLETED', FAILED: 'COMPLETED' },
  ACH_SUBMITTED: { PENDING: 'ACHSENT', FAILED: 'ACHSENT' },
  DECLINED: { PENDING: 'FAILED', FAILED: 'FAILED' },
  ACH_SETTLED: { ACHSENT: 'COMPLETED' },
  ACH_RETURNED: { ACHSENT: 'FAILED', COMPLETED: 'FAILED' },
  CHARGED_BACK: { ACHSENT: 'FAILED', COMPLETED: 'FAILED' },
  DISPUTE_WON: { FAILED: 'COMPLETED' },
  REFUNDED: { COMPLETED: 'REFUNDED' },
  WAIVED: { PENDING: 'WAIVED', FAILED: 'WAIVED', PAUSED: 'WAIVED' },
  CANCEL_REQUESTED: { PENDING: 'PENDING', PAUSED: 'PAUSED', INACTIVE: 'INACTIVE' },
  CANCEL_COMPLETED: { PENDING: 'CANCELLED', FAILED: 'CANCELLED', PAUSED: 'CANCELLED' },
  ACCOUNT_CLOSED: { PENDING: 'CANCELLED', FAILED: 'CANCELLED', PAUSED: 'CANCELLED', INACTIVE: 'CANCELLED' },
  PAUSED: { PENDING: 'PAUSED' },
  UNPAUSED: { PAUSED: 'PENDING' },
  PAUSE_SKIPPED: { PAUSED: 'SKIPPED' },
  USER_NOT_ACTIVE: { PENDING: 'INACTIVE', FAILED: 'INACTIVE', PAUSED: 'INACTIVE' },
  REACTIVATED: { INACTIVE: 'PENDING' },
  REACTIVATED_PAUSED: { INACTIVE: 'PAUSED' },
  REACTIVATED_FAILED: { INACTIVE: 'FAILED' },
  DUE_DATE_CHANGED: { PENDING: 'PENDING' },
  BILLING_RETRY_REQUESTED: { PENDING: 'PENDING', FAILED: 'FAILED' },
  BILLING_FAILURE_RECORDED: { PENDING: 'PENDING', FAILED: 'FAILED' },
  // A run found a dunning cycle's 14-day window over: recorded in place, nothing presented.
  DUNNING_EXHAUSTED: { FAILED: 'FAILED' },
  INSTRUMENT_HELD: { PENDING: 'PENDING', FAILED: 'FAILED' },
  HOLD_RELEASED: { PENDING: 'PENDING', FAILED: 'FAILED' },
  CEILING_REACHED: { PENDING: 'PENDING', FAILED: 'FAILED' },
  PAYMENT_REFUSED: { PENDING: 'PENDING', FAILED: 'FAILED' },
  // A written-off period that receives a payment it never recorded is flagged in place (unowed_payment).
  EXCEPTION_RAISED: { PENDING: 'PENDING', FAILED: 'FAILED', ACHSENT: 'ACHSENT', COMPLETED: 'COMPLETED', WAIVED: 'WAIVED', CANCELLED: 'CANCELLED', SKIPPED: 'SKIPPED' },
  // An operator's resolution of an exception, from the statuses money can arrive on unbooked (DESIGN 12).
  EXCEPTION_ACCEPTED: { PENDING: 'COMPLETED', FAILED: 'COMPLETED', ACHSENT: 'COMPLETED' },
  EXCEPTION_WAIVED: { PENDING: 'WAIVED', FAILED: 'WAIVED', ACHSENT: 'WAIVED' },
  EXCEPTION_REFUNDED: { PENDING: 'FAILED', FAILED: 'FAILED', ACHSENT: 'FAILED' },
};

const EXPECTED_LOAN: Record<LoanPaymentEvent, Partial<Record<LoanPaymentStatus, LoanPaymentStatus>>> = {
  ACH_SUBMITTED: { PENDING: 'ACHSENT', RETRY: 'ACHSENT' },
  SUBMISSION_RECORDED: { PENDING: 'ACHSENT', FAILED: 'ACHSENT' },
  COLLECTED: { PENDING: 'COMPLETED', RETRY: 'COMPLETED' },
  SKIPPED: { PENDING: 'SKIPPED', RETRY: 'SKIPPED' },
  ACH_SETTLED: { ACHSENT: 'COMPLETED' },
  // From RETRY too: a pinless retry declined with retries left stays in RETRY.
  RETRY_SCHEDULED: { PENDING: 'RETRY', ACHSENT: 'RETRY', RETRY: 'RETRY' },
  ACH_RETURNED: { ACHSENT: 'RETURNED', COMPLETED: 'RETURNED' },
  RETRIES_EXHAUSTED: { PENDING: 'FAILED', RETRY: 'FAILED' },
  CHARGED_BACK: { ACHSENT: 'CHARGED_BACK', COMPLETED: 'CHARGED_BACK' },
};

function allPairs<S extends string, E extends string>(statuses: readonly S[], events: readonly E[]) {
  return statuses.flatMap((from) => events.map((event) => [from, event] as const));
}

function checkTable<S extends string, E extends string>(
  name: string,
  table: TransitionTable<S, E>,
  statuses: readonly S[],
  expected: Record<E, Partial<Record<S, S>>>,
) {
  const events = Object.keys(expected) as E[];

  describe(name, () => {
    it('has exactly the events of the expected table', () => {
      expect([...table.events()].sort()).toEqual([...events].sort());
    });

    const pairs = allPairs(statuses, events);
    const allowed = pairs.filter(([from, event]) => expected[event][from] !== undefined);
    const refused = pairs.filter(([from, event]) => expected[event][from] === undefined);

    it.each(allowed)('%s --%s--> the expected status', (from, event) => {
      expect(table.apply(from, event)).toBe(expected[event][from]);
      expect(table.allows(from, event)).toBe(true);
    });

    it.each(refused)('%s --%s--> IllegalTransitionError', (from, event) => {
      expect(table.allows(from, event)).toBe(false);
      let thrown: unknown;
      try {
        table.apply(from, event);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(IllegalTransitionError);
      const illegal = thrown as IllegalTransitionError;
      expect(illegal.code).toBe('illegal_transition');
      expect(illegal.machine).toBe(table.machine);
      expect(illegal.from).toBe(from);
      expect(illegal.event).toBe(event);
    });

    it('refuses an unknown event, including names that live on Object.prototype', () => {
      for (const event of ['NOPE', 'constructor', 'toString', '__proto__', 'hasOwnProperty']) {
        expect(table.allows(statuses[0]!, event as E)).toBe(false);
        expect(() => table.apply(statuses[0]!, event as E)).toThrow(IllegalTransitionError);
      }
    });

    it('refuses an unknown from-status', () => {
      for (const event of events) expect(() => table.apply('BOGUS' as S, event)).toThrow(IllegalTransitionError);
    });
  });
}

checkTable('billingTransitions', billingTransitions, BILLING_STATUSES, EXPECTED_BILLING);
checkTable('loanPaymentTransitions', loanPaymentTransitions, LOAN_PAYMENT_STATUSES, EXPECTED_LOAN);

describe('terminal billing statuses', () => {
  it('leave COMPLETED only by refund, chargeback or a late ACH return (an exception flags it in place), and never leave WAIVED, CANCELLED, SKIPPED or REFUNDED (an unowed payment flags them in place)', () => {
    const exits = (from: BillingStatus) => billingTransitions.events().filter((event) => billingTransitions.allows(from, event));
    expect(exits('COMPLETED').sort()).toEqual(['ACH_RETURNED', 'CHARGED_BACK', 'EXCEPTION_RAISED', 'REFUNDED']);
    for (const status of ['WAIVED', 'CANCELLED', 'SKIPPED'] as const) expect(exits(status)).toEqual(['EXCEPTION_RAISED']);
    for (const status of ['WAIVED', 'CANCELLED', 'SKIPPED', 'REFUNDED'] as const) {
      expect(exits(status).every((event) => billingTransitions.apply(status, event) === status)).toBe(true);
    }
  });
});
