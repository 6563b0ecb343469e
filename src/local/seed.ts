import { nextPeriodDate } from '../domain/billing-record.js';
import { addMonths, nthFridayOfMonth } from '../domain/calendar.js';
import { AlreadyExistsError } from '../domain/errors.js';
import type { SimulatedOutcome } from '../adapters/processor/simulator.js';
import type { BillingStore } from '../domain/ports/billing-store.js';
import type { PaymentsStore } from '../domain/ports/loan-payments.js';
import type { BillingRecord, HistoryRow, PaymentMethod, Term } from '../domain/records.js';
import type { LoanPayment, LoanPaymentStatus } from '../domain/loan-payments.js';
import { formatInstant } from '../domain/time.js';

/**
 * Demo data for `npm start`: a few hundred members across every billing status, payment rail and
 * term, each with a paid history, written through the real BillingStore (records and their audit
 * rows in the same transactions) and a handful of loan payments through the PaymentsStore, two of
 * them in RETRY and due (RETRY_LOANS), so the first collections run retries them.
 * Deterministic for a given start time, so two fresh starts at the same `--now` look the same.
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
  | 'pastdue';

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
const DAY = 24 * HOUR;

export interface SeedResult {
  readonly users: number;
  readonly records: number;
  readonly historyRows: number;
  readonly loanPayments: number;
  readonly byStatus: Record<string, number>;
}

/** mulberry32: small, fast, deterministic. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface UserPlan {
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

/** Builds one member's periods: paid history, then the scenario's current period and what follows it. */
export function seedUser(plan: UserPlan, now: Date, random: () => number): { records: BillingRecord[]; history: HistoryRow[] } {
  const records: BillingRecord[] = [];
  const history: HistoryRow[] = [];
  let stampNanos = 0;
  const stamp = (at: Date) => formatInstant(at, ++stampNanos);

  // First billing date: some whole periods back, so every member has a paid history.
  const pastPeriods = plan.scenario === 'pastdue' ? 3 : 1 + Math.floor(random() * 3);
  const back = plan.term === 'ANNUAL' ? pastPeriods * 12 : pastPeriods;
  const dueOffset = plan.scenario === 'pending_due' ? Math.floor(random() * 36) * HOUR : (1 + Math.floor(random() * 20)) * DAY;
  let first = addMonths(new Date(now.getTime() - dueOffset), -back);
  first = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), first.getUTCDate(), 9, 0, 0));
  if (plan.fridayBilling !== undefined) {
    first = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), nthFridayOfMonth(first.getUTCFullYear(), first.getUTCMonth(), plan.fridayBilling), 9));
  }
  if (first.getTime() > now.getTime() - DAY) first = new Date(first.getTime() - 31 * DAY);

  const base = (billingDate: string, createdAt: Date): BillingRecord => ({
    user_id: plan.userId,
    billing_date: billingDate,
    subscription_id: `seed-${plan.userId.slice(-4)}-${billingDate.slice(0, 10)}-${Math.floor(random() * 1e9).toString(36)}`,
    amount_cents: plan.amountCents,
    billing_status: 'PENDING',
    last_run_date: stamp(createdAt),
    created_date: formatInstant(createdAt),
    process: 'SCHEDULED',
    term: plan.term,
    account_last_four: plan.lastFour,
    tier: plan.tier,
    payment_method: plan.rail,
    payment_attempts: 0,
    version: 0,
    billing_anchor_day: first.getUTCDate(),
    ...(plan.fridayBilling !== undefined ? { friday_billing: plan.fridayBilling } : {}),
  });
  const decision = (r: BillingRecord): Partial<HistoryRow> =>
    r.payment_method === 'card'
      ? { data_payment_method: 'card' }
      : { data_payment_method: r.payment_method, data_available_balance_cents: 20_000 + Math.floor(random() * 200_000), data_balance_source: 'available', data_institution_id: `ins_${1 + Math.floor(random() * 9)}` };
  /** A period record plus its audit rows: created (PENDING), then each later state. */
  const add = (record: BillingRecord, states: Partial<BillingRecord>[], at: (i: number) => Date, extra: Partial<HistoryRow>[] = []) => {
    history.push({ ...record });
    let current = record;
    states.forEach((change, i) => {
      current = { ...current, ...change, last_run_date: stamp(at(i)), version: current.version + 1 };
      history.push({ ...current, ...(extra[i] ?? {}) });
    });
    records.push(current);
    return current;
  };

  const periods: string[] = [];
  for (let date = formatInstant(first); Date.parse(date) <= now.getTime(); ) {
    periods.push(date);
    date = nextPeriodDate({ ...base(date, first), billing_date: date });
  }
  const upcoming = nextPeriodDate({ ...base(periods[periods.length - 1]!, first), billing_date: periods[periods.length - 1]! });
  const paidAt = (date: string) => new Date(Date.parse(date) + 5 * 60_000);
  const txn = () => `seed_txn_${Math.floor(random() * 1e12).toString(36)}`;
  const collected = (date: string): Partial<BillingRecord> => ({
    billing_status: plan.rail === 'ach' ? 'ACHSENT' : 'COMPLETED',
    payment_attempts: 1,
    transaction_id: txn(),
    payment_error: '',
    first_attempt_date: formatInstant(paidAt(date)),
    last_attempt_date: formatInstant(paidAt(date)),
  });

  // Paid history: every period but the current one was collected (ACH: submitted, then settled).
  const current = periods.length - 1;
  for (let i = 0; i < current; i++) {
    const date = periods[i]!;
    const created = i === 0 ? new Date(Date.parse(date) - 2 * DAY) : paidAt(periods[i - 1]!);
    const settled: Partial<BillingRecord> = { billing_status: 'COMPLETED', completed_date: formatInstant(new Date(Date.parse(date) + 2 * DAY)), ...(plan.rail === 'ach' ? { updated_event: 'ACH_SETTLED' as const } : {}) };
    const states = plan.rail === 'ach' ? [collected(date), settled] : [{ ...collected(date), completed_date: formatInstant(paidAt(date)) }];
    const pastDue = plan.scenario === 'pastdue' && i === current - 1;
    if (pastDue) {
      add(base(date, created), [{ billing_status: 'FAILED', payment_attempts: 2, payment_error: 'The payment was declined by the bank.', first_attempt_date: formatInstant(paidAt(date)), last_attempt_date: formatInstant(new Date(now.getTime() - 3 * HOUR)), process: 'RETRY' }], () => paidAt(date), [decision(base(date, created))]);
      continue;
    }
    add(base(date, created), states, (n) => (n === 0 ? paidAt(date) : new Date(Date.parse(date) + 2 * DAY)), [decision(base(date, created))]);
  }

  const date = periods[current]!;
  const created = current === 0 ? new Date(Date.parse(date) - 2 * DAY) : paidAt(periods[current - 1]!);
  const record = base(date, created);
  const attemptAt = paidAt(date).getTime() < now.getTime() ? paidAt(date) : new Date(now.getTime() - 60_000);
  const at = () => attemptAt;
  const next = (overrides: Partial<BillingRecord> = {}) => add({ ...base(upcoming, attemptAt), ...overrides }, [], at);
  const terminal = formatInstant(attemptAt);
  switch (plan.scenario) {
    case 'pending_due':
    case 'pastdue':
      add(record, [], at);
      break;
    case 'pending_future':
    case 'completed':
      add(record, [{ ...collected(date), billing_status: 'COMPLETED', completed_date: terminal, ...(plan.rail === 'ach' ? { updated_event: 'ACH_SETTLED' as const } : {}) }], at, [decision(record)]);
      next();
      break;
    case 'achsent':
      add(record, [{ ...collected(date), billing_status: plan.rail === 'ach' ? 'ACHSENT' : 'COMPLETED', ...(plan.rail === 'ach' ? {} : { completed_date: terminal }) }], at, [decision(record)]);
      next();
      break;
    case 'failed':
      add(record, [{ billing_status: 'FAILED', payment_attempts: 1, payment_error: 'The payment was declined by the bank.', first_attempt_date: terminal, last_attempt_date: formatInstant(new Date(now.getTime() - 25 * HOUR)) }], at, [decision(record)]);
      next();
      break;
    case 'waived':
      add(record, [{ billing_status: 'WAIVED', updated_event: 'WAIVED', process: 'UNKNOWN', completed_date: terminal }], at, [{ actor: 'seed-operator', reason: 'goodwill credit' }]);
      next();
      break;
    case 'cancelled':
      add(record, [{ updated_event: 'CANCEL_REQUESTED' }, { billing_status: 'CANCELLED', updated_event: 'CANCEL_COMPLETED', completed_date: terminal }], at);
      break;
    case 'paused':
      add(record, [{ billing_status: 'PAUSED', paused_months: 2, updated_event: 'PAUSED' }, { billing_status: 'SKIPPED', updated_event: 'PAUSE_SKIPPED', process: 'PAUSE', completed_date: terminal }], at);
      next({ billing_status: 'PAUSED', paused_months: 1, updated_event: 'PAUSED', process: 'PAUSE' });
      break;
    case 'inactive':
      add(record, [{ billing_status: 'INACTIVE', updated_event: 'USER_NOT_ACTIVE' }], at);
      break;
    case 'refunded':
      add(record, [{ ...collected(date), billing_status: 'COMPLETED', completed_date: terminal }, { billing_status: 'REFUNDED', updated_event: 'REFUNDED' }], at, [decision(record)]);
      next();
      break;
    case 'retrying':
    case 'parked': {
      const count = plan.scenario === 'retrying' ? 2 : 8;
      add(record, [{
        billing_failed_for: `${date}#0`,
        billing_failure_count: count,
        billing_failed_at: formatInstant(new Date(now.getTime() - 30 * 60_000)),
        ...(plan.scenario === 'retrying' ? { billing_next_attempt_at: formatInstant(new Date(now.getTime() + 30 * 60_000)) } : {}),
        billing_last_error: 'The payment processor is unavailable.',
      }], at);
      break;
    }
  }
  return { records, history };
}

function loanPayments(userId: string, now: Date, random: () => number, rail: 'ach' | 'pinless'): LoanPayment[] {
  const loanId = `loan-${userId.slice(-4)}`;
  const statuses: LoanPaymentStatus[] = ['COMPLETED', 'COMPLETED', rail === 'ach' ? 'ACHSENT' : 'COMPLETED', 'PENDING'];
  return statuses.map((status, i) => {
    const at = formatInstant(new Date(now.getTime() - (statuses.length - i) * 14 * DAY));
    return {
      loc_user_id: userId,
      loc_loan_id: loanId,
      loc_payment_id: `pay-${userId.slice(-4)}-${i + 1}`,
      loc_amount: 5_000 + Math.floor(random() * 20) * 500,
      loc_status: status,
      loc_payment_method: rail,
      loc_process: i === 0 ? 'MANUAL' : 'AUTO',
      ...(status !== 'PENDING' ? { loc_confirmation_id: `seed_loan_${Math.floor(random() * 1e12).toString(36)}` } : {}),
      loc_account_last_four: String(1000 + Math.floor(random() * 9000)),
      loc_payment_attempts: status === 'PENDING' ? 0 : 1,
      loc_created_date: at,
      loc_last_updated: at,
      version: status === 'PENDING' ? 0 : 1,
    };
  });
}

/**
 * Two loan payments in RETRY whose next attempt is due at the seed time (docs/design.md 2.7): the
 * first collections run retries both. `approved` was declined once (insufficient funds, a day ago)
 * and the simulator approves its retry: COMPLETED. `declined` has had 3 declined attempts and the
 * simulator declines its 4th, the last allowed: FAILED (max retries). Fixed ids, for the README.
 */
export const RETRY_LOANS = {
  approved: { user_id: 'seed-loan-0001', loan_id: 'loan-retry', payment_id: 'pay-retry-approved' },
  declined: { user_id: 'seed-loan-0002', loan_id: 'loan-retry', payment_id: 'pay-retry-declined' },
} as const;

/** The simulator's per-user outcomes the demo data relies on (applied at start when seeding is on). */
export const SEED_PROCESSOR_USERS: Readonly<Record<string, SimulatedOutcome>> = {
  [RETRY_LOANS.declined.user_id]: 'decline:insufficient_funds',
};

function retryLoanPayments(now: Date): LoanPayment[] {
  const ago = (days: number) => formatInstant(new Date(now.getTime() - days * DAY));
  const due = formatInstant(now);
  const retry = (ids: { user_id: string; loan_id: string; payment_id: string }, attempts: number, firstDeclinedDaysAgo: number): LoanPayment => ({
    loc_user_id: ids.user_id,
    loc_loan_id: ids.loan_id,
    loc_payment_id: ids.payment_id,
    loc_amount: 12_500,
    loc_status: 'RETRY',
    loc_payment_method: 'pinless',
    loc_process: attempts > 1 ? 'RETRY' : 'AUTO',
    loc_confirmation_id: `seed_loan_declined_${ids.payment_id}`,
    loc_account_last_four: '4242',
    loc_payment_attempts: attempts,
    loc_decline_code: 'insufficient_funds',
    loc_decline_class: 'retry_later',
    loc_update_reason: 'The payment was declined by the bank.',
    loc_first_declined_at: ago(firstDeclinedDaysAgo),
    loc_next_attempt_at: due,
    loc_created_date: ago(firstDeclinedDaysAgo),
    loc_last_updated: ago(attempts > 1 ? 1 : firstDeclinedDaysAgo),
    version: attempts,
  });
  return [retry(RETRY_LOANS.approved, 1, 1), retry(RETRY_LOANS.declined, 3, 3)];
}

export async function seedDemoData(
  stores: { billing: BillingStore; payments: PaymentsStore },
  now: Date,
  options: { users?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<SeedResult> {
  const total = options.users ?? 300;
  const random = prng(Math.floor(now.getTime() / DAY));
  const plans: UserPlan[] = [];
  for (let i = 0; i < total; i++) {
    const tier = TIERS[i % TIERS.length]!;
    const term: Term = i % 5 === 4 ? 'ANNUAL' : 'MONTHLY';
    plans.push({
      userId: `seed-user-${String(i + 1).padStart(4, '0')}`,
      scenario: pickScenario(i),
      term,
      rail: RAILS[Math.floor(i / 3) % RAILS.length]!,
      tier: tier.tier,
      amountCents: term === 'ANNUAL' ? tier.monthly * 10 : tier.monthly,
      ...(i % 11 === 0 ? { fridayBilling: 1 + (i % 5) } : {}),
      lastFour: String(1000 + Math.floor(random() * 9000)),
    });
  }
  const byStatus: Record<string, number> = {};
  let records = 0;
  let historyRows = 0;
  let done = 0;
  const built = plans.map((plan) => ({ plan, ...seedUser(plan, now, random) }));
  const queue = [...built];
  const worker = async () => {
    for (;;) {
      const chunk = queue.splice(0, 8);
      if (chunk.length === 0) return;
      try {
        await stores.billing.addAll(chunk.flatMap((c) => c.records), chunk.flatMap((c) => c.history));
      } catch (error) {
        // A seed interrupted earlier left some members behind: keep them, add the rest.
        if (!(error instanceof AlreadyExistsError)) throw error;
        for (const c of chunk) {
          try {
            await stores.billing.addAll(c.records, c.history);
          } catch (inner) {
            if (!(inner instanceof AlreadyExistsError)) throw inner;
          }
        }
      }
      for (const c of chunk) {
        records += c.records.length;
        historyRows += c.history.length;
        for (const r of c.records) byStatus[r.billing_status] = (byStatus[r.billing_status] ?? 0) + 1;
      }
      done += chunk.length;
      options.onProgress?.(done, total);
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));

  let loans = 0;
  const seededLoans = plans.filter((_, i) => i % 20 === 7).flatMap((plan) => loanPayments(plan.userId, now, random, plan.rail === 'ach' ? 'ach' : 'pinless'));
  for (const payment of [...seededLoans, ...retryLoanPayments(now)]) {
    try {
      await stores.payments.create(payment, { actor: 'system:seed', reason: 'local seed data' });
      loans += 1;
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
  }
  return { users: total, records, historyRows, loanPayments: loans, byStatus };
}
