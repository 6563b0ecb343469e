import { eventActor } from '../actors.js';
import { achDebitTally, achReturnTally, addAchRateCounts, type AchRateTally } from '../ach-return-rates.js';
import { historyRowOf } from '../billing-record.js';
import { decideLoanPaymentOutcome, decideSubscriptionOutcome, type AchDecision, type AchEffect, type AchEvent, type AchIgnoreReason } from '../ach-outcomes.js';
import { everRecorded, loanEverRecorded, recordedInstrument } from '../booked.js';
import { loanDebitMovements } from '../loan-attempt.js';
import { holdClassOfReturn } from '../instruments/holds.js';
import type { InstrumentWrite } from '../instruments/instrument.js';
import { heldNoteOf, returnHoldWrite } from '../instruments/returns.js';
import type { InstrumentStore } from '../ports/instruments.js';
import type { BillingRecord } from '../records.js';
import { formatInstant } from '../time.js';
import { ConcurrentModificationError } from '../errors.js';
import type { BillingStore } from '../ports/billing-store.js';
import type { Clock } from '../ports/clock.js';
import type { PaymentsStore } from '../ports/loan-payments.js';
import type { LoanPayment } from '../loan-payments.js';
import { achMovement, loanRecordKey, subscriptionRecordKey, type KnownException } from '../money-movements.js';
import type { MoneyMovementStore } from '../ports/money-movements.js';

export interface AchOutcomePorts {
  readonly clock: Clock;
  readonly billing: BillingStore;
  readonly payments: PaymentsStore;
  readonly movements: MoneyMovementStore;
  readonly instruments: Pick<InstrumentStore, 'write'>;
}

export type AchResult =
  | { readonly kind: 'applied'; readonly effect: AchEffect; readonly status: string; readonly amount_mismatch: boolean; readonly reversed: boolean }
  | { readonly kind: 'ignored'; readonly reason: AchIgnoreReason; readonly status?: string }
  /** Answered 409 `not_yet_recorded`: the sender delivers it again (DESIGN 4.1). */
  | { readonly kind: 'not_yet_recorded'; readonly status: string };

/**
 * Settlement, return, refund or chargeback of an accepted debit, written on the version read (no lock).
 * One conflict re-reads and decides again; a second is thrown, and the sender retries.
 */
export async function applyAchEvent(ports: AchOutcomePorts, event: AchEvent): Promise<AchResult> {
  try {
    return await applyOnce(ports, event);
  } catch (error) {
    if (!(error instanceof ConcurrentModificationError)) throw error;
    return applyOnce(ports, event);
  }
}

async function applyOnce(ports: AchOutcomePorts, event: AchEvent): Promise<AchResult> {
  const ref = event.reference;
  const now = ports.clock.now();
  if (ref.kind === 'subscription') {
    const record = await ports.billing.get({ user_id: ref.user_id, billing_date: ref.billing_date });
    if (!record) return { kind: 'ignored', reason: 'not_found' };
    const decision = await resolveRecorded(ports, record.subscription_id, decideSubscriptionOutcome(record, event, now));
    if (decision.kind === 'not_yet_recorded') return { kind: 'not_yet_recorded', status: record.billing_status };
    const movement = achMovement(event, record.payment_method, subscriptionRecordKey(record), knownException(decision));
    const hold = await subscriptionReturnHold(ports, record, event, now);
    if (decision.kind === 'ignore') {
      // The hold binds the instrument whatever the period's own write does (an older entry, a written-off period).
      if (hold) await ports.instruments.write(hold);
      if (movesMoneyUnrecorded(decision.reason, event)) await ports.movements.record(movement);
      return { kind: 'ignored', reason: decision.reason, status: record.billing_status };
    }
    await ports.billing.commit({
      writes: [{ kind: 'update', read: record, record: decision.after }],
      history: [historyRowOf(decision.after, heldNoteOf(hold))],
      ...returnCounted(event, now),
      ...(hold ? { instruments: hold } : {}),
      movements: [movement],
    });
    return {
      kind: 'applied',
      effect: decision.effect,
      status: decision.after.billing_status,
      amount_mismatch: event.amount_cents !== record.amount_cents,
      reversed: decision.reversed === true,
    };
  }
  const payment = await ports.payments.get(ref.user_id, ref.loan_id, ref.payment_id);
  if (!payment) return { kind: 'ignored', reason: 'not_found' };
  const decision = await resolveLoanRecorded(ports, payment, decideLoanPaymentOutcome(payment, event, now));
  if (decision.kind === 'not_yet_recorded') return { kind: 'not_yet_recorded', status: payment.loc_status };
  // Written first and on its own: the payment's write may be a no-op, the hold still binds the instrument.
  const hold = event.type === 'returned' ? returnHoldWrite(ref.user_id, payment.loc_instrument_id, returnOf(event, `loan_payment:${payment.loc_payment_id}`), formatInstant(now)) : undefined;
  if (hold) await ports.instruments.write(hold);
  const movement = achMovement(event, payment.loc_payment_method, loanRecordKey(payment));
  if (decision.kind === 'ignore') {
    if (movesMoneyUnrecorded(decision.reason, event)) await ports.movements.record(movement);
    return { kind: 'ignored', reason: decision.reason, status: payment.loc_status };
  }
  // An outcome that records a lost submission as well (decideLoanPaymentOutcome) presents that debit too.
  const recordsSubmission = decision.after.loc_payment_attempts > payment.loc_payment_attempts;
  const reason = `ach ${event.type} event ${event.event_id}${recordsSubmission ? `; records the submission of attempt ${decision.after.loc_payment_attempts}, whose answer was lost` : ''}`;
  const tallies = [returnCounted(event, now).achRates, recordsSubmission ? achDebitTally(now) : undefined];
  const submission = recordsSubmission ? loanDebitMovements(payment, decision.after, now, true) : [];
  await ports.payments.update(decision.after, payment.version, { actor: eventActor('ach', event.event_id), reason }, sumTallies(tallies), [...submission, movement]);
  return {
    kind: 'applied',
    effect: decision.effect,
    status: decision.after.loc_status,
    amount_mismatch: event.amount_cents !== payment.loc_amount,
    reversed: decision.reversed === true,
  };
}

/**
 * An outcome the record does not take (a refund or return of a waived, cancelled or older entry, a
 * loan refund, a further partial refund of a refunded period) still moved money: its row is written
 * on its own. A replay or an unknown record writes none (a replayed refund writes its own row again).
 */
function movesMoneyUnrecorded(reason: AchIgnoreReason, event: AchEvent): boolean {
  if (event.type === 'refunded' && reason === 'already_applied') return true;
  return reason === 'status' || reason === 'confirmation_mismatch' || reason === 'unsupported';
}

/** The 4.1 exception a settlement raises is known to reconciliation from its row. */
function knownException(decision: AchDecision<BillingRecord>): KnownException | undefined {
  if (decision.kind !== 'apply' || decision.effect !== 'exception') return undefined;
  const code = decision.after.ach_exception?.code;
  return code === 'amount_mismatch' || code === 'unowed_payment' ? code : undefined;
}

/** An `unless_recorded` decision asks the period's audit rows whether it ever recorded that entry (rare: one Query, paged). */
async function resolveRecorded<T>(ports: AchOutcomePorts, subscriptionId: string, decision: AchDecision<T>): Promise<Exclude<AchDecision<T>, { kind: 'unless_recorded' }>> {
  if (decision.kind !== 'unless_recorded') return decision;
  const recorded = await everRecorded(ports.billing, subscriptionId, decision.confirmation_id);
  if (recorded) return { kind: 'ignore', reason: 'confirmation_mismatch' };
  return resolveRecorded(ports, subscriptionId, decision.otherwise);
}

/** The same question of a loan payment's audit rows (an older entry's return after a retry's: one Query, paged). */
async function resolveLoanRecorded(ports: AchOutcomePorts, payment: LoanPayment, decision: AchDecision<LoanPayment>): Promise<Exclude<AchDecision<LoanPayment>, { kind: 'unless_recorded' }>> {
  if (decision.kind !== 'unless_recorded') return decision;
  if (await loanEverRecorded(ports.payments, payment, decision.confirmation_id)) return { kind: 'ignore', reason: 'confirmation_mismatch' };
  return resolveLoanRecorded(ports, payment, decision.otherwise);
}

/** The hold a return sets on the instrument its entry debited: the period's, or an older entry's from the audit rows. */
async function subscriptionReturnHold(ports: AchOutcomePorts, record: BillingRecord, event: AchEvent, now: Date): Promise<InstrumentWrite | undefined> {
  if (event.type !== 'returned' || event.return_code === undefined) return undefined;
  const holdClass = holdClassOfReturn(event.return_code);
  if (holdClass === undefined || holdClass === 'ach_represent') return undefined;
  const instrumentId =
    record.transaction_id === event.confirmation_id ? record.instrument_id : await recordedInstrument(ports.billing, record.subscription_id, event.confirmation_id);
  return returnHoldWrite(record.user_id, instrumentId, returnOf(event, `subscription:${record.subscription_id}`), formatInstant(now));
}

function returnOf(event: AchEvent, reference: string) {
  return { return_code: event.return_code!, event_id: event.event_id, confirmation_id: event.confirmation_id, reference };
}

/** One day's tallies as one (each is today's); undefined when there are none. */
function sumTallies(tallies: readonly (AchRateTally | undefined)[]): AchRateTally | undefined {
  const present = tallies.filter((t): t is AchRateTally => t !== undefined);
  if (present.length <= 1) return present[0];
  return { day: present[0]!.day, counts: present.map((t) => t.counts).reduce(addAchRateCounts) };
}

/** A return that changed the record counts in its day's return-rate counters. */
function returnCounted(event: AchEvent, now: Date): { achRates?: ReturnType<typeof achReturnTally> } {
  return event.type === 'returned' && event.return_code !== undefined ? { achRates: achReturnTally(event.return_code, now) } : {};
}
