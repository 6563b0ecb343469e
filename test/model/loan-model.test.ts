import { randomUUID } from 'node:crypto';
import * as fc from 'fast-check';
import { beforeAll, describe, it } from 'vitest';
import type { PendingAchOutcome, SimulatedCharge } from '../../src/adapters/processor/simulator.js';
import type { CollectionMessage } from '../../src/domain/collections.js';
import { TransientError } from '../../src/domain/errors.js';
import { LOAN_MAX_ATTEMPTS } from '../../src/domain/loan-retries.js';
import type { LoanPayment, LoanPaymentHistoryRow } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { loanPaymentId } from '../../src/handlers/api/loans.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import type { FunctionName } from '../../src/manifest/index.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { FaultInjector, faultyPorts, type FaultSpec } from '../support/faults.js';
import { httpEvent, responseOf } from '../support/http-events.js';
import { achDelivery } from '../support/webhooks.js';
import { DAY, HOUR } from '../support/time.js';
import type { PaymentProcessor } from '../../src/domain/ports/processor.js';
import { railViolations } from './rails.js';

/**
 * Loan payments across their paths (DESIGN 2.7, 4, 4.1): random sequences of a few users' manual
 * payments (a repeat of a request now and then, as a client repeats with its Idempotency-Key),
 * collections runs over the due retries, the bank's outcomes (late, duplicated, redelivered after a
 * 409), processor outcomes (approve, declines of every class, errors, ACH returns), clock moves and
 * crashes of the next process, through the real handlers on DynamoDB Local. Clients repeat what was
 * answered 5xx unless they gave up on it. After each sequence settles (every outcome delivered,
 * every retry run), what the processor took is checked against the payments and their audit rows:
 * - every charge is on the books (the payment or one of its audit rows names its confirmation);
 * - a payment keeps at most one charge's money (settled ACH or collected pinless), has at most
 *   4 attempts, each attempt's key charged once, and at most two re-presented entries;
 * - nothing is charged after the payment is COMPLETED, FAILED, RETURNED or CHARGED_BACK;
 * - the rails, judged from the processor's log of presentments (test/model/rails.ts), never from
 *   the payments: no debit of an instrument after a hold on it committed, no entry re-presented
 *   past NACHA's limit or unflagged;
 * - no bank outcome is left unrecorded (409 `not_yet_recorded` after settling);
 * - each payment's item is its newest audit row;
 * - no answer is a 5xx without an injected fault, and no request is refused as malformed.
 * The one exception, written down in docs/decisions.md: a pinless payment whose process died after
 * the processor collected it, and whose client gave up, stays PENDING with the money taken (no
 * later outcome names it, and nothing can look the key up); the check lists it apart.
 *
 * Knobs: LOAN_MODEL_RUNS (sequences, default 12), LOAN_MODEL_STEPS (at most, default 30),
 * LOAN_MODEL_SEED, LOAN_MODEL_PATH and LOAN_MODEL_SHRINK=1 (replay and shrink a failure), LOAN_MODEL_STATS=1 (prints the final statuses and charges the run reached).
 */

const RUNS = Number(process.env.LOAN_MODEL_RUNS ?? 12);
const STEPS = Number(process.env.LOAN_MODEL_STEPS ?? 30);
const SEED = process.env.LOAN_MODEL_SEED !== undefined ? Number(process.env.LOAN_MODEL_SEED) : 20261202;
/** Replays one sequence of the seed (the path a failure prints); LOAN_MODEL_SHRINK=1 shrinks it. */
const PATH = process.env.LOAN_MODEL_PATH;
const USERS = 3;
const LOAN = 'loan-1';
const PAYMENTS = '/v1/users/{userId}/loans/{loanId}/payments';
/** Final statuses and charges over the run (LOAN_MODEL_STATS=1 prints them): what the sequences reached. */
const STATS: Record<string, number> = {};
const count = (what: string, n = 1) => {
  STATS[what] = (STATS[what] ?? 0) + n;
};
const TERMINAL = new Set(['COMPLETED', 'FAILED', 'RETURNED', 'CHARGED_BACK', 'SKIPPED']);

type Method = 'ach' | 'pinless';
type Step =
  | { readonly kind: 'pay'; readonly user: number; readonly method: Method; readonly amount: number; readonly giveUp: boolean }
  | { readonly kind: 'repeat'; readonly pick: number }
  | { readonly kind: 'collect' }
  | { readonly kind: 'bank'; readonly pick: number }
  | { readonly kind: 'bank_again'; readonly pick: number }
  | { readonly kind: 'outcome'; readonly user: number; readonly outcome: string }
  | { readonly kind: 'clock'; readonly ms: number }
  | { readonly kind: 'fault'; readonly point: 'processor.before' | 'processor.accepted'; readonly mode: 'crash' | 'transient' };

const OUTCOMES = ['approve', 'approve', 'error', 'decline:insufficient_funds', 'decline:stolen_card', 'decline:expired_card', 'ach_return:R01', 'ach_return:R01', 'ach_return:R02', 'ach_return:R10', 'ach_return:R10'];

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('pay' as const), user: fc.nat({ max: USERS - 1 }), method: fc.constantFrom<Method>('ach', 'ach', 'pinless'), amount: fc.constantFrom(500, 4200), giveUp: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('repeat' as const), pick: fc.nat({ max: 20 }) }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'collect' as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('bank' as const), pick: fc.nat({ max: 10 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bank_again' as const), pick: fc.nat({ max: 10 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('outcome' as const), user: fc.nat({ max: USERS - 1 }), outcome: fc.constantFrom(...OUTCOMES) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('clock' as const), ms: fc.constantFrom(20 * 60_000, 2 * HOUR, DAY + HOUR, 3 * DAY, 8 * DAY) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('fault' as const),
      point: fc.constantFrom<'processor.before' | 'processor.accepted'>('processor.before', 'processor.accepted'),
      mode: fc.constantFrom<'crash' | 'transient'>('crash', 'crash', 'transient'),
    }),
  },
);

interface Request {
  readonly user: string;
  readonly key: string;
  readonly body: { amount_cents: number; payment_method: Method; account_last_four: string };
  readonly giveUp: boolean;
  /** Answered 5xx (or not at all): the client repeats it with its key, unless it gave up. */
  unanswered: boolean;
}

class LoanWorld {
  readonly users = Array.from({ length: USERS }, (_, i) => `loan-model-${randomUUID().slice(0, 8)}-u${i}`);
  readonly problems: string[] = [];
  readonly trace: string[] = [];
  private readonly requests: Request[] = [];
  private readonly settings: { users: Record<string, string> } = { users: {} };
  private armed: FaultSpec | undefined;
  /** The bank's outcomes of our debits, in the order the bank sends them, until one is answered. */
  private readonly bankOutbox: PendingAchOutcome[] = [];
  private readonly bankDelivered: PendingAchOutcome[] = [];
  /** Loan retry messages a batch item failure gave back to the queue. */
  private readonly redeliver: CollectionMessage[] = [];

  constructor(private readonly app: TestApp) {
    this.app.simulator.configure(this.settings as never);
  }

  private process(name: FunctionName): { deps: AppDeps; faults?: FaultInjector } {
    // The process before this one has run to its end: a fault armed for it covers what it presented, no more.
    const last = this.faulted.at(-1);
    if (last && last.to === undefined) last.to = this.seq();
    if (!this.armed) return { deps: this.watched(this.app.depsFor(name)) };
    const faults = new FaultInjector([this.armed]);
    this.armed = undefined;
    this.faulted.push({ from: this.seq(), faults });
    return { deps: this.watched(faultyPorts(this.app.depsFor(name), faults)), faults };
  }

  /** What the rails judge needs from outside the system: when each key was first handed over (a lost request looks the same). */
  private readonly handedAt = new Map<string, number>();
  private readonly returnsAccepted = new Map<string, number>();
  /** Processes a fault was armed for, from the log length they started at (each runs to its end before the next step). */
  private readonly faulted: { from: number; to?: number; faults: FaultInjector }[] = [];
  private seq(): number {
    return this.app.simulator.presentments().length;
  }
  private watched(deps: AppDeps): AppDeps {
    const inner: PaymentProcessor = deps.processor;
    return {
      ...deps,
      processor: {
        ...inner,
        submit: (request, signal) => {
          if (!this.handedAt.has(request.idempotency_key)) this.handedAt.set(request.idempotency_key, this.seq());
          return inner.submit(request, signal);
        },
      },
    };
  }

  /** The rails from the processor's log of these users' presentments (test/model/rails.ts). */
  private railProblems(): string[] {
    const mine = new Set(this.users);
    const log = this.app.simulator.presentments().filter((p) => mine.has(p.user_id));
    const unconfirmed = new Set<number>();
    for (const f of this.faulted) if (f.faults.fired.length > 0) for (let s = f.from; s < (f.to ?? this.seq()); s++) unconfirmed.add(s);
    return railViolations(log, { returnsAccepted: this.returnsAccepted, unconfirmed, disputes: [], handedAt: this.handedAt }, { ceilings: true });
  }

  async run(step: Step): Promise<void> {
    this.trace.push(`${formatInstant(this.app.clock.now())} ${JSON.stringify(step)}`);
    switch (step.kind) {
      case 'pay': {
        const user = this.users[step.user]!;
        const request: Request = {
          user,
          key: `k-${this.requests.length}`,
          body: { amount_cents: step.amount, payment_method: step.method, account_last_four: step.method === 'ach' ? '6789' : '4242' },
          giveUp: step.giveUp,
          unanswered: false,
        };
        this.requests.push(request);
        return this.post(request);
      }
      case 'repeat': {
        const request = this.requests[step.pick % Math.max(this.requests.length, 1)];
        return request ? this.post(request) : undefined;
      }
      case 'collect':
        return this.collect();
      case 'bank': {
        this.takeOutcomes();
        const outcome = this.bankOutbox[step.pick % Math.max(this.bankOutbox.length, 1)];
        if (outcome) await this.deliver(outcome);
        return;
      }
      case 'bank_again': {
        const outcome = this.bankDelivered[step.pick % Math.max(this.bankDelivered.length, 1)];
        if (outcome) await this.deliver(outcome);
        return;
      }
      case 'outcome':
        this.settings.users[this.users[step.user]!] = step.outcome;
        this.app.simulator.configure(this.settings as never);
        return;
      case 'clock':
        this.app.clock.advance(step.ms);
        return;
      case 'fault':
        // A crash kills the next process from that point; a transient error fails one call of it.
        this.armed =
          step.mode === 'crash'
            ? { point: step.point, mode: 'crash', nth: 1 }
            : { point: step.point, mode: 'throw', error: () => new TransientError(`injected at ${step.point}`), nth: 1 };
        return;
    }
  }

  private async post(request: Request): Promise<void> {
    const proc = this.process('api');
    const event = httpEvent('POST', { route: PAYMENTS, pathParameters: { userId: request.user, loanId: LOAN }, body: request.body, headers: { 'idempotency-key': request.key }, timeEpoch: this.app.clock.now().getTime() });
    const res = responseOf(await createApiHandler(proc.deps)(event));
    const fired = proc.faults?.fired ?? [];
    this.trace.push(`  POST payment ${request.key} ${request.body.payment_method} ${request.body.amount_cents} → ${res.status} ${res.body?.loc_status ?? res.body?.error?.code ?? ''}${fired.length ? ` (fault ${fired.join(', ')})` : ''}`);
    request.unanswered = res.status >= 500 && res.status !== 502;
    if (res.status === 500 && fired.length === 0) this.problems.push(`POST ${request.key} answered 500 without an injected fault: ${JSON.stringify(res.body)}`);
    // 201/200: made or found; 409: an ACH hold or a concurrent write; 502: the processor failed (PENDING, repeatable).
    if (![200, 201, 409, 500, 502, 503].includes(res.status)) this.problems.push(`POST ${request.key} answered ${res.status}: ${JSON.stringify(res.body)}`);
  }

  private async collect(): Promise<void> {
    this.app.collectionsQueue.clear();
    await createCollectionsJobHandler(this.app.depsFor('collections-job'))(scheduledEvent(formatInstant(this.app.clock.now())), lambdaContext());
    const mine = new Set(this.users);
    const planned = this.app.collectionsQueue.bodies<CollectionMessage>().filter((m) => m.kind === 'loan_payment_retry' && mine.has(m.user_id));
    this.app.collectionsQueue.clear();
    const messages = [...this.redeliver.splice(0), ...planned];
    for (let i = 0; i < messages.length; i += 10) {
      const batch = messages.slice(i, i + 10);
      const records = batch.map((m) => sqsRecord(m));
      const proc = this.process('batch-worker');
      const out = await createBatchWorkerHandler(proc.deps)(sqsEvent(records), lambdaContext());
      for (const f of out.batchItemFailures) this.redeliver.push(batch[records.findIndex((r) => r.messageId === f.itemIdentifier)]!);
    }
    this.trace.push(`  collections: ${planned.length} loan retries planned, ${this.redeliver.length} to deliver again`);
  }

  private takeOutcomes(): void {
    const mine = new Set(this.users);
    for (const outcome of this.app.simulator.takeDueAchOutcomes(this.app.clock.now().getTime())) if (mine.has(outcome.charge.user_id)) this.bankOutbox.push(outcome);
  }

  /** One delivery of a bank outcome; a 409 or 5xx leaves it for the sender to deliver again. */
  private async deliver(outcome: PendingAchOutcome): Promise<boolean> {
    const ref = outcome.charge.reference as { kind: 'loan_payment'; user_id: string; loan_id: string; payment_id: string };
    const body = {
      event_id: `ach-${outcome.charge.confirmation_id}-${outcome.type}`,
      type: outcome.type,
      confirmation_id: outcome.charge.confirmation_id,
      ...(outcome.return_code ? { return_code: outcome.return_code } : {}),
      amount_cents: outcome.charge.amount_cents,
      occurred_at: formatInstant(this.app.clock.now()),
      reference: ref,
    };
    const proc = this.process('ach-handler');
    const res = responseOf(await createAchHandler(proc.deps)(achDelivery(body, { signedAtMs: Date.now() })));
    const fired = proc.faults?.fired ?? [];
    this.trace.push(`  ach ${outcome.type}${outcome.return_code ? ` ${outcome.return_code}` : ''} ${outcome.charge.idempotency_key} → ${res.status} ${JSON.stringify(res.body)}`);
    if (res.status >= 500 && fired.length === 0) this.problems.push(`ach answered ${res.status} without an injected fault: ${JSON.stringify(res.body)}`);
    if (res.status !== 200 && res.status !== 409 && res.status < 500) this.problems.push(`ach answered ${res.status}: ${JSON.stringify(res.body)}`);
    if (res.status !== 200) return false;
    if (outcome.type === 'returned' && !this.returnsAccepted.has(outcome.charge.confirmation_id)) this.returnsAccepted.set(outcome.charge.confirmation_id, this.seq());
    const i = this.bankOutbox.indexOf(outcome);
    if (i >= 0) this.bankOutbox.splice(i, 1);
    if (!this.bankDelivered.includes(outcome)) this.bankDelivered.push(outcome);
    return true;
  }

  /** A quiet system: no fault, every processor approving, clients repeating what they did not give up on, every outcome and retry delivered. */
  async settle(): Promise<void> {
    this.armed = undefined;
    this.settings.users = {};
    this.app.simulator.configure(this.settings as never);
    for (let round = 0; round < 6; round++) {
      for (const request of this.requests) if (request.unanswered && !request.giveUp) await this.post(request);
      this.app.clock.advance(3 * DAY);
      await this.collect();
      this.takeOutcomes();
      for (const outcome of [...this.bankOutbox]) await this.deliver(outcome);
    }
  }

  /** The rules of the module doc, over what the processor took and what the payments say. */
  async check(): Promise<void> {
    const charges = this.app.simulator.charges().filter((c) => this.users.includes(c.user_id) && c.reference.kind === 'loan_payment');
    const byPayment = new Map<string, SimulatedCharge[]>();
    for (const c of charges) {
      const id = (c.reference as { payment_id: string }).payment_id;
      byPayment.set(id, [...(byPayment.get(id) ?? []), c]);
    }
    for (const outcome of this.bankOutbox) this.problems.push(`the bank's ${outcome.type} of ${outcome.charge.idempotency_key} is still unrecorded after settling`);
    const seen: { payment: LoanPayment; history: LoanPaymentHistoryRow[]; taken: SimulatedCharge[] }[] = [];
    for (const request of this.requests) {
      const paymentId = loanPaymentId(request.user, LOAN, request.key);
      const payment = await this.app.deps.payments.get(request.user, LOAN, paymentId);
      const taken = byPayment.get(paymentId) ?? [];
      byPayment.delete(paymentId);
      if (!payment) {
        if (taken.length > 0) this.problems.push(`${request.key}: ${taken.length} charge(s) for a payment that does not exist`);
        continue;
      }
      const history = await this.historyOf(payment);
      this.checkPayment(request, payment, history, taken);
      seen.push({ payment, history, taken });
    }
    this.problems.push(...this.railProblems());
    for (const [paymentId, taken] of byPayment) this.problems.push(`${taken.length} charge(s) for payment ${paymentId}, which no request made`);
  }

  private checkPayment(request: Request, payment: LoanPayment, history: LoanPaymentHistoryRow[], taken: SimulatedCharge[]): void {
    const label = `${request.key} (${payment.loc_payment_method}, ${payment.loc_status}, attempt ${payment.loc_payment_attempts})`;
    count(`payment ${payment.loc_payment_method} ended ${payment.loc_status}`);
    for (const status of new Set(history.map((h) => h.loc_status))) count(`payment ${payment.loc_payment_method} was ${status}`);
    count(`charges ${payment.loc_payment_method}`, taken.length);
    count('charges re-presented', taken.filter((c) => c.reinitiated).length);
    const named = new Set([payment.loc_confirmation_id, ...history.map((h) => h.loc_confirmation_id)].filter(Boolean));
    const abandonedPinless = request.giveUp && payment.loc_status === 'PENDING' && payment.loc_payment_method === 'pinless' && payment.loc_payment_attempts === 0;
    if (abandonedPinless && taken.length > 0) count('pinless collected, abandoned PENDING (known)');
    for (const c of taken) {
      if (!named.has(c.confirmation_id) && !abandonedPinless) this.problems.push(`${label}: charge ${c.idempotency_key} (${c.confirmation_id}) is on no record: money taken and off the books`);
    }
    const kept = taken.filter((c) => c.rail === 'pinless' || c.ach?.result === 'settled');
    if (kept.length > 1) this.problems.push(`${label}: ${kept.length} charges kept their money (${kept.map((c) => c.idempotency_key).join(', ')}): collected twice`);
    const keys = new Set(taken.map((c) => c.idempotency_key));
    if (keys.size !== taken.length) this.problems.push(`${label}: an attempt key charged twice`);
    const allowed = new Set(Array.from({ length: LOAN_MAX_ATTEMPTS }, (_, i) => `${payment.loc_payment_id}:${i + 1}`));
    for (const k of keys) if (!allowed.has(k)) this.problems.push(`${label}: charge key ${k} is beyond attempt ${LOAN_MAX_ATTEMPTS}`);
    if (payment.loc_payment_attempts > LOAN_MAX_ATTEMPTS) this.problems.push(`${label}: more than ${LOAN_MAX_ATTEMPTS} attempts`);
    if (taken.filter((c) => c.reinitiated).length > 2) this.problems.push(`${label}: more than two re-presented entries`);
    const ended = history.filter((h) => TERMINAL.has(h.loc_status)).map((h) => Date.parse(h.loc_last_updated)).sort((a, b) => a - b)[0];
    if (ended !== undefined) {
      for (const c of taken) if (c.submitted_at > ended) this.problems.push(`${label}: ${c.idempotency_key} charged at ${formatInstant(new Date(c.submitted_at))}, after the payment ended`);
    }
    const newest = history[0];
    if (!newest) this.problems.push(`${label}: no audit row`);
    else if (newest.loc_status !== payment.loc_status || newest.loc_payment_attempts !== payment.loc_payment_attempts || newest.loc_confirmation_id !== payment.loc_confirmation_id) {
      this.problems.push(`${label}: the newest audit row says ${newest.loc_status}, attempt ${newest.loc_payment_attempts}, ${newest.loc_confirmation_id ?? 'no confirmation'}`);
    }
  }

  private async historyOf(payment: LoanPayment): Promise<LoanPaymentHistoryRow[]> {
    const rows: LoanPaymentHistoryRow[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.app.deps.payments.listHistory(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id, { limit: 100, cursor });
      rows.push(...page.items);
      cursor = page.next;
    } while (cursor);
    return rows;
  }
}

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ label: 'loan-model' });
});

describe('loan payments against a model of their money', () => {
  it(`keeps every loan payment's money on the books and collected at most once, over ${RUNS} sequences of up to ${STEPS} steps`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 5, maxLength: STEPS, size: 'max' }), async (steps) => {
        const world = new LoanWorld(app);
        for (const step of steps) await world.run(step);
        await world.settle();
        await world.check();
        if (world.problems.length > 0) throw new Error(`${world.problems.join('\n')}\n--- trace ---\n${world.trace.slice(-60).join('\n')}`);
      }),
      { numRuns: RUNS, seed: SEED, ...(PATH !== undefined ? { path: PATH } : {}), endOnFailure: process.env.LOAN_MODEL_SHRINK !== '1' },
    );
    if (process.env.LOAN_MODEL_STATS) console.table(STATS);
  }, 600_000);
});
