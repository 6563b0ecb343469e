import * as fc from 'fast-check';
import { TransientError } from '../../src/domain/errors.js';
import type { MembershipEventType } from '../../src/domain/membership-events.js';
import { RETRY_RUN_STATES } from '../../src/domain/retry-runs.js';
import type { FaultPoint, FaultSpec } from '../support/faults.js';
import { DAY, MINUTE } from '../support/time.js';
import { MEMBERSHIP_EVENT_TYPES, PAYMENT_METHODS } from '../support/unions.js';
import type { BillingWorld } from './harness.js';
import { DB_PROFILE } from './shared-app.js';
import { currentChain, isBanned, iso, ms, type Method, type ModelState, type Plan, type Term } from './reference-model.js';

/**
 * The commands of the model-based test (fast-check `fc.commands`): every entry point of the
 * system, each run through its real handler, each followed by the full check of the invariants.
 * A command never sees the generator's guess of the state: the records it acts on (the head
 * period, a due one, a charge to refund) are picked when it runs, by index, from what the system
 * and the processor show, so a shrunk sequence still means something.
 */

type Cmd = fc.AsyncCommand<ModelState, BillingWorld>;

/** Time per command kind (MODEL_PROFILE=1 prints it). */
export const PROFILE: Record<string, { n: number; act: number; check: number }> = {};
/** Steps run (each command executed and checked), over the whole process. */
export const COUNTERS = { steps: 0 };

abstract class Step implements Cmd {
  check(): boolean {
    return true;
  }
  async run(_model: ModelState, world: BillingWorld): Promise<void> {
    const t0 = performance.now();
    DB_PROFILE.phase = 'act';
    await world.drain();
    world.trace.push(`${iso(world.now())} ${this.toString()}`);
    await this.act(world);
    const t1 = performance.now();
    DB_PROFILE.phase = 'check';
    await world.check(this.toString());
    COUNTERS.steps += 1;
    const name = this.constructor.name;
    const p = (PROFILE[name] ??= { n: 0, act: 0, check: 0 });
    p.n += 1;
    p.act += t1 - t0;
    p.check += performance.now() - t1;
  }
  abstract act(world: BillingWorld): Promise<void>;
  abstract toString(): string;
}

/** Billing starts at noon UTC `offsetDays` from now (0: due at once). */
function firstDateOf(world: BillingWorld, offsetDays: number, hour: number): number {
  const now = new Date(world.now());
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + offsetDays, hour);
}

const AMOUNTS = [1999, 999, 12000];

export class NewMember extends Step {
  constructor(
    readonly user: number,
    readonly method: Method,
    readonly term: Term,
    readonly friday: number | undefined,
    readonly offsetDays: number,
    readonly amount: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const plan: Plan = { method: this.method, term: this.term, amountCents: this.amount, friday: this.friday, firstDate: firstDateOf(world, this.offsetDays, 12) };
    if (world.known.has('new_chain_before_old_end') && (await world.records(world.users[this.user]!)).some((r) => ms(r.billing_date) >= plan.firstDate)) return;
    await world.sendMembership(world.membershipBody(this.user, 'NEW', { plan }));
  }
  toString() {
    return `NEW(u${this.user}, ${this.method}, ${this.term}${this.friday ? `, friday ${this.friday}` : ''}, +${this.offsetDays}d, ${this.amount})`;
  }
}

class Checkout extends Step {
  constructor(
    readonly user: number,
    readonly term: Term,
    readonly friday: number | undefined,
    readonly offsetDays: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const firstDate = firstDateOf(world, this.offsetDays, 15);
    const plan: Plan = { method: 'card', term: this.term, amountCents: 1999, friday: this.friday, firstDate };
    await world.checkout(this.user, checkoutEvent(world.users[this.user]!, plan, world.now()), plan);
  }
  toString() {
    return `CHECKOUT(u${this.user}, ${this.term}${this.friday ? `, friday ${this.friday}` : ''}, +${this.offsetDays}d)`;
  }
}

/** A Stripe `checkout.session.completed` event for a card plan. */
export function checkoutEvent(userId: string, plan: Plan, nowMs: number): Record<string, any> {
  const session = {
    id: `cs_${Math.random().toString(36).slice(2)}`,
    object: 'checkout.session',
    mode: 'setup',
    amount_total: plan.amountCents,
    currency: 'usd',
    payment_status: 'paid',
    status: 'complete',
    metadata: { user_id: userId, tier: 'plus:v3', term: plan.term, first_billing_date: iso(plan.firstDate), ...(plan.friday ? { friday_billing: String(plan.friday) } : {}) },
  };
  return { id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', api_version: '2025-10-29.clover', created: Math.floor(nowMs / 1000), livemode: false, pending_webhooks: 1, type: 'checkout.session.completed', data: { object: session } };
}

type SimpleType = Exclude<MembershipEventType, 'NEW'>;
/** Every membership event type but NEW (which carries a plan), read off the schema: a new type is driven without an edit here. */
const SIMPLE_TYPES = MEMBERSHIP_EVENT_TYPES.filter((type): type is SimpleType => type !== 'NEW');
/** How often each type is sent, relative to the other commands; a type not listed is sent at weight 1. */
const MEMBERSHIP_WEIGHTS: Partial<Record<SimpleType, number>> = { PAUSE: 3, UNPAUSE: 2, CANCEL: 2 };

export class Membership extends Step {
  constructor(
    readonly user: number,
    readonly type: SimpleType,
    readonly months: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    if ((this.type === 'CANCEL' || this.type === 'CLOSEACCOUNT') && world.known.has('cancel_while_banned') && (isBanned(world.member(this.user)) || world.queuedTypes(this.user).includes('BAN'))) return;
    if (this.type === 'PAUSE' && world.known.has('annual_pause_skips_year') && currentChain(world.member(this.user))?.plan.term === 'ANNUAL') return;
    await world.sendMembership(world.membershipBody(this.user, this.type, this.type === 'PAUSE' ? { months: this.months } : {}));
  }
  toString() {
    return `${this.type}(u${this.user}${this.type === 'PAUSE' ? `, ${this.months} month(s)` : ''})`;
  }
}

/** Re-sends an earlier membership record as is (a Kinesis redelivery or a producer's duplicate). */
class ReplayMembership extends Step {
  constructor(readonly pick: number) {
    super();
  }
  async act(world: BillingWorld) {
    const sent = world.sentMemberships;
    if (sent.length === 0) return;
    const original = sent[this.pick % sent.length]!;
    const m = world.member(original.user);
    if (world.known.has('replay_equal_occurred_at')) {
      const i = m.appliedLog.findIndex((a) => a.id === original.input.event_id);
      if (i >= 0 && m.appliedLog.slice(i + 1).some((a) => a.at === original.input.occurredAt)) return;
    }
    world.trace.push(`  replays ${original.input.type} of u${original.user} (occurred ${iso(original.input.occurredAt)})`);
    await world.sendMembership(original, false);
  }
  toString() {
    return `REPLAY_MEMBERSHIP(#${this.pick})`;
  }
}

/** A membership event that arrives after a newer one was applied (reordered): a no-op. */
class StaleMembership extends Step {
  constructor(
    readonly user: number,
    readonly type: SimpleType,
    readonly months: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const newest = world.member(this.user).newestAppliedAt;
    if (newest === undefined) return;
    await world.sendMembership(world.membershipBody(this.user, this.type, { occurredAt: newest - MINUTE, ...(this.type === 'PAUSE' ? { months: this.months } : {}) }));
  }
  toString() {
    return `STALE_${this.type}(u${this.user})`;
  }
}

export class CollectionsRun extends Step {
  async act(world: BillingWorld) {
    const out = await world.collectionsRun();
    world.trace.push(`  enqueued ${out.enqueued}, batch failures ${out.failed}`);
  }
  toString() {
    return 'COLLECTIONS_RUN';
  }
}

type Pick = (records: readonly Record<string, any>[], now: number) => Record<string, any>[];
const openPeriods: Pick = (rs) => rs.filter((r) => ['PENDING', 'FAILED'].includes(r.billing_status));
const waivable: Pick = (rs) => rs.filter((r) => ['PENDING', 'FAILED', 'PAUSED'].includes(r.billing_status));

async function pickRecord(world: BillingWorld, user: number, pick: number, which: Pick): Promise<Record<string, any> | undefined> {
  const list = which(await world.records(world.users[user]!), world.now()).sort((a, b) => (a.billing_date < b.billing_date ? -1 : 1));
  return list.length === 0 ? undefined : list[pick % list.length];
}

export class ManualPay extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
    readonly repeatKey: boolean,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const record = await pickRecord(world, this.user, this.pick, openPeriods);
    if (!record) return;
    const key = world.nextPayKey(this.repeatKey);
    const res = await world.api('POST', '/v1/subscriptions/{subscriptionId}/pay', { subscriptionId: record.subscription_id }, undefined, undefined, true, { 'Idempotency-Key': key });
    world.trace.push(`  pay ${record.billing_date} (${record.billing_status}) key ${key} → ${res.status} ${res.body?.outcome ?? res.body?.error?.code ?? ''}`);
  }
  toString() {
    return `MANUAL_PAY(u${this.user}, #${this.pick}${this.repeatKey ? ', same key' : ''})`;
  }
}

class RetryBilling extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const record = await pickRecord(world, this.user, this.pick, openPeriods);
    if (!record) return;
    const res = await world.api('POST', '/v1/subscriptions/{subscriptionId}/retry-billing', { subscriptionId: record.subscription_id }, { reason: 'model test' });
    world.trace.push(`  retry-billing ${record.billing_date} (${record.billing_status}) → ${res.status} ${res.body?.outcome ?? res.body?.error?.code ?? ''}`);
  }
  toString() {
    return `RETRY_BILLING(u${this.user}, #${this.pick})`;
  }
}

class BulkRetry extends Step {
  constructor(
    readonly state: 'parked' | 'exhausted',
    readonly repeatKey: boolean,
    readonly dryRun: boolean,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    await world.startRetryRun(this.state, { repeatKey: this.repeatKey, dryRun: this.dryRun });
  }
  toString() {
    return `BULK_RETRY(${this.state}${this.repeatKey ? ', same key' : ''}${this.dryRun ? ', dry run' : ''})`;
  }
}

export class Hopeless extends Step {
  constructor(
    readonly user: number,
    readonly state: 'parked' | 'exhausted',
  ) {
    super();
  }
  async act(world: BillingWorld) {
    await world.makeHopeless(this.user, this.state);
  }
  toString() {
    return `HOPELESS(u${this.user}, until ${this.state})`;
  }
}

class RetryRunItems extends Step {
  constructor(readonly duplicate: boolean) {
    super();
  }
  async act(world: BillingWorld) {
    await world.deliverRetryRunItems(this.duplicate);
  }
  toString() {
    return `RETRY_RUN_ITEMS(${this.duplicate ? 'each twice' : 'once'})`;
  }
}

class Waive extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const record = await pickRecord(world, this.user, this.pick, waivable);
    if (record) await world.waive(this.user, record);
  }
  toString() {
    return `WAIVE(u${this.user}, #${this.pick})`;
  }
}

class DueDateChange extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
    readonly minutesAhead: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const record = await pickRecord(world, this.user, this.pick, openPeriods);
    if (!record) return;
    const to = Math.floor((world.now() + this.minutesAhead * MINUTE) / MINUTE) * MINUTE;
    await world.changeDueDate(this.user, record, to);
  }
  toString() {
    return `DUE_DATE_CHANGE(u${this.user}, #${this.pick}, now + ${this.minutesAhead} min)`;
  }
}

/** The bank's settlement or return of an accepted ACH debit (picked by index: outcomes may arrive out of order). */
class AchOutcome extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const outcomes = world.bankOutcomesOf(this.user);
    if (outcomes.length === 0) return;
    await world.deliverBankOutcome(outcomes[this.pick % outcomes.length]!);
  }
  toString() {
    return `ACH_OUTCOME(u${this.user}, #${this.pick})`;
  }
}

class AchDuplicate extends Step {
  constructor(readonly pick: number) {
    super();
  }
  async act(world: BillingWorld) {
    const sent = world.bankDelivered;
    if (sent.length === 0) return;
    await world.sendAchBody(sent[this.pick % sent.length]!);
  }
  toString() {
    return `ACH_DUPLICATE(#${this.pick})`;
  }
}

type CardType = 'payment_intent.succeeded' | 'charge.refunded' | 'charge.dispute.created';

class CardEvent extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
    readonly type: CardType,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const charges = world.charges(world.users[this.user]!).filter((c) => c.rail === 'card');
    if (charges.length === 0) return;
    await world.sendCardEvent(charges[this.pick % charges.length]!, this.type);
  }
  toString() {
    return `STRIPE_${this.type}(u${this.user}, #${this.pick})`;
  }
}

class CardFailed extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    await world.sendCardFailed(this.user, this.pick);
  }
  toString() {
    return `STRIPE_payment_intent.payment_failed(u${this.user}, #${this.pick})`;
  }
}

class StripeDuplicate extends Step {
  constructor(readonly pick: number) {
    super();
  }
  async act(world: BillingWorld) {
    const sent = world.sentStripe;
    if (sent.length === 0) return;
    await world.resendStripe(sent[this.pick % sent.length]!);
  }
  toString() {
    return `STRIPE_DUPLICATE(#${this.pick})`;
  }
}

export class SetOutcome extends Step {
  constructor(
    readonly user: number,
    readonly outcome: string,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    world.setOutcome(this.user, this.outcome);
  }
  toString() {
    return `PROCESSOR(u${this.user} → ${this.outcome})`;
  }
}

class Balance extends Step {
  constructor(
    readonly user: number,
    readonly cents: number | undefined,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    world.setBalance(this.user, this.cents);
  }
  toString() {
    return `BALANCE(u${this.user} → ${this.cents ?? 'none'})`;
  }
}

export class BalanceWebhook extends Step {
  constructor(
    readonly user: number,
    readonly cents: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    await world.balanceWebhook(this.user, this.cents);
  }
  toString() {
    return `BALANCE_WEBHOOK(u${this.user}, ${this.cents})`;
  }
}

export class Clock extends Step {
  constructor(readonly ms: number) {
    super();
  }
  async act(world: BillingWorld) {
    world.app.clock.advance(this.ms);
  }
  toString() {
    return this.ms >= DAY ? `CLOCK(+${(this.ms / DAY).toFixed(1)} d)` : `CLOCK(+${Math.round(this.ms / MINUTE)} min)`;
  }
}

export class Crash extends Step {
  constructor(
    readonly point: FaultPoint,
    readonly mode: 'crash' | 'throw' | 'transient',
  ) {
    super();
  }
  async act(world: BillingWorld) {
    if (this.point === 'lock.release.before' && world.known.has('lock_release_error_after_commit')) return;
    const spec: FaultSpec =
      this.mode === 'crash'
        ? { point: this.point, mode: 'crash' }
        : { point: this.point, mode: 'throw', error: () => (this.mode === 'transient' ? new TransientError(`injected at ${this.point}`) : new Error(`injected at ${this.point}`)) };
    world.arm(spec);
  }
  toString() {
    return `FAULT_NEXT(${this.mode} at ${this.point})`;
  }
}

/** A loan payment on the member's ACH account or pinless card (the same payer as the subscription), or a client's repeat of one. */
export class LoanPay extends Step {
  constructor(
    readonly user: number,
    readonly method: 'ach' | 'pinless',
    readonly amount: number,
    readonly repeat: number | undefined,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    await world.loanPay(this.user, this.method, this.amount, this.repeat);
  }
  toString() {
    return this.repeat === undefined ? `LOAN_PAY(u${this.user}, ${this.method}, ${this.amount})` : `LOAN_PAY_REPEAT(u${this.user}, #${this.repeat})`;
  }
}

type InstrumentKind = 'ach_account' | 'ach_authorization' | 'pinless' | 'card';

class NewInstrument extends Step {
  constructor(
    readonly user: number,
    readonly kind: InstrumentKind,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    await world.newInstrument(this.user, this.kind);
  }
  toString() {
    return `NEW_INSTRUMENT(u${this.user}, ${this.kind})`;
  }
}

class DisputeWon extends Step {
  constructor(
    readonly user: number,
    readonly pick: number,
  ) {
    super();
  }
  async act(world: BillingWorld) {
    const charges = world.charges(world.users[this.user]!).filter((c) => c.rail === 'card');
    if (charges.length === 0) return;
    await world.disputeWon(charges[this.pick % charges.length]!);
  }
  toString() {
    return `STRIPE_charge.dispute.closed won(u${this.user}, #${this.pick})`;
  }
}

/** What the processor answers next: approvals, errors, declines of every class, ACH returns of every class. */
const OUTCOMES = [
  'approve', 'approve', 'approve', 'decline', 'error',
  'decline:insufficient_funds', 'decline:do_not_honor', 'decline:expired_card', 'decline:lost_card', 'decline:stolen_card', 'decline:pickup_card',
  'ach_return:R01', 'ach_return:R01', 'ach_return:R09', 'ach_return:R02', 'ach_return:R03', 'ach_return:R16',
  'ach_return:R10', 'ach_return:R10', 'ach_return:R05', 'ach_return:R07', 'ach_return:R08', 'ach_return:R29', 'ach_return:R51', 'ach_return:R06',
];

const POINTS: FaultPoint[] = [
  'lock.acquire.after',
  'lock.release.before',
  'billing.get.after',
  'billing.find.after',
  'billing.list.after',
  'billing.commit.before',
  'billing.commit.after',
  'billing.recordFailure.before',
  'accounts.after',
  'processor.before',
  'processor.accepted',
  'stripe.claim.after',
  'stripe.mark.before',
];

export interface CommandOptions {
  readonly users: number;
  /** Command kinds left out of the sequences (known, assigned bugs; see KNOWN_BUGS in the test). */
  readonly exclude: ReadonlySet<string>;
}

/** The members' first plans: every sequence starts with each member joining (so most steps meet a chain). */
export function initialPlansArbitrary(users: number): fc.Arbitrary<NewMember[]> {
  return fc.array(
    fc
      .tuple(fc.constantFrom<Method>(...PAYMENT_METHODS), fc.constantFrom<Term>('MONTHLY', 'MONTHLY', 'ANNUAL'), fc.option(fc.integer({ min: 1, max: 5 }), { freq: 4 }), fc.integer({ min: 0, max: 35 }), fc.constantFrom(...AMOUNTS))
      .map(([method, term, friday, offset, amount]) => ({ method, term, friday: friday ?? undefined, offset, amount })),
    { minLength: users, maxLength: users },
  ).map((plans) => plans.map((p, user) => new NewMember(user, p.method, p.term, p.friday, p.offset, p.amount)));
}

function membershipArbitrary(u: fc.Arbitrary<number>, type: SimpleType): fc.Arbitrary<Cmd> {
  if (type === 'PAUSE') return fc.tuple(u, fc.integer({ min: 1, max: 3 })).map(([user, months]) => new Membership(user, type, months));
  return u.map((user) => new Membership(user, type, 0));
}

/** The weighted command arbitraries. */
export function commandArbitraries(options: CommandOptions): fc.Arbitrary<Cmd>[] {
  const u = fc.integer({ min: 0, max: options.users - 1 });
  const pick = fc.nat({ max: 7 });
  const entries: { name: string; weight: number; arb: fc.Arbitrary<Cmd> }[] = [
    {
      name: 'NEW',
      weight: 4,
      arb: fc
        .tuple(u, fc.constantFrom<Method>(...PAYMENT_METHODS), fc.constantFrom<Term>('MONTHLY', 'MONTHLY', 'ANNUAL'), fc.option(fc.integer({ min: 1, max: 5 }), { freq: 4 }), fc.integer({ min: 0, max: 35 }), fc.constantFrom(...AMOUNTS))
        .map(([user, method, term, friday, offset, amount]) => new NewMember(user, method, term, friday ?? undefined, offset, amount)),
    },
    {
      name: 'CHECKOUT',
      weight: 1,
      arb: fc.tuple(u, fc.constantFrom<Term>('MONTHLY', 'ANNUAL'), fc.option(fc.integer({ min: 1, max: 5 }), { freq: 4 }), fc.integer({ min: 1, max: 30 })).map(([user, term, friday, offset]) => new Checkout(user, term, friday ?? undefined, offset)),
    },
    ...SIMPLE_TYPES.map((type) => ({ name: type, weight: MEMBERSHIP_WEIGHTS[type] ?? 1, arb: membershipArbitrary(u, type) })),
    { name: 'REPLAY_MEMBERSHIP', weight: 2, arb: fc.nat({ max: 40 }).map((p) => new ReplayMembership(p)) },
    {
      name: 'STALE_MEMBERSHIP',
      weight: 1,
      arb: fc.tuple(u, fc.constantFrom<SimpleType>('PAUSE', 'UNPAUSE', 'CANCEL', 'BAN'), fc.integer({ min: 1, max: 3 })).map(([user, type, months]) => new StaleMembership(user, type, months)),
    },
    { name: 'COLLECTIONS_RUN', weight: 8, arb: fc.constant(new CollectionsRun()) },
    { name: 'MANUAL_PAY', weight: 2, arb: fc.tuple(u, pick, fc.boolean()).map(([user, p, repeat]) => new ManualPay(user, p, repeat)) },
    { name: 'RETRY_BILLING', weight: 2, arb: fc.tuple(u, pick).map(([user, p]) => new RetryBilling(user, p)) },
    {
      name: 'BULK_RETRY',
      weight: 2,
      arb: fc
        .tuple(fc.constantFrom(...RETRY_RUN_STATES), fc.boolean(), fc.constantFrom(false, false, false, true))
        .map(([state, repeat, dry]) => new BulkRetry(state, repeat, dry)),
    },
    { name: 'HOPELESS', weight: 2, arb: fc.tuple(u, fc.constantFrom(...RETRY_RUN_STATES)).map(([user, state]) => new Hopeless(user, state)) },
    { name: 'RETRY_RUN_ITEMS', weight: 2, arb: fc.boolean().map((duplicate) => new RetryRunItems(duplicate)) },
    { name: 'WAIVE', weight: 2, arb: fc.tuple(u, pick).map(([user, p]) => new Waive(user, p)) },
    {
      name: 'DUE_DATE_CHANGE',
      weight: 2,
      arb: fc.tuple(u, pick, fc.integer({ min: 60, max: 45 * 24 * 60 })).map(([user, p, minutes]) => new DueDateChange(user, p, minutes)),
    },
    { name: 'ACH_OUTCOME', weight: 4, arb: fc.tuple(u, pick).map(([user, p]) => new AchOutcome(user, p)) },
    { name: 'ACH_DUPLICATE', weight: 1, arb: fc.nat({ max: 20 }).map((p) => new AchDuplicate(p)) },
    {
      name: 'STRIPE_CARD',
      weight: 3,
      arb: fc
        .tuple(u, pick, fc.constantFrom<CardType>('payment_intent.succeeded', 'payment_intent.succeeded', 'charge.refunded', 'charge.dispute.created'))
        .map(([user, p, type]) => new CardEvent(user, p, type)),
    },
    { name: 'STRIPE_FAILED', weight: 1, arb: fc.tuple(u, pick).map(([user, p]) => new CardFailed(user, p)) },
    { name: 'STRIPE_DUPLICATE', weight: 1, arb: fc.nat({ max: 20 }).map((p) => new StripeDuplicate(p)) },
    {
      name: 'PROCESSOR',
      weight: 3,
      arb: fc
        .tuple(u, fc.constantFrom(...OUTCOMES))
        .map(([user, outcome]) => new SetOutcome(user, outcome)),
    },
    {
      name: 'LOAN_PAY',
      weight: 5,
      arb: fc
        .tuple(u, fc.constantFrom<'ach' | 'pinless'>('ach', 'ach', 'pinless'), fc.constantFrom(500, 4200), fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: fc.nat({ max: 5 }), weight: 1 }))
        .map(([user, method, amount, repeat]) => new LoanPay(user, method, amount, repeat)),
    },
    { name: 'NEW_INSTRUMENT', weight: 3, arb: fc.tuple(u, fc.constantFrom<InstrumentKind>('ach_account', 'ach_authorization', 'ach_authorization', 'pinless', 'card')).map(([user, kind]) => new NewInstrument(user, kind)) },
    { name: 'DISPUTE_WON', weight: 1, arb: fc.tuple(u, pick).map(([user, p]) => new DisputeWon(user, p)) },
    { name: 'BALANCE', weight: 1, arb: fc.tuple(u, fc.constantFrom<number | undefined>(undefined, 0, 500, 100_000)).map(([user, cents]) => new Balance(user, cents)) },
    { name: 'BALANCE_WEBHOOK', weight: 1, arb: fc.tuple(u, fc.constantFrom(0, 500, 100_000)).map(([user, cents]) => new BalanceWebhook(user, cents)) },
    {
      name: 'CLOCK',
      weight: 8,
      arb: fc
        .oneof(
          { arbitrary: fc.integer({ min: 1, max: 120 }).map((m) => m * MINUTE), weight: 2 },
          { arbitrary: fc.integer({ min: 1, max: 48 }).map((h) => h * 60 * MINUTE), weight: 3 },
          { arbitrary: fc.integer({ min: 1, max: 40 }).map((d) => d * DAY), weight: 3 },
        )
        .map((t) => new Clock(t)),
    },
    { name: 'FAULT', weight: 2, arb: fc.tuple(fc.constantFrom(...POINTS), fc.constantFrom<'crash' | 'throw' | 'transient'>('crash', 'crash', 'throw', 'transient')).map(([point, mode]) => new Crash(point, mode)) },
  ];
  const kept = entries.filter((e) => !options.exclude.has(e.name));
  return [fc.oneof(...kept.map((e) => ({ arbitrary: e.arb, weight: e.weight })))];
}

export { ms };
