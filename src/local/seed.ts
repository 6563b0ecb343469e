import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { actedBy } from '../domain/actors.js';
import { AlreadyExistsError } from '../domain/errors.js';
import type { PaymentSimulator, SimulatedOutcome } from '../adapters/processor/simulator.js';
import type { BillingStore } from '../domain/ports/billing-store.js';
import type { Clock } from '../domain/ports/clock.js';
import type { PaymentsStore } from '../domain/ports/loan-payments.js';
import type { LoanPayment, LoanPaymentStatus } from '../domain/loan-payments.js';
import { formatInstant } from '../domain/time.js';
import type { Logger } from '../runtime/logger.js';
import { DAY, planMembers, seedUser } from './seed-members.js';

/**
 * Demo data for `npm start`: a few hundred members across every billing status, payment rail and
 * term, each with a paid history, written through the real BillingStore (records and their audit
 * rows in the same transactions) and a handful of loan payments through the PaymentsStore, two of
 * them in RETRY and due (RETRY_LOANS), so the first collections run retries them.
 * Deterministic for a given start time, so two fresh starts at the same `--now` look the same.
 */

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
 * Two loan payments in RETRY, due at the seed time, so the first collections run retries both:
 * the simulator approves `approved` and declines the last allowed attempt of `declined`. Fixed ids, for the README.
 */
/** The actor of every seeded audit row (the seeded operator's waive names its own). */
export const SEED_ACTOR = 'system:seed';

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
  const plans = planMembers(total, random);
  const byStatus: Record<string, number> = {};
  let records = 0;
  let historyRows = 0;
  let done = 0;
  const built = plans.map((plan) => ({ plan, ...seedUser(plan, now, random) }));
  // Seeded history was written by no entry point: its rows say so.
  const billing = actedBy(stores.billing, SEED_ACTOR);
  const queue = [...built];
  const worker = async () => {
    for (;;) {
      const chunk = queue.splice(0, 8);
      if (chunk.length === 0) return;
      try {
        await billing.addAll(chunk.flatMap((c) => c.records), chunk.flatMap((c) => c.history));
      } catch (error) {
        // A seed interrupted earlier left some members behind: keep them, add the rest.
        if (!(error instanceof AlreadyExistsError)) throw error;
        for (const c of chunk) {
          try {
            await billing.addAll(c.records, c.history);
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
      await stores.payments.create(payment, { actor: SEED_ACTOR, reason: 'local seed data' });
      loans += 1;
    } catch (error) {
      if (!(error instanceof AlreadyExistsError)) throw error;
    }
  }
  return { users: total, records, historyRows, loanPayments: loans, byStatus };
}

/**
 * The demo data on the first start of a data directory (`seeded.json` marks it; a later start
 * reads what it says), and the simulator outcomes it relies on. Nothing when seeding is off.
 */
export async function seedOnce(input: {
  readonly dataDir: string;
  readonly stores: { billing: BillingStore; payments: PaymentsStore };
  readonly clock: Clock;
  readonly simulator: PaymentSimulator;
  readonly logger: Logger;
}): Promise<SeedResult | undefined> {
  const marker = join(input.dataDir, 'seeded.json');
  let seeded: SeedResult | undefined;
  if (!existsSync(marker)) {
    const started = Date.now();
    seeded = await seedDemoData(input.stores, input.clock.now());
    writeFileSync(marker, `${JSON.stringify({ at: formatInstant(input.clock.now()), ...seeded }, null, 2)}\n`);
    input.logger.info({ users: seeded.users, records: seeded.records, history_rows: seeded.historyRows, loan_payments: seeded.loanPayments, ms: Date.now() - started }, 'seeded demo data');
  } else {
    seeded = parseMarker(readFileSync(marker, 'utf8'));
  }
  // A PUT /local/processor replaces these outcomes.
  input.simulator.configure({ default: 'approve', users: { ...SEED_PROCESSOR_USERS } });
  return seeded;
}

function parseMarker(text: string): SeedResult | undefined {
  try {
    return JSON.parse(text) as SeedResult;
  } catch {
    return undefined;
  }
}
