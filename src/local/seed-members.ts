import { nextPeriodDate } from '../domain/billing-record.js';
import { addMonths, nthFridayOfMonth } from '../domain/calendar.js';
import type { BillingRecord, HistoryRow, PaymentMethod, Term } from '../domain/records.js';
import { formatInstant } from '../domain/time.js';

/**
 * The demo members' billing periods: each member gets a scenario (a status its current period is
 * in) and a paid history before it. Every value comes from `random` in a fixed order, so the same
 * seed gives the same members.
 */

export type SeedScenario =
  | 'pending_due'
  | 'pending_future'
  | 'achsent'
  | 'completed'
  | 'failed'
  | 'waived'
  | 'cancelled'
  | 'paused'
  | 'inactive'
  | 'refunded'
  | 'retrying'
  | 'parked'
  | 'pastdue'
  /** A card period declined for insufficient funds, in dunning with its next automatic attempt tomorrow. */
  | 'dunning'
  /** A card period Stripe reported paid for less than it owes: an amount_mismatch exception. */
  | 'exception';

/** The last members of a seed of at least this many are the dunning and exception examples. */
const EXAMPLES_FROM = 10;

function scenarioOf(index: number, total: number): SeedScenario {
  if (total >= EXAMPLES_FROM && index === total - 1) return 'exception';
  if (total >= EXAMPLES_FROM && index === total - 2) return 'dunning';
  return pickScenario(index);
}

const SCENARIOS: readonly [SeedScenario, number][] = [
  ['pending_due', 18],
  ['pending_future', 22],
  ['completed', 14],
  ['achsent', 8],
  ['failed', 8],
  ['retrying', 4],
  ['parked', 3],
  ['pastdue', 3],
  ['paused', 5],
  ['cancelled', 5],
  ['inactive', 3],
  ['waived', 3],
  ['refunded', 4],
];

const TIERS = [
  { tier: 'basic:v2', monthly: 999 },
  { tier: 'plus:v3', monthly: 1999 },
  { tier: 'premium:v1', monthly: 3999 },
] as const;
const RAILS: readonly PaymentMethod[] = ['ach', 'pinless', 'card'];
const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export interface UserPlan {
  readonly userId: string;
  readonly scenario: SeedScenario;
  readonly term: Term;
  readonly rail: PaymentMethod;
  readonly tier: string;
  readonly amountCents: number;
  readonly fridayBilling?: number;
  readonly lastFour: string;
}

function pickScenario(index: number): SeedScenario {
  const total = SCENARIOS.reduce((n, [, w]) => n + w, 0);
  let slot = (index * 37) % total;
  for (const [scenario, weight] of SCENARIOS) {
    if (slot < weight) return scenario;
    slot -= weight;
  }
  return 'pending_future';
}

/** `total` members spread over every scenario, tier, term and rail; some bill on the Nth Friday. */
export function planMembers(total: number, random: () => number): UserPlan[] {
  const plans: UserPlan[] = [];
  for (let i = 0; i < total; i++) {
    const tier = TIERS[i % TIERS.length]!;
    const term: Term = i % 5 === 4 ? 'ANNUAL' : 'MONTHLY';
    plans.push({
      userId: `seed-user-${String(i + 1).padStart(4, '0')}`,
      scenario: scenarioOf(i, total),
      term,
      // The examples are card periods: dunning's decline codes and Stripe's exception are card things.
      rail: scenarioOf(i, total) === 'dunning' || scenarioOf(i, total) === 'exception' ? 'card' : RAILS[Math.floor(i / 3) % RAILS.length]!,
      tier: tier.tier,
      amountCents: term === 'ANNUAL' ? tier.monthly * 10 : tier.monthly,
      ...(i % 11 === 0 ? { fridayBilling: 1 + (i % 5) } : {}),
      lastFour: String(1000 + Math.floor(random() * 9000)),
    });
  }
  return plans;
}

/** One member's periods and audit rows as they are built, in order. */
class MemberSeed {
  readonly records: BillingRecord[] = [];
  readonly history: HistoryRow[] = [];
  private stampNanos = 0;

  constructor(
    readonly plan: UserPlan,
    readonly now: Date,
    readonly random: () => number,
    readonly first: Date,
  ) {}

  /** Audit rows of one member get strictly increasing stamps, even within one instant. */
  stamp(at: Date): string {
    return formatInstant(at, ++this.stampNanos);
  }

  period(billingDate: string, createdAt: Date): BillingRecord {
    const { plan } = this;
    return {
      user_id: plan.userId,
      billing_date: billingDate,
      subscription_id: `seed-${plan.userId.slice(-4)}-${billingDate.slice(0, 10)}-${Math.floor(this.random() * 1e9).toString(36)}`,
      amount_cents: plan.amountCents,
      billing_status: 'PENDING',
      last_run_date: this.stamp(createdAt),
      created_date: formatInstant(createdAt),
      process: 'SCHEDULED',
      term: plan.term,
      account_last_four: plan.lastFour,
      tier: plan.tier,
      payment_method: plan.rail,
      payment_attempts: 0,
      version: 0,
      billing_anchor_day: this.first.getUTCDate(),
      ...(plan.fridayBilling !== undefined ? { friday_billing: plan.fridayBilling } : {}),
    };
  }

  /** The balance check an attempt on this rail records on its audit row. */
  decision(r: BillingRecord): Partial<HistoryRow> {
    return r.payment_method === 'card'
      ? { data_payment_method: 'card' }
      : { data_payment_method: r.payment_method, data_available_balance_cents: 20_000 + Math.floor(this.random() * 200_000), data_balance_source: 'available', data_institution_id: `ins_${1 + Math.floor(this.random() * 9)}` };
  }

  /** A period record plus its audit rows: created (PENDING), then each later state. */
  add(record: BillingRecord, states: Partial<BillingRecord>[], at: (i: number) => Date, extra: Partial<HistoryRow>[] = []): BillingRecord {
    this.history.push({ ...record });
    let current = record;
    states.forEach((change, i) => {
      current = { ...current, ...change, last_run_date: this.stamp(at(i)), version: current.version + 1 };
      this.history.push({ ...current, ...(extra[i] ?? {}) });
    });
    this.records.push(current);
    return current;
  }

  /** A successful attempt of the period billed on `date`. */
  collected(date: string): Partial<BillingRecord> {
    return {
      billing_status: this.plan.rail === 'ach' ? 'ACHSENT' : 'COMPLETED',
      payment_attempts: 1,
      transaction_id: `seed_txn_${Math.floor(this.random() * 1e12).toString(36)}`,
      payment_error: '',
      first_attempt_date: formatInstant(paidAt(date)),
      last_attempt_date: formatInstant(paidAt(date)),
    };
  }
}

const paidAt = (date: string) => new Date(Date.parse(date) + 5 * 60_000);

/** First billing date: some whole periods back, so every member has a paid history. */
function firstBillingDate(plan: UserPlan, now: Date, random: () => number): Date {
  const pastPeriods = plan.scenario === 'pastdue' ? 3 : 1 + Math.floor(random() * 3);
  const back = plan.term === 'ANNUAL' ? pastPeriods * 12 : pastPeriods;
  const dueOffset = plan.scenario === 'pending_due' ? Math.floor(random() * 36) * HOUR : (1 + Math.floor(random() * 20)) * DAY;
  let first = addMonths(new Date(now.getTime() - dueOffset), -back);
  first = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), first.getUTCDate(), 9, 0, 0));
  if (plan.fridayBilling !== undefined) {
    first = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), nthFridayOfMonth(first.getUTCFullYear(), first.getUTCMonth(), plan.fridayBilling), 9));
  }
  if (first.getTime() > now.getTime() - DAY) first = new Date(first.getTime() - 31 * DAY);
  return first;
}

/** Builds one member's periods: paid history, then the scenario's current period and what follows it. */
export function seedUser(plan: UserPlan, now: Date, random: () => number): { records: BillingRecord[]; history: HistoryRow[] } {
  const seed = new MemberSeed(plan, now, random, firstBillingDate(plan, now, random));
  const periods: string[] = [];
  for (let date = formatInstant(seed.first); Date.parse(date) <= now.getTime(); ) {
    periods.push(date);
    date = nextPeriodDate({ ...seed.period(date, seed.first), billing_date: date });
  }
  const last = periods[periods.length - 1]!;
  const upcoming = nextPeriodDate({ ...seed.period(last, seed.first), billing_date: last });
  addPaidHistory(seed, periods);
  addCurrentPeriod(seed, periods, upcoming);
  return { records: seed.records, history: seed.history };
}

/** Every period but the current one was collected (ACH: submitted, then settled); a past-due member's last one failed. */
function addPaidHistory(seed: MemberSeed, periods: readonly string[]): void {
  const { plan, now } = seed;
  const current = periods.length - 1;
  for (let i = 0; i < current; i++) {
    const date = periods[i]!;
    const created = i === 0 ? new Date(Date.parse(date) - 2 * DAY) : paidAt(periods[i - 1]!);
    const settled: Partial<BillingRecord> = { billing_status: 'COMPLETED', completed_date: formatInstant(new Date(Date.parse(date) + 2 * DAY)), ...(plan.rail === 'ach' ? { updated_event: 'ACH_SETTLED' as const } : {}) };
    const states = plan.rail === 'ach' ? [seed.collected(date), settled] : [{ ...seed.collected(date), completed_date: formatInstant(paidAt(date)) }];
    const pastDue = plan.scenario === 'pastdue' && i === current - 1;
    if (pastDue) {
      seed.add(seed.period(date, created), [{ billing_status: 'FAILED', payment_attempts: 2, payment_error: 'The payment was declined by the bank.', first_attempt_date: formatInstant(paidAt(date)), last_attempt_date: formatInstant(new Date(now.getTime() - 3 * HOUR)), process: 'RETRY' }], () => paidAt(date), [seed.decision(seed.period(date, created))]);
      continue;
    }
    seed.add(seed.period(date, created), states, (n) => (n === 0 ? paidAt(date) : new Date(Date.parse(date) + 2 * DAY)), [seed.decision(seed.period(date, created))]);
  }
}

/** The current period in the member's scenario, and the next period where the scenario has one. */
function addCurrentPeriod(seed: MemberSeed, periods: readonly string[], upcoming: string): void {
  const { plan, now } = seed;
  const current = periods.length - 1;
  const date = periods[current]!;
  const created = current === 0 ? new Date(Date.parse(date) - 2 * DAY) : paidAt(periods[current - 1]!);
  const record = seed.period(date, created);
  const attemptAt = paidAt(date).getTime() < now.getTime() ? paidAt(date) : new Date(now.getTime() - 60_000);
  const at = () => attemptAt;
  const next = (overrides: Partial<BillingRecord> = {}) => seed.add({ ...seed.period(upcoming, attemptAt), ...overrides }, [], at);
  const terminal = formatInstant(attemptAt);
  switch (plan.scenario) {
    case 'pending_due':
    case 'pastdue':
      seed.add(record, [], at);
      break;
    case 'pending_future':
    case 'completed':
      seed.add(record, [{ ...seed.collected(date), billing_status: 'COMPLETED', completed_date: terminal, ...(plan.rail === 'ach' ? { updated_event: 'ACH_SETTLED' as const } : {}) }], at, [seed.decision(record)]);
      next();
      break;
    case 'achsent':
      seed.add(record, [{ ...seed.collected(date), billing_status: plan.rail === 'ach' ? 'ACHSENT' : 'COMPLETED', ...(plan.rail === 'ach' ? {} : { completed_date: terminal }) }], at, [seed.decision(record)]);
      next();
      break;
    case 'failed':
      seed.add(record, [{ billing_status: 'FAILED', payment_attempts: 1, payment_error: 'The payment was declined by the bank.', first_attempt_date: terminal, last_attempt_date: formatInstant(new Date(now.getTime() - 25 * HOUR)) }], at, [seed.decision(record)]);
      next();
      break;
    case 'waived':
      seed.add(record, [{ billing_status: 'WAIVED', updated_event: 'WAIVED', process: 'UNKNOWN', completed_date: terminal }], at, [{ actor: 'seed-operator', reason: 'goodwill credit' }]);
      next();
      break;
    case 'cancelled':
      seed.add(record, [{ updated_event: 'CANCEL_REQUESTED' }, { billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED', completed_date: terminal }], at);
      break;
    case 'paused':
      seed.add(record, [{ billing_status: 'PAUSED', paused_months: 2, updated_event: 'PAUSED' }, { billing_status: 'SKIPPED', updated_event: 'PAUSE_SKIPPED', process: 'PAUSE', completed_date: terminal }], at);
      next({ billing_status: 'PAUSED', paused_months: 1, updated_event: 'PAUSED', process: 'PAUSE' });
      break;
    case 'inactive':
      seed.add(record, [{ billing_status: 'INACTIVE', updated_event: 'USER_NOT_ACTIVE' }], at);
      break;
    case 'refunded':
      seed.add(record, [{ ...seed.collected(date), billing_status: 'COMPLETED', completed_date: terminal }, { billing_status: 'REFUNDED', updated_event: 'REFUNDED' }], at, [seed.decision(record)]);
      next();
      break;
    case 'retrying':
    case 'parked':
      seed.add(record, [failedAttempts(plan.scenario, date, now)], at);
      break;
    case 'dunning':
      seed.add(record, [declinedInDunning(now)], at, [seed.decision(record)]);
      next();
      break;
    case 'exception':
      seed.add(record, [shortPayment(plan.amountCents, now)], at);
      break;
  }
}

/** Declined once for insufficient funds a day ago (retry_later): dunning retries it tomorrow. */
function declinedInDunning(now: Date): Partial<BillingRecord> {
  const declined = formatInstant(new Date(now.getTime() - DAY));
  return {
    billing_status: 'FAILED',
    payment_attempts: 1,
    transaction_id: 'pi_seed_declined',
    payment_error: 'The card has insufficient funds.',
    first_attempt_date: declined,
    last_attempt_date: declined,
    decline_code: 'insufficient_funds',
    decline_class: 'retry_later',
    dunning_first_declined_at: declined,
    dunning_attempts: 1,
    dunning_next_attempt_at: formatInstant(new Date(now.getTime() + DAY)),
    dunning_presented_at: [declined],
    card_network: 'visa',
  };
}

/** Stripe reported the period's PaymentIntent succeeded for 5.00 less than owed: flagged, still PENDING. */
function shortPayment(amountCents: number, now: Date): Partial<BillingRecord> {
  return { card_exception: { code: 'amount_mismatch', payment_intent_id: 'pi_seed_short', received_cents: Math.max(1, amountCents - 500), currency: 'usd', at: formatInstant(new Date(now.getTime() - 2 * HOUR)) } };
}

/** A saved failure on the ladder: two counted failures (retrying) or the eighth (parked). */
function failedAttempts(scenario: 'retrying' | 'parked', date: string, now: Date): Partial<BillingRecord> {
  return {
    billing_failed_for: `${date}#0`,
    billing_failure_count: scenario === 'retrying' ? 2 : 8,
    billing_failed_at: formatInstant(new Date(now.getTime() - 30 * 60_000)),
    ...(scenario === 'retrying' ? { billing_next_attempt_at: formatInstant(new Date(now.getTime() + 30 * 60_000)) } : {}),
    billing_last_error: 'The payment processor is unavailable.',
  };
}
