import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DynamoReconciliationStore } from '../../src/adapters/dynamodb/reconciliation-store.js';
import { SimulatedProcessorReport, FaultTargetsExhaustedError, PROCESSOR_FAULT_KINDS, type ProcessorFaultKind } from '../../src/adapters/processor/simulator-report.js';
import type { SimulatedCharge } from '../../src/adapters/processor/simulator.js';
import type { AchEvent } from '../../src/domain/ach-outcomes.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { loanRecordKey, type MovementKind } from '../../src/domain/money-movements.js';
import type { ReconciliationEvents, ReconciliationRun, StoredException } from '../../src/domain/ports/reconciliation.js';
import type { ReconciliationCode } from '../../src/domain/reconciliation/match.js';
import type { BillingRecord, PaymentMethod } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { applyAchEvent } from '../../src/domain/use-cases/apply-ach-outcome.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { makeLoanPayment } from '../../src/domain/use-cases/make-loan-payment.js';
import { applyMembershipEvent } from '../../src/domain/use-cases/membership/apply-membership-event.js';
import { reconcileDay, shiftDay, type ReconcileDeps } from '../../src/domain/use-cases/reconcile-day.js';
import { retryLoanPayment } from '../../src/domain/use-cases/retry-loan-payment.js';
import { waive } from '../../src/domain/use-cases/waive.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import type { TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';
import { cardMetadata, stripeDelivery, stripeEvent } from '../support/webhooks.js';
import { billingRecord } from '../handlers/api-fixtures.js';

/**
 * A day of collections driven through the real paths that write money-movements rows (attempts,
 * loan payments and retries, Stripe and ACH outcomes), the processor's side as the simulator's report
 * plus the outcomes the processor made, and the faults a case injects with the exception each must
 * raise (DESIGN 14).
 */

export const DAY_MS = 86_400_000;
const MINUTE = 60_000;
export const RAILS: readonly PaymentMethod[] = ['card', 'pinless', 'ach'];

/** What happens to a member's debit after it is presented. */
export type Outcome = 'none' | 'refund' | 'partial_refunds' | 'chargeback' | 'dispute_won' | 'late_dispute' | 'return' | 'return_retried' | 'late_return' | 'achsent_refund' | 'unowed_refund';
/** The processor's faults on the debit, or `withhold`: the member's last outcome webhook never reaches us. */
export type FaultPick = ProcessorFaultKind | 'withhold';

export interface Member {
  readonly record: 'sub' | 'loan';
  readonly rail: PaymentMethod;
  readonly cents: number;
  readonly outcome: Outcome;
  /** A loan payment declined the day before and collected by its automatic retry. */
  readonly retry: boolean;
  /** How an `unowed_refund` period was written off before the lost charge succeeded. */
  readonly writtenOff: 'waived' | 'cancelled';
  readonly fault: FaultPick | null;
}

const OUTCOMES: Readonly<Record<'sub' | 'loan', Readonly<Record<PaymentMethod, readonly Outcome[]>>>> = {
  sub: {
    card: ['none', 'refund', 'partial_refunds', 'chargeback', 'dispute_won', 'late_dispute', 'unowed_refund'],
    pinless: ['none', 'refund', 'partial_refunds', 'chargeback'],
    ach: ['none', 'refund', 'partial_refunds', 'chargeback', 'return', 'late_return', 'achsent_refund'],
  },
  loan: { card: [], pinless: ['none', 'refund', 'partial_refunds', 'chargeback'], ach: ['none', 'refund', 'partial_refunds', 'chargeback', 'return', 'return_retried', 'late_return'] },
};

export const memberArb: fc.Arbitrary<Member> = fc
  .oneof(fc.record({ record: fc.constant('sub' as const), rail: fc.constantFrom<PaymentMethod>(...RAILS) }), fc.record({ record: fc.constant('loan' as const), rail: fc.constantFrom<PaymentMethod>('pinless', 'ach') }))
  .chain(({ record, rail }) =>
    fc.record({
      record: fc.constant(record),
      rail: fc.constant(rail),
      cents: fc.integer({ min: 100, max: 9_999 }),
      outcome: fc.constantFrom(...OUTCOMES[record][rail]),
      retry: record === 'loan' ? fc.boolean() : fc.constant(false),
      writtenOff: fc.constantFrom<'waived' | 'cancelled'>('waived', 'cancelled'),
      fault: fc.option(fc.constantFrom<FaultPick>(...PROCESSOR_FAULT_KINDS, 'withhold'), { freq: 3 }),
    }),
  );

export interface DayPlan {
  readonly members: readonly Member[];
  /** When in the UTC day the collections run: late hours push settlements and outcomes past midnight. */
  readonly minuteOfDay: number;
  readonly settleDelayMinutes: number;
  /** Days after the collection day that a late return arrives (it amends the collection day's result). */
  readonly lateAfterDays: number;
}

export const dayPlanArb: fc.Arbitrary<DayPlan> = fc.record({
  members: fc.array(memberArb, { minLength: 1, maxLength: 8 }),
  minuteOfDay: fc.integer({ min: 0, max: 24 * 60 - 1 }),
  settleDelayMinutes: fc.constantFrom(0, 30, 6 * 60),
  lateAfterDays: fc.integer({ min: 2, max: 59 }),
});

/** An exception the run must report: its code, whose money, the processor transaction it names, its signed amount. */
export interface Expected {
  readonly code: ReconciliationCode;
  readonly user_id: string;
  readonly transaction_id: string;
  readonly amount_cents: number;
}

export const expectedKey = (e: { readonly code: string; readonly user_id?: string | undefined; readonly transaction_id?: string | undefined; readonly amount_cents: number }) => `${e.code}|${e.user_id}|${e.transaction_id}|${e.amount_cents}`;

export class RecordingEvents implements ReconciliationEvents {
  readonly completed_: ReconciliationRun[] = [];
  readonly exceptions: StoredException[] = [];
  async completed(run: ReconciliationRun): Promise<void> {
    this.completed_.push(run);
  }
  async exception(exception: StoredException): Promise<void> {
    this.exceptions.push(exception);
  }
}

/** One member as collected: whose it is, the debit the processor took, and the outcomes it made. */
interface Collected {
  readonly member: Member;
  readonly userId: string;
  readonly record?: BillingRecord;
  readonly loan?: LoanPayment;
  charge?: SimulatedCharge;
  /** The processor's outcome movements of this member, in the order it made them. */
  readonly outcomes: { readonly kind: MovementKind; readonly transaction_id: string; readonly amount_cents: number }[];
}

export class ReconciliationWorld {
  readonly report: SimulatedProcessorReport;
  readonly store: DynamoReconciliationStore;
  /** The first day no case has used yet. */
  private nextDay: number;

  constructor(readonly app: TestApp) {
    this.report = new SimulatedProcessorReport(app.simulator);
    this.store = new DynamoReconciliationStore(app.db.client, app.db.tables.reconciliation);
    this.nextDay = Math.floor(app.clock.now().getTime() / DAY_MS) + 1;
  }

  reconcileDeps(events: ReconciliationEvents): ReconcileDeps {
    const { app, report, store } = this;
    return { clock: app.clock, ids: app.deps.ids, movements: app.deps.movements, reports: { card: report, ach: report, pinless: report }, reconciliation: store, events };
  }

  /** Reconciles every rail of each day, in order. */
  async reconcile(days: readonly string[], events: ReconciliationEvents) {
    const runs = [];
    for (const day of days) for (const rail of RAILS) runs.push(await reconcileDay(this.reconcileDeps(events), rail, day));
    return runs;
  }

  /** Every exception the stored runs of these days list (later days' amendments folded in), and their gross drift. */
  async reported(days: readonly string[]): Promise<{ exceptions: StoredException[]; gross: number }> {
    const exceptions: StoredException[] = [];
    let gross = 0;
    for (const day of days) {
      for (const rail of RAILS) {
        const stored = await this.store.getRun(day, rail);
        if (!stored) continue;
        exceptions.push(...stored.exceptions);
        gross += stored.run.gross_drift_cents;
      }
    }
    return { exceptions, gross };
  }

  /**
   * Runs one plan: collections on its day, outcomes, the processor's faults, a reconciliation of the
   * day and the next, then the late returns and the reconciliation of their day. Answers what must be
   * reported and the days to read it from.
   */
  async runDay(plan: DayPlan): Promise<{ expected: Expected[]; days: string[]; events: RecordingEvents }> {
    const { app } = this;
    const dayStart = (this.nextDay + 1) * DAY_MS;
    const day = formatInstant(new Date(dayStart)).slice(0, 10);
    const lateDay = shiftDay(day, plan.lateAfterDays);
    this.nextDay += plan.lateAfterDays + 4;
    app.simulator.configure({ ...app.simulator.current(), ach_settle_delay_ms: plan.settleDelayMinutes * MINUTE });
    const collectAt = dayStart + plan.minuteOfDay * MINUTE;

    const members = await this.collect(plan.members, collectAt);
    const expected: Expected[] = [];
    await this.outcomes(members, expected, collectAt + (plan.settleDelayMinutes + 1) * MINUTE);
    expected.push(...this.injectDebitFaults(members));
    await this.represent(members.filter((c) => c.member.outcome === 'return_retried' && c.member.fault !== 'withhold'), plan.settleDelayMinutes);

    const events = new RecordingEvents();
    // Settlements and outcomes after midnight start their groups on the next day.
    const days = [day];
    while (days.at(-1)! < formatInstant(app.clock.now()).slice(0, 10)) days.push(shiftDay(days.at(-1)!, 1));
    await this.reconcile(days, events);
    const late = members.filter((c) => c.member.outcome === 'late_return' || c.member.outcome === 'late_dispute');
    if (late.length > 0) {
      app.clock.set(new Date(Date.parse(`${lateDay}T00:00:00Z`) + plan.minuteOfDay * MINUTE).toISOString());
      for (const c of late) await this.lateOutcome(c, expected);
      await this.reconcile([lateDay], events);
      days.push(lateDay);
    }
    return { expected, days, events };
  }

  private async collect(plan: readonly Member[], collectAt: number): Promise<Collected[]> {
    const { app } = this;
    const users: Record<string, string> = {};
    const members: Collected[] = [];
    // Loan retries: declined the day before, due again at the collection instant.
    app.clock.set(new Date(collectAt - DAY_MS).toISOString());
    for (const member of plan) {
      if (member.record === 'loan') {
        const userId = `user-${randomUUID()}`;
        const request = { user_id: userId, loan_id: `loan-${randomUUID().slice(0, 8)}`, payment_id: `pay_${randomUUID().replaceAll('-', '')}`, amount_cents: member.cents, payment_method: member.rail as LoanPayment['loc_payment_method'], account_last_four: '6789' };
        let loan: LoanPayment | undefined;
        if (member.retry) {
          this.outcome(userId, 'decline:insufficient_funds');
          loan = (await makeLoanPayment(app.depsFor('api'), request)).payment;
          if (loan.loc_status !== 'RETRY') throw new Error(`loan payment not declined: ${loan.loc_status}`);
        }
        members.push({ member, userId, ...(loan ? { loan } : { loan: { loc_user_id: userId, loc_loan_id: request.loan_id, loc_payment_id: request.payment_id } as LoanPayment }), outcomes: [] });
      } else {
        // A period cancelled by a closed account is one not yet due; every other one is due.
        const cancelled = member.outcome === 'unowed_refund' && member.writtenOff === 'cancelled';
        const billingDate = formatInstant(new Date(collectAt + (cancelled ? 2 * DAY_MS : -DAY_MS)));
        const [record] = await seedRecords(app, billingRecord(app, { payment_method: member.rail, amount_cents: member.cents, billing_date: billingDate }));
        members.push({ member, userId: record.user_id, record, outcomes: [] });
      }
    }
    for (const c of members) {
      const { outcome } = c.member;
      users[c.userId] = outcome === 'return' || outcome === 'return_retried' ? 'ach_return:R01' : outcome === 'unowed_refund' ? 'decline' : 'approve';
    }
    app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, ...users } });
    app.clock.set(new Date(collectAt).toISOString());
    for (const c of members) await this.present(c);
    for (const c of members) {
      c.charge = app.simulator.charges().find((charge) => charge.user_id === c.userId);
      if (!c.charge) throw new Error(`no charge for ${c.member.record} ${c.member.rail} ${c.member.outcome}`);
    }
    return members;
  }

  private outcome(userId: string, outcome: string): void {
    const current = this.app.simulator.current();
    this.app.simulator.configure({ ...current, users: { ...current.users, [userId]: outcome } as Record<string, 'approve'> });
  }

  /** The member's presentment through its real path; an unowed refund's period is declined, written off, then charged by a lost PaymentIntent. */
  private async present(c: Collected): Promise<void> {
    const { app } = this;
    const owner = `prop-${randomUUID()}`;
    if (c.loan) {
      const loan = c.loan;
      if (c.member.retry) {
        const retried = await retryLoanPayment(app.depsFor('batch-worker'), { user_id: c.userId, loan_id: loan.loc_loan_id, payment_id: loan.loc_payment_id, owner });
        if (retried.kind !== 'collected' && retried.kind !== 'submitted') throw new Error(`loan retry: ${retried.kind}`);
      } else {
        await makeLoanPayment(app.depsFor('api'), { user_id: c.userId, loan_id: loan.loc_loan_id, payment_id: loan.loc_payment_id, amount_cents: c.member.cents, payment_method: c.member.rail as LoanPayment['loc_payment_method'], account_last_four: '6789' });
      }
      return;
    }
    const record = c.record!;
    if (c.member.outcome !== 'unowed_refund') {
      await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner });
      return;
    }
    if (c.member.writtenOff === 'waived') {
      await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner });
      await waive(app.depsFor('api'), { subscriptionId: record.subscription_id, owner, actor: 'ops@example.com', reason: 'goodwill' });
    } else {
      await applyMembershipEvent(app.depsFor('memberships-consumer'), { event: { event_id: randomUUID(), user_id: record.user_id, occurred_at: formatInstant(app.clock.now()), type: 'CLOSEACCOUNT' }, owner });
    }
    const status = (await app.deps.billing.get(record))!.billing_status;
    if (status !== (c.member.writtenOff === 'waived' ? 'WAIVED' : 'CANCELLED')) throw new Error(`period not written off: ${status}`);
    this.outcome(c.userId, 'approve');
    const lost = await app.simulator.submit({
      idempotency_key: `${record.subscription_id}:lost`,
      user_id: record.user_id,
      amount_cents: record.amount_cents,
      rail: 'card',
      reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    });
    if (lost.outcome !== 'approved') throw new Error('the lost PaymentIntent was not approved');
    const intent = { id: lost.confirmation_id, object: 'payment_intent', amount: record.amount_cents, amount_received: record.amount_cents, currency: 'usd', metadata: cardMetadata(record) };
    await this.stripe('payment_intent.succeeded', intent);
  }

  private async stripe(type: string, object: Record<string, unknown>): Promise<void> {
    const { app } = this;
    const response = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(stripeEvent(type, object, app.clock.now().getTime()), { signedAtMs: app.wallClock.now().getTime() }));
    if (response.statusCode !== 200) throw new Error(`stripe ${type}: ${response.statusCode} ${response.body}`);
  }

  private async ach(c: Collected, type: AchEvent['type'], amount: number, returnCode?: string, at = this.app.clock.now()): Promise<void> {
    const { app } = this;
    const reference: AchEvent['reference'] = c.loan
      ? { kind: 'loan_payment', user_id: c.userId, loan_id: c.loan.loc_loan_id, payment_id: c.loan.loc_payment_id }
      : { kind: 'subscription', user_id: c.userId, billing_date: c.record!.billing_date };
    await applyAchEvent(app.depsFor('ach-handler'), {
      event_id: `ach_${randomUUID()}`,
      type,
      confirmation_id: c.charge!.confirmation_id,
      ...(returnCode ? { return_code: returnCode } : {}),
      amount_cents: amount,
      occurred_at: formatInstant(at),
      reference,
    });
  }

  /** The processor made an outcome: reported on its side at the clock's instant. */
  private processorMade(c: Collected, kind: MovementKind, amount: number): string {
    const id = `${kind}_${randomUUID().replaceAll('-', '')}`;
    const charge = c.charge!;
    this.report.reportOutcome(charge.rail, {
      kind,
      transaction_id: id,
      original_transaction_id: charge.confirmation_id,
      amount_cents: amount,
      occurred_at: formatInstant(this.app.clock.now()),
      record_key: c.loan ? loanRecordKey(c.loan) : `sub#${c.record!.subscription_id}`,
      user_id: c.userId,
    });
    c.outcomes.push({ kind, transaction_id: id, amount_cents: amount });
    return id;
  }

  private tick(): void {
    this.app.clock.advance(MINUTE);
  }

  /** Each member's outcomes; a `withhold` fault keeps the member's last webhook from us. */
  private async outcomes(members: readonly Collected[], expected: Expected[], settledAt: number): Promise<void> {
    const { app } = this;
    const withheld = (c: Collected) => c.member.fault === 'withhold';
    for (const c of members.filter((m) => m.member.outcome === 'achsent_refund')) {
      this.tick();
      const id = this.processorMade(c, 'refund', c.member.cents);
      if (withheld(c)) expected.push({ code: 'status_mismatch', user_id: c.userId, transaction_id: id, amount_cents: -c.member.cents });
      else await this.ach(c, 'refunded', c.member.cents);
    }
    app.clock.set(new Date(Math.max(settledAt, app.clock.now().getTime() + MINUTE)).toISOString());
    const byConfirmation = new Map(members.map((c) => [c.charge!.confirmation_id, c]));
    for (const due of app.simulator.takeDueAchOutcomes(app.clock.now().getTime())) {
      const c = byConfirmation.get(due.charge.confirmation_id);
      if (!c) continue;
      // The bank's outcome is in the simulator's report; withheld, our side never learns it.
      const lastOutcome = c.member.outcome === 'none' || c.member.outcome === 'return' || c.member.outcome === 'return_retried';
      if (withheld(c) && lastOutcome) {
        const settled = due.type === 'settled';
        expected.push({ code: 'status_mismatch', user_id: c.userId, transaction_id: `${settled ? 'stl' : 'ret'}_${due.charge.confirmation_id}`, amount_cents: settled ? 0 : -due.charge.amount_cents });
        continue;
      }
      // Dated by the bank's event time, as the report dates it.
      await this.ach(c, due.type, due.charge.amount_cents, due.return_code, new Date(due.charge.ach!.due_at));
    }
    for (const c of members) {
      this.tick();
      await this.outcomeOf(c, expected);
    }
  }

  private async outcomeOf(c: Collected, expected: Expected[]): Promise<void> {
    const { member } = c;
    const cents = member.cents;
    const withhold = member.fault === 'withhold';
    const card = member.rail === 'card';
    const refund = async (amount: number, total: number, last: boolean) => {
      const id = this.processorMade(c, 'refund', amount);
      if (withhold && last) return id;
      if (card) await this.stripe('charge.refunded', { id: `ch_${randomUUID().slice(0, 8)}`, object: 'charge', payment_intent: c.charge!.confirmation_id, amount: cents, amount_refunded: total, refunded: total === cents, metadata: cardMetadata(c.record!) });
      else await this.ach(c, 'refunded', amount);
      return id;
    };
    const status = (id: string, amount: number): Expected => ({ code: 'status_mismatch', user_id: c.userId, transaction_id: id, amount_cents: amount });
    switch (member.outcome) {
      case 'refund':
      case 'unowed_refund': {
        const id = await refund(cents, cents, true);
        if (withhold) expected.push(status(id, -cents));
        return;
      }
      case 'partial_refunds': {
        const first = Math.max(1, Math.floor(cents / 3));
        const second = Math.max(1, Math.floor(cents / 4));
        const firstId = await refund(first, first, false);
        this.tick();
        await refund(second, first + second, true);
        // The refunds of one debit are matched together: ours short by the one withheld.
        if (withhold) expected.push({ code: 'amount_mismatch', user_id: c.userId, transaction_id: firstId, amount_cents: -second });
        return;
      }
      case 'chargeback':
      case 'dispute_won':
        return this.dispute(c, member.outcome === 'dispute_won', expected);
      default:
        return;
    }
  }

  /** A chargeback (ACH and pinless: the payments service's; card: a dispute, then lost or won); withheld, its last webhook. */
  private async dispute(c: Collected, won: boolean, expected: Expected[]): Promise<void> {
    const cents = c.member.cents;
    const withhold = c.member.fault === 'withhold';
    const id = this.processorMade(c, 'chargeback', cents);
    const withdrawn: Expected = { code: 'status_mismatch', user_id: c.userId, transaction_id: id, amount_cents: -cents };
    if (c.member.rail !== 'card') {
      if (withhold) expected.push(withdrawn);
      else await this.ach(c, 'chargeback', cents);
      return;
    }
    const dispute = { id: `dp_${randomUUID().slice(0, 8)}`, object: 'dispute', charge: `ch_${randomUUID().slice(0, 8)}`, payment_intent: c.charge!.confirmation_id, amount: cents, metadata: cardMetadata(c.record!) };
    if (withhold && !won) expected.push(withdrawn);
    else await this.stripe('charge.dispute.created', { ...dispute, status: 'needs_response' });
    this.tick();
    if (!won) return this.stripe('charge.dispute.closed', { ...dispute, status: 'lost' });
    const back = this.processorMade(c, 'dispute_reinstated', cents);
    if (withhold) expected.push({ code: 'missing_in_records', user_id: c.userId, transaction_id: back, amount_cents: cents });
    else await this.stripe('charge.dispute.closed', { ...dispute, status: 'won' });
  }

  /** Loan payments an R01 return put back to RETRY: the automatic retry re-presents them when due, and the bank settles. */
  private async represent(members: readonly Collected[], settleDelayMinutes: number): Promise<void> {
    const { app } = this;
    for (const c of members) {
      const payment = (await app.deps.payments.get(c.userId, c.loan!.loc_loan_id, c.loan!.loc_payment_id))!;
      if (payment.loc_status !== 'RETRY') throw new Error(`returned loan payment is ${payment.loc_status}`);
      app.clock.set(new Date(Math.max(app.clock.now().getTime(), Date.parse(payment.loc_next_attempt_at!)) + MINUTE).toISOString());
      this.outcome(c.userId, 'approve');
      const retried = await retryLoanPayment(app.depsFor('batch-worker'), { user_id: c.userId, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id, owner: `prop-${randomUUID()}` });
      if (retried.kind !== 'submitted') throw new Error(`loan re-presentment: ${retried.kind}`);
      app.clock.advance((settleDelayMinutes + 1) * MINUTE);
      for (const due of app.simulator.takeDueAchOutcomes(app.clock.now().getTime())) {
        if (due.charge.user_id === c.userId) await this.ach({ ...c, charge: due.charge }, due.type, due.charge.amount_cents, due.return_code, new Date(due.charge.ach!.due_at));
      }
    }
  }

  /** An unauthorized return (R10) of a settled debit, or a card dispute opened and won, days later: it amends the debit's day. */
  private async lateOutcome(c: Collected, expected: Expected[]): Promise<void> {
    this.tick();
    if (c.member.outcome === 'late_dispute') return this.dispute(c, true, expected);
    const id = this.processorMade(c, 'return', c.member.cents);
    if (c.member.fault === 'withhold') expected.push({ code: 'status_mismatch', user_id: c.userId, transaction_id: id, amount_cents: -c.member.cents });
    else await this.ach(c, 'returned', c.member.cents, 'R10');
  }

  /** The processor's faults on the members' debits, where the debit can take one (a fault it cannot take is not injected). */
  private injectDebitFaults(members: readonly Collected[]): Expected[] {
    const expected: Expected[] = [];
    for (const c of members) {
      const kind = c.member.fault;
      if (kind === null || kind === 'withhold' || !this.takes(c, kind)) continue;
      const charge = c.charge!;
      try {
        for (const fault of this.report.inject({ kind, date: formatInstant(new Date(charge.submitted_at)).slice(0, 10), user_id: c.userId })) {
          expected.push({ code: fault.expected_code, user_id: fault.user_id, transaction_id: fault.transaction_id, amount_cents: fault.amount_cents });
        }
      } catch (error) {
        if (!(error instanceof FaultTargetsExhaustedError)) throw error;
      }
    }
    return expected;
  }

  /** An unowed payment's debit is a known exception already; a returned debit cannot also be returned late. */
  private takes(c: Collected, kind: ProcessorFaultKind): boolean {
    if (kind === 'phantom') return true;
    if (c.member.outcome === 'unowed_refund') return false;
    if (kind === 'late_return') return c.member.rail === 'ach' && c.member.outcome !== 'return' && c.member.outcome !== 'late_return';
    return true;
  }
}
