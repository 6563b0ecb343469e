import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyDecline } from '../../src/domain/declines.js';
import {
  DUNNING_RETRY_DAYS,
  MAX_DUNNING_ATTEMPTS,
  NETWORK_CEILINGS,
  dunningAfterDecline,
  DUNNING_LATE_RUN_GRACE_MS,
  DUNNING_WINDOW_MS,
  dunningGate,
  dunningLapsed,
  dunningLapsesAt,
  dunningState,
  dunningView,
  nextAutomaticAttemptAt,
  resetDunning,
} from '../../src/domain/dunning.js';
import { PROCESSES, type BillingRecord, type CardNetwork, type Process } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { dueGate } from '../../src/domain/due-work.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { DAY, HOUR } from '../support/time.js';

const T0 = Date.parse('2026-12-01T12:00:00.000Z');

/** The processes of automatic runs: all but the customer's, the operator's, and UNKNOWN (no path). */
const AUTOMATIC_PROCESSES = PROCESSES.filter((process) => process !== 'MANUAL' && process !== 'OPERATOR_RETRY' && process !== 'UNKNOWN');

/** A FAILED card period as the attempt leaves it after a decline at `at`. */
function declined(record: BillingRecord, code: string, at: number, process: Process = 'SCHEDULED', network?: CardNetwork): BillingRecord {
  const fields = dunningAfterDecline(record, { classification: classifyDecline({ decline_code: code }), card_network: network, process, presented: true }, new Date(at));
  const after: BillingRecord = { ...record, ...fields, billing_status: 'FAILED', last_attempt_date: formatInstant(new Date(at)), payment_attempts: record.payment_attempts + 1 };
  for (const [k, v] of Object.entries(after)) if (v === undefined) delete (after as Record<string, unknown>)[k];
  return after;
}

const cardPeriod = () => makeRecord({ payment_method: 'card', billing_date: formatInstant(new Date(T0 - HOUR)) });

describe('the retry schedule', () => {
  it('retries a retry_later decline at 1, 2, 3, 5, 7, 10 and 14 days after the first decline, then is exhausted', () => {
    let record = declined(cardPeriod(), 'insufficient_funds', T0);
    const attempts: number[] = [T0];
    while (record.dunning_next_attempt_at !== undefined) {
      const at = Date.parse(record.dunning_next_attempt_at);
      expect(dunningGate(record, new Date(at - 1), 'RETRY')).toBe('not_yet_due');
      expect(dunningGate(record, new Date(at), 'RETRY')).toBeUndefined();
      attempts.push(at);
      record = declined(record, 'insufficient_funds', at);
    }
    expect(attempts.map((t) => (t - T0) / DAY)).toEqual([0, ...DUNNING_RETRY_DAYS]);
    expect(attempts).toHaveLength(MAX_DUNNING_ATTEMPTS);
    expect(dunningView(record)).toEqual({ state: 'exhausted', attempts: 8, next_attempt_at: null, decline_code: 'insufficient_funds', decline_class: 'retry_later' });
    expect(dunningGate(record, new Date(T0 + 60 * DAY), 'RETRY')).toBe('exhausted');
    expect(nextAutomaticAttemptAt(record)).toBeUndefined();
  });

  it('a late attempt takes the next slot still ahead, never an extra one', () => {
    const first = declined(cardPeriod(), 'generic_decline', T0);
    const late = declined(first, 'generic_decline', T0 + 4 * DAY);
    expect(late.dunning_attempts).toBe(2);
    expect(late.dunning_next_attempt_at).toBe(formatInstant(new Date(T0 + 5 * DAY)));
  });

  it.each(['lost_card', 'expired_card', 'authentication_required'])('%s ends automatic attempts at once', (code) => {
    const record = declined(cardPeriod(), code, T0);
    expect(dunningView(record)?.state).toBe('exhausted');
    for (const process of AUTOMATIC_PROCESSES) expect(dunningGate(record, new Date(T0 + 30 * DAY), process)).toBe('exhausted');
  });

  it('a manual pay is refused for do_not_retry only, and a declined manual pay spends no slot', () => {
    const lost = declined(cardPeriod(), 'lost_card', T0);
    expect(dueGate(lost, new Date(T0), 'MANUAL')).toBe('payment_method_required');
    expect(dueGate(lost, new Date(T0), 'OPERATOR_RETRY')).toBe('payment_method_required');
    const expired = declined(cardPeriod(), 'expired_card', T0);
    expect(dueGate(expired, new Date(T0), 'MANUAL')).toBeUndefined();
    const first = declined(cardPeriod(), 'insufficient_funds', T0);
    const manual = declined(first, 'insufficient_funds', T0 + HOUR, 'MANUAL');
    expect(manual.dunning_attempts).toBe(1);
    expect(manual.dunning_next_attempt_at).toBe(first.dunning_next_attempt_at);
    expect(manual.dunning_presented_at).toEqual(first.dunning_presented_at);
  });

  it('an operator reset starts a new cycle and keeps the card presentments the networks count', () => {
    const exhausted = declined(cardPeriod(), 'expired_card', T0);
    const reset = { ...exhausted, ...resetDunning(exhausted) };
    expect(dunningView(reset)).toBeUndefined();
    expect(reset.dunning_presented_at).toEqual(exhausted.dunning_presented_at);
    const again = declined(reset, 'insufficient_funds', T0 + DAY, 'OPERATOR_RETRY');
    expect(again.dunning_first_declined_at).toBe(formatInstant(new Date(T0 + DAY)));
    expect(again.dunning_presented_at).toHaveLength(2);
  });

  it('a FAILED period outside dunning (a closed gate, an ACH return) waits 24 h after its last attempt on every automatic path', () => {
    const record = makeRecord({ billing_status: 'FAILED', billing_date: formatInstant(new Date(T0 - DAY)), payment_attempts: 1, last_attempt_date: formatInstant(new Date(T0)) });
    expect(dunningGate(record, new Date(T0 + HOUR), 'BALANCE_WEBHOOK')).toBe('not_yet_due');
    expect(dunningGate(record, new Date(T0 + DAY), 'BALANCE_WEBHOOK')).toBeUndefined();
  });
});

describe('the 14-day window', () => {
  const lateRecord = () => declined(declined(cardPeriod(), 'insufficient_funds', T0), 'insufficient_funds', T0 + 10 * DAY);

  it('reads show a cycle whose window is over as exhausted, with no next attempt, before any run records it', () => {
    const record = lateRecord();
    expect(record.dunning_next_attempt_at).toBe(formatInstant(new Date(T0 + 14 * DAY)));
    expect(dunningView(record, new Date(T0 + 14 * DAY))).toMatchObject({ state: 'retrying', next_attempt_at: formatInstant(new Date(T0 + 14 * DAY)) });
    expect(dunningView(record, new Date(T0 + 14 * DAY + DUNNING_LATE_RUN_GRACE_MS))).toMatchObject({ state: 'retrying' });
    expect(dunningView(record, new Date(T0 + DUNNING_WINDOW_MS + 1))).toEqual({
      state: 'exhausted',
      attempts: 2,
      next_attempt_at: null,
      decline_code: 'insufficient_funds',
      decline_class: 'retry_later',
    });
    // As written (an audit row, the index partition): retrying until a run records it.
    expect(dunningState(record)).toBe('retrying');
    expect(dunningState(record, new Date(T0 + 15 * DAY))).toBe('exhausted');
    expect(dunningLapsed(record, new Date(T0 + 14 * DAY))).toBe(false);
    expect(dunningLapsed(record, new Date(T0 + DUNNING_WINDOW_MS))).toBe(false);
    expect(dunningLapsed(record, new Date(T0 + DUNNING_WINDOW_MS + 1))).toBe(true);
  });

  it('every automatic path refuses it, ahead of the ladder, a hold or an exception; a person is not refused by it', () => {
    const record = lateRecord();
    const after = new Date(T0 + 20 * DAY);
    for (const process of AUTOMATIC_PROCESSES) expect(dunningGate(record, after, process)).toBe('exhausted');
    const parked = { ...record, billing_failed_for: `${record.billing_date}#${record.payment_attempts}`, billing_failure_count: 8, billing_failed_at: formatInstant(new Date(T0 + 11 * DAY)), billing_last_error: 'x' };
    expect(dueGate(parked, after, 'RETRY')).toBe('exhausted');
    expect(dueGate({ ...record, card_disputed: true }, after, 'RETRY')).toBe('exhausted');
    // The customer may still pay (only do_not_retry refuses a manual pay); retry-billing resets the cycle first.
    expect(dueGate(record, after, 'MANUAL')).toBeUndefined();
    expect(dueGate({ ...record, card_disputed: true }, after, 'MANUAL')).toBe('card_disputed');
  });

  it('a customer decline after the window spends nothing and leaves the period exhausted', () => {
    const record = lateRecord();
    const manual = declined(record, 'insufficient_funds', T0 + 16 * DAY, 'MANUAL');
    expect(manual.dunning_attempts).toBe(2);
    expect(manual.dunning_next_attempt_at).toBeUndefined();
    expect(dunningView(manual, new Date(T0 + 16 * DAY))?.state).toBe('exhausted');
  });

  it('the window is the last retry day (14) plus the late-run grace of an hour', () => {
    expect(DUNNING_WINDOW_MS).toBe(DUNNING_RETRY_DAYS.at(-1)! * DAY + DUNNING_LATE_RUN_GRACE_MS);
    expect(DUNNING_LATE_RUN_GRACE_MS).toBe(HOUR);
    expect(dunningLapsesAt(lateRecord())).toBe(T0 + 14 * DAY + HOUR + 1);
    expect(dunningLapsesAt(declined(cardPeriod(), 'lost_card', T0))).toBeUndefined();
  });
});

describe('the network ceilings', () => {
  it.each([
    ['mastercard', 10, DAY],
    ['visa', 20, 30 * DAY],
    [undefined, 10, DAY],
  ] as const)('%s: operator retries stop at %i presentments in the window, and resume as it slides', (network, max, windowMs) => {
    let record = declined(cardPeriod(), 'insufficient_funds', T0, 'SCHEDULED', network);
    let now = T0;
    let presented = 1;
    const gap = Math.floor(windowMs / (max * 4));
    for (let i = 0; i < max * 2; i++) {
      now += gap;
      const reset = { ...record, ...resetDunning(record) };
      if (dunningGate(reset, new Date(now), 'OPERATOR_RETRY') === 'network_ceiling') break;
      record = declined(reset, 'insufficient_funds', now, 'OPERATOR_RETRY', network);
      presented += 1;
    }
    expect(presented).toBe(max);
    const reset = { ...record, ...resetDunning(record) };
    expect(dunningGate(reset, new Date(T0 + windowMs), 'OPERATOR_RETRY')).toBeUndefined();
    // A customer's own payment is not a merchant reattempt: the ceiling does not bind it.
    expect(dunningGate(record, new Date(now), 'MANUAL')).toBeUndefined();
  });
});

/* ---------------- the property: no path and no clock move beats a ceiling or a do_not_retry ---------------- */

/** Every path that may present a payment: the automatic ones, the operator's retry, the customer's pay. */
const PATHS = [...AUTOMATIC_PROCESSES, 'OPERATOR_RETRY', 'MANUAL'] as const;
const CODES = ['insufficient_funds', 'generic_decline', 'do_not_honor', 'try_again_later', 'lost_card', 'expired_card', 'authentication_required', 'no_such_code'];

const step = fc.oneof(
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 3 * DAY }) }),
  fc.record({ kind: fc.constant('path' as const), process: fc.constantFrom(...PATHS), code: fc.constantFrom(...CODES) }),
);

describe('the dunning policy, as a property', () => {
  it('no sequence of paths and clock moves exceeds a network ceiling, retries a do_not_retry decline, or exceeds the schedule', () => {
    fc.assert(
      fc.property(fc.constantFrom<CardNetwork | undefined>('visa', 'mastercard', undefined), fc.array(step, { maxLength: 400 }), (network, steps) => {
        let now = T0;
        let record = declined(cardPeriod(), 'insufficient_funds', now, 'SCHEDULED', network);
        const merchant: number[] = [now];
        let doNotRetry = false;
        // The cycle as the policy defines it: started by the first decline on any path, reset by an operator retry.
        let cycleStart: number | undefined = now;
        let cycleAttempts = 1;
        for (const s of steps) {
          if (s.kind === 'advance') {
            now += s.ms;
            continue;
          }
          let current = record;
          if (s.process === 'OPERATOR_RETRY') {
            // retry-billing: refused for do_not_retry, else the schedule is reset before the attempt.
            if (current.decline_class === 'do_not_retry') continue;
            current = { ...current, ...resetDunning(current) };
            record = current;
            cycleStart = undefined;
            cycleAttempts = 0;
          }
          if (dueGate(current, new Date(now), s.process) !== undefined) continue;
          // Presented: the payment goes to the bank (and declines again).
          expect(doNotRetry).toBe(false);
          if (s.process !== 'MANUAL') merchant.push(now);
          const automatic = s.process !== 'MANUAL' && s.process !== 'OPERATOR_RETRY';
          if (automatic && cycleStart !== undefined) {
            // The schedule: at most 8 attempts in a cycle (its first decline included), all within 14 days of that decline.
            cycleAttempts += 1;
            expect(cycleAttempts).toBeLessThanOrEqual(MAX_DUNNING_ATTEMPTS);
            expect(now - cycleStart).toBeLessThanOrEqual(DUNNING_WINDOW_MS);
          }
          record = declined(current, s.code, now, s.process, network);
          if (record.decline_class === 'do_not_retry') doNotRetry = true;
          if (cycleStart === undefined) {
            cycleStart = now;
            cycleAttempts = 1;
          }
          // The ceilings, over every merchant-initiated presentment of this card.
          for (const ceiling of NETWORK_CEILINGS[network ?? 'other']) {
            expect(merchant.filter((t) => t > now - ceiling.windowMs).length).toBeLessThanOrEqual(ceiling.max);
          }
        }
      }),
      // A fixed seed in npm test (a stable main, as the model test); DUNNING_SEED explores others.
      { numRuns: 300, seed: Number(process.env.DUNNING_SEED ?? 20261201) },
    );
  });

  // Found 2026-12-01 by this property with a random seed (DUNNING_SEED=268354658), a false alarm of the property itself:
  // it held a customer's manual pay to the automatic schedule. A manual pay after the window is the customer paying
  // (refused only for do_not_retry, DESIGN 5b): it is presented, spends no slot, and the period stays exhausted.
  it('a manual pay after the 14-day window is the customer paying: presented, no slot spent, still exhausted', () => {
    const record = declined(cardPeriod(), 'insufficient_funds', T0, 'SCHEDULED', 'visa');
    const late = new Date(T0 + DUNNING_WINDOW_MS + 1);
    expect(dueGate(record, late, 'MANUAL')).toBeUndefined();
    const paid = declined(record, 'insufficient_funds', late.getTime(), 'MANUAL', 'visa');
    expect(paid).toMatchObject({ dunning_attempts: 1, dunning_first_declined_at: record.dunning_first_declined_at, dunning_presented_at: record.dunning_presented_at });
    expect(dunningView(paid, late)?.state).toBe('exhausted');
    expect(dueGate(paid, late, 'RETRY')).toBe('exhausted');
  });

  // Found 2026-12-01 by this property with a random seed (DUNNING_SEED=1221020030): a run that came only after the
  // 14-day window (no run for days) still took the cycle's overdue slot, presenting outside Smart Retries' budget.
  it('a scheduled run after the 14-day window presents no retry of a cycle', () => {
    const record = declined(cardPeriod(), 'insufficient_funds', T0, 'SCHEDULED', 'visa');
    for (const process of AUTOMATIC_PROCESSES) {
      expect(dueGate(record, new Date(T0 + DUNNING_WINDOW_MS + 1), process), process).toBe('exhausted');
    }
    // Its last instant is still inside: the 14-day slot itself is a scheduled attempt.
    expect(dueGate(record, new Date(T0 + 14 * DAY), 'RETRY')).toBeUndefined();
  });

  // Found 2026-12-01 in review of the window fix: slots fall on the first decline's instant and the run that reaches one
  // comes after it (every 15 minutes), so a window ending exactly at day 14 left the day-14 slot unreachable: 7 attempts.
  it('the day-14 slot is still taken by a run that comes 15 minutes after it: 8 attempts in the cycle', () => {
    let record = declined(cardPeriod(), 'insufficient_funds', T0, 'SCHEDULED', 'visa');
    for (const day of DUNNING_RETRY_DAYS) {
      const run = new Date(T0 + day * DAY + 15 * 60_000);
      expect(dueGate(record, run, 'RETRY'), `day ${day}`).toBeUndefined();
      record = declined(record, 'insufficient_funds', run.getTime(), 'RETRY', 'visa');
    }
    expect(record.dunning_attempts).toBe(MAX_DUNNING_ATTEMPTS);
    expect(dunningView(record, new Date(T0 + 15 * DAY))?.state).toBe('exhausted');
  });
});
