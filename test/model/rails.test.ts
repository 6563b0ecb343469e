import { describe, expect, it } from 'vitest';
import type { LoggedPresentment } from '../../src/adapters/processor/presentment-log.js';
import { ManualClock } from '../support/fakes.js';
import { PaymentSimulator } from '../../src/adapters/processor/simulator.js';
import { DAY, HOUR } from '../support/time.js';
import { ceilingViolations, holdViolations, nachaViolations, type RailFacts } from './rails.js';

/**
 * The model's judge of the rails (test/model/rails.ts) on logs written by hand, and the simulator's
 * log it reads: each rule fires on the presentment that breaks it and on nothing else.
 */

const T0 = Date.parse('2026-12-01T12:00:00.000Z');
const ACH = 'ach:acct_1:auth_1';
const sub = (id: string) => ({ kind: 'subscription' as const, user_id: 'u', billing_date: '2026-12-01T12:00:00.000Z', subscription_id: id });
const loan = (id: string) => ({ kind: 'loan_payment' as const, user_id: 'u', loan_id: 'loan-1', payment_id: id });

function logOf(...entries: Partial<LoggedPresentment>[]): LoggedPresentment[] {
  return entries.map((e, seq) => ({
    seq,
    at: T0 + seq * HOUR,
    idempotency_key: `k${seq}`,
    user_id: 'u',
    rail: 'ach',
    amount_cents: 1999,
    reference: sub('s1'),
    instrument_id: ACH,
    reinitiated: false,
    resend: false,
    answer: { kind: 'submitted', confirmation_id: `c${seq}` },
    ...e,
  })) as LoggedPresentment[];
}

const facts = (over: Partial<RailFacts> = {}): RailFacts => ({ returnsAccepted: new Map(), unconfirmed: new Set(), disputes: [], handedAt: new Map(), ...over });

describe('R1: no presentment to an instrument after a hold on it committed', () => {
  it('an R10 on a subscription debit holds the authorization for the loan payment presented after it', () => {
    const log = logOf({ bank: { type: 'returned', return_code: 'R10', at: T0 } }, { reference: loan('p1') });
    expect(holdViolations(log, facts({ returnsAccepted: new Map([['c0', 1]]) }))).toEqual([expect.stringMatching(/#1 k1 \(loan payment p1\).*held \(unauthorized\) since R10 return of k0/)]);
  });

  it('a debit presented before the return was accepted is no violation, nor one under a newer authorization', () => {
    const log = logOf({ bank: { type: 'returned', return_code: 'R10', at: T0 } }, {}, { instrument_id: 'ach:acct_1:auth_2' });
    expect(holdViolations(log, facts({ returnsAccepted: new Map([['c0', 2]]) }))).toEqual([]);
  });

  it('an account error holds every authorization on the account, not another account', () => {
    const log = logOf({ bank: { type: 'returned', return_code: 'R02', at: T0 } }, { instrument_id: 'ach:acct_1:auth_9' }, { instrument_id: 'ach:acct_2:auth_9' });
    expect(holdViolations(log, facts({ returnsAccepted: new Map([['c0', 1]]) }))).toEqual([expect.stringMatching(/#1 .*held \(account\)/)]);
  });

  it('a do_not_try_again decline holds the card for every later period and loan, the same-key repair aside', () => {
    const card = { rail: 'pinless' as const, instrument_id: 'pinless:fp1', brand: 'visa' };
    const log = logOf(
      { ...card, answer: { kind: 'declined', decline_code: 'lost_card', advice_code: 'do_not_try_again' } },
      { ...card, idempotency_key: 'k0', resend: true, answer: { kind: 'declined', decline_code: 'lost_card', advice_code: 'do_not_try_again' } },
      { ...card, idempotency_key: 'late', reference: loan('p1'), answer: { kind: 'approved', confirmation_id: 'c2' } },
      { ...card, reference: sub('s2'), answer: { kind: 'approved', confirmation_id: 'c3' } },
    );
    // `late` was handed to the processor before the decline (its request was lost): its resend is the repair.
    expect(holdViolations(log, facts({ handedAt: new Map([['late', 0]]) }))).toEqual([expect.stringMatching(/#3 k3 .*held \(card_never\) since lost_card decline of k0/)]);
  });

  it('an ACH debit refused with a card decline code holds no card and no account', () => {
    const log = logOf({ answer: { kind: 'declined', decline_code: 'stolen_card', advice_code: 'do_not_try_again' } }, {});
    expect(holdViolations(log, facts())).toEqual([]);
  });

  it('a decline whose process died before it recorded holds from its first clean resend on', () => {
    const card = { rail: 'card' as const, instrument_id: 'card:fp1', answer: { kind: 'declined' as const, decline_code: 'stolen_card', advice_code: 'do_not_try_again' } };
    const log = logOf(card, { ...card, idempotency_key: 'x', answer: { kind: 'approved', confirmation_id: 'c1' } }, { ...card, idempotency_key: 'k0', resend: true }, { ...card, idempotency_key: 'y' });
    expect(holdViolations(log, facts({ unconfirmed: new Set([0]) }))).toEqual([expect.stringMatching(/#3 y /)]);
  });

  it('a dispute holds the card until it is won', () => {
    const card = { rail: 'card' as const, instrument_id: 'card:fp1', answer: { kind: 'approved' as const, confirmation_id: 'pi_1' } };
    const log = logOf(card, { ...card, answer: { kind: 'approved', confirmation_id: 'pi_2' } }, { ...card, answer: { kind: 'approved', confirmation_id: 'pi_3' } });
    expect(holdViolations(log, facts({ disputes: [{ confirmation_id: 'pi_1', from: 1, until: 2 }] }))).toEqual([expect.stringMatching(/#1 .*held \(card_dispute\)/)]);
  });
});

describe('R2: an R01/R09 entry is re-presented at most twice within 180 days, each flagged RETRY PYMT', () => {
  const returned = (code = 'R01') => ({ bank: { type: 'returned' as const, return_code: code, at: T0 } });
  const flagged = { reinitiated: true, entry_description: 'RETRY PYMT' };
  const accepted = (n: number) => facts({ returnsAccepted: new Map(Array.from({ length: n }, (_, i) => [`c${i}`, i + 1])) });

  it('flags an unflagged re-presentment, a third one, and a flag on an original entry', () => {
    const log = logOf(returned(), { ...returned('R09') }, { ...flagged, ...returned() }, flagged, { reference: sub('s2'), ...flagged });
    const problems = nachaViolations(log, accepted(4));
    expect(problems).toEqual([
      expect.stringMatching(/#1 .*re-presentment 1 .* not flagged RETRY PYMT/),
      expect.stringMatching(/#3 .*re-presentment 3 of the entry \(at most 2\)/),
      expect.stringMatching(/#4 .*flagged a re-presentment but no R01\/R09 return/),
    ]);
  });

  it('counts the entry across a loan payment`s attempts, and past 180 days is too late', () => {
    const log = logOf({ reference: loan('p1'), ...returned() }, { reference: loan('p1'), ...flagged, at: T0 + 181 * DAY });
    expect(nachaViolations(log, accepted(1))).toEqual([expect.stringMatching(/more than 180 days after the original entry/)]);
  });
});

describe('R3: network ceilings per card, merchant- and customer-initiated apart', () => {
  const declined = { rail: 'card' as const, instrument_id: 'card:fp1', brand: 'mastercard', answer: { kind: 'declined' as const, decline_code: 'insufficient_funds' } };

  it('Mastercard: the 11th reattempt within 24 hours after a decline', () => {
    const log = logOf(...Array.from({ length: 12 }, () => declined)).map((p, i) => ({ ...p, at: T0 + i * 60_000 }));
    expect(ceilingViolations(log, facts())).toEqual([expect.stringMatching(/#11 .*reattempt 11 .*mastercard.ceiling_24h/)]);
    const approvedBetween = log.map((p) => (p.seq === 5 ? { ...p, answer: { kind: 'approved' as const, confirmation_id: 'c5' } } : p));
    expect(ceilingViolations(approvedBetween, facts())).toEqual([]);
  });

  it('counts customer-initiated attempts apart from merchant-initiated ones', () => {
    const log = logOf(...Array.from({ length: 12 }, () => declined)).map((p, i) => ({ ...p, at: T0 + i * 60_000 }));
    const initiatedBy = new Map(log.map((p) => [p.seq, p.seq % 2 === 0 ? ('merchant' as const) : ('customer' as const)]));
    expect(ceilingViolations(log, facts({ initiatedBy }))).toEqual([]);
  });
});

describe('the simulator keeps the processor`s log of presentments', () => {
  it('logs each request with its instrument, brand, answer, resend and the bank`s later return', async () => {
    const clock = new ManualClock('2026-12-01T12:00:00.000Z');
    const sim = new PaymentSimulator(clock);
    sim.configure({ users: { u1: 'ach_return:R10', u2: 'decline:lost_card' } });
    const ach = { idempotency_key: 's1:1', user_id: 'u1', amount_cents: 1999, rail: 'ach' as const, reference: sub('s1'), instrument_id: ACH };
    await sim.submit(ach);
    await sim.submit(ach);
    await sim.submit({ ...ach, idempotency_key: 's1:2', reinitiated: true, entry_description: 'RETRY PYMT' });
    await sim.submit({ idempotency_key: 'c:1', user_id: 'u2', amount_cents: 500, rail: 'card', reference: sub('s2') });
    sim.takeDueAchOutcomes(clock.now().getTime());
    const log = sim.presentments();
    expect(log.map((p) => [p.idempotency_key, p.resend, p.reinitiated, p.answer.kind, p.bank?.return_code])).toEqual([
      ['s1:1', false, false, 'submitted', 'R10'],
      ['s1:1', true, false, 'submitted', undefined],
      ['s1:2', false, true, 'submitted', 'R10'],
      ['c:1', false, false, 'declined', undefined],
    ]);
    expect(log[3]).toMatchObject({ rail: 'card', instrument_id: expect.stringMatching(/^card:fpc_/), brand: 'visa', answer: { decline_code: 'lost_card', advice_code: 'do_not_try_again' } });
  });
});
