import { randomUUID } from 'node:crypto';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { simulatedCustomerId, type SimulatedCharge } from '../../src/adapters/processor/simulator.js';
import { countRails, railViolations, type RailFacts } from './rails.js';
import { publishedViolations } from './published.js';
import { MemberReads, writeWatchOf, type WriteWatch } from './write-watch.js';
import { gaugeProblems, historyProblems, ModelViolation, unbookedCharges } from './checks.js';
import { declinedIntentId, HandOffLog, type SubmissionRecorder } from './observers.js';
import { dunningState } from '../../src/domain/dunning.js';
import { failureState } from '../../src/domain/ladder.js';
import type { PaymentProcessor } from '../../src/domain/ports/processor.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createRetryRunWorkerHandler } from '../../src/handlers/retry-run-worker.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import type { FunctionName } from '../../src/manifest/index.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import type { TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { FaultInjector, faultyPorts, type FaultSpec } from '../support/faults.js';
import { httpEvent, responseOf } from '../support/http-events.js';
import { achDelivery, stripeDelivery, stripeEvent } from '../support/webhooks.js';
import {
  applyDueDateChange,
  applyReversal,
  applyWaive,
  dunningViolations,
  expectMembership,
  iso,
  ms,
  newModel,
  recordSlot,
  openChain,
  OPEN_STATUSES,
  violations,
  type MemberModel,
  type MembershipInput,
  type ModelState,
  type ObservedCharge,
  type ObservedRecord,
  type Plan,
} from './reference-model.js';

/**
 * The system under test, driven the way the outside world drives it: Kinesis records to the
 * memberships consumer, the schedule to the collections-job and its messages to the batch-worker,
 * signed Stripe and ACH webhooks, and API Gateway v2 events to the API, all handlers built from
 * the real AppDeps on DynamoDB Local. Deliveries the handler refused are delivered again later, as
 * Kinesis, Stripe and the bank would (a user's membership records in order, behind a failed one).
 */

type Json = Record<string, any>;

interface PendingDelivery {
  readonly label: string;
  /** true when delivered (accepted), false to try again later. */
  readonly attempt: () => Promise<boolean>;
}

interface BankOutcome {
  readonly charge: SimulatedCharge;
  readonly type: 'settled' | 'returned';
  readonly return_code?: string;
}

export interface SentMembership {
  readonly user: number;
  readonly body: Json;
  readonly input: MembershipInput;
}

export class BillingWorld {
  readonly users: string[];
  readonly model: ModelState;
  /** Violations found by the harness itself (answers, replays); the model's come from `check`. */
  readonly problems: string[] = [];
  readonly trace: string[] = [];
  private armed: FaultSpec | undefined;
  private readonly membershipQueues: Map<string, SentMembership[]>;
  private readonly pending: PendingDelivery[] = [];
  readonly sentMemberships: SentMembership[] = [];
  readonly sentStripe: Json[] = [];
  private readonly bankOutbox: BankOutcome[] = [];
  readonly bankDelivered: Json[] = [];
  /** ACH outcomes the system answered 200 for, by confirmation id: it must not leave that submission ACHSENT. */
  private readonly achAnswered = new Map<string, string>();
  private readonly settings: { default: 'approve'; users: Record<string, string>; accounts: Record<string, { status: 'active' | 'banned'; status_since?: string; available_balance_cents?: number; current_balance_cents?: number }> };
  private keyCounter = 0;
  lastPayKey: string | undefined;
  /** Writes naming a member: only a member some write named since the last read is read again (records, history, listing). */
  private readonly writes: WriteWatch;
  private readonly recordReads: MemberReads<(ObservedRecord & Json)[]>;
  private readonly historyReads: MemberReads<Json[]>;
  private readonly visibleReads: MemberReads<Map<number, string>>;
  /** The member's write generation at its last check, and the table's at the last gauge check. */
  private readonly checkedAt = new Map<string, number>();
  private gaugesCheckedAt: number | undefined;
  /** Keys the system may have handed to the processor, and since when (C2's F11 rule). */
  readonly handOffs: HandOffLog;
  /** Known, assigned bugs whose paths the commands avoid for now (KNOWN_BUGS in the test). */
  known: ReadonlySet<string> = new Set();
  /** What the outside world saw the system accept, for the rails (test/model/rails.ts). */
  readonly rails = {
    returnsAccepted: new Map<string, number>(),
    faulted: [] as { from: number; to: number; faults: FaultInjector }[],
    disputes: [] as { confirmation_id: string; from: number; until?: number }[],
    handedAt: new Map<string, number>(),
    initiatedBy: new Map<number, 'merchant' | 'customer'>(),
  };
  /** Whether the network ceilings are judged (the test turns them off only on MODEL_CEILINGS=0). */
  ceilings = true;
  /** Loan payment requests made through the API, for repeats (the client's Idempotency-Key). */
  readonly loanRequests: { user: number; key: string; body: Json }[] = [];

  constructor(
    readonly app: TestApp,
    private readonly recorder: SubmissionRecorder,
    userCount: number,
    start: string,
  ) {
    const run = randomUUID().slice(0, 8);
    this.users = Array.from({ length: userCount }, (_, i) => `m-${run}-u${i}`);
    this.model = newModel(this.users);
    this.membershipQueues = new Map(this.users.map((u) => [u, []]));
    this.settings = { default: 'approve', users: {}, accounts: {} };
    app.simulator.configure(this.settings as never);
    app.clock.set(start);
    this.handOffs = new HandOffLog(() => this.now());
    this.writes = writeWatchOf(app);
    this.recordReads = new MemberReads(this.writes, (user) => this.readRecords(user));
    this.historyReads = new MemberReads(this.writes, (user) => this.readHistoryRows(user));
    this.visibleReads = new MemberReads(this.writes, (user) => this.readVisible(user));
  }

  /** The next check reads every member and the gauges again, whatever the writes were. */
  touchAll(): void {
    for (const reads of [this.recordReads, this.historyReads, this.visibleReads]) reads.forget();
    this.checkedAt.clear();
    this.gaugesCheckedAt = undefined;
  }

  now(): number {
    return this.app.clock.now().getTime();
  }

  member(i: number): MemberModel {
    return this.model.members[i]!;
  }

  /* ---------------- processes and faults ---------------- */

  arm(spec: FaultSpec): void {
    this.armed = spec;
  }

  /** The deps of a `name` process without a fault: the recorded processor, the hand-offs and leases watched. */
  private base(name: FunctionName): AppDeps {
    const deps = this.app.depsFor(name, { processor: this.watch(this.handOffs.processor(this.recorder)) });
    return { ...deps, locks: this.handOffs.locks(deps.locks) };
  }

  /** Log length now: a presentment made from here on has this seq or a later one. */
  seq(): number {
    return this.app.simulator.presentments().length;
  }

  /** Notes when each key was first handed over, who started it, and (faulted) which presentments a fault may have cut short. */
  private watch(inner: PaymentProcessor, faults?: FaultInjector): PaymentProcessor {
    return {
      submit: async (request, signal) => {
        const from = this.seq();
        if (!this.rails.handedAt.has(request.idempotency_key)) this.rails.handedAt.set(request.idempotency_key, from);
        try {
          return await inner.submit(request, signal);
        } finally {
          const to = this.seq();
          for (let s = from; s < to; s++) this.rails.initiatedBy.set(s, this.recorder.initiator === 'customer' ? 'customer' : 'merchant');
          if (faults) this.rails.faulted.push({ from, to, faults });
        }
      },
    };
  }

  /** The deps of the next `name` process: the armed fault, if any, applies to it alone. */
  private process(name: FunctionName): { deps: AppDeps; faults?: FaultInjector } {
    if (!this.armed) return { deps: this.base(name) };
    const faults = new FaultInjector([this.armed]);
    this.armed = undefined;
    const granted = this.app.depsFor(name, { processor: this.recorder });
    const deps = faultyPorts({ ...granted, locks: this.handOffs.locks(granted.locks) }, faults);
    // The hand-off is seen outside the faults: an attempt that called the port may have reached the processor.
    return { deps: { ...deps, processor: this.watch(this.handOffs.processor(deps.processor), faults) }, faults };
  }

  /* ---------------- reading the system ---------------- */

  /** The member's records as a consistent read now returns them. */
  records(user: string): Promise<(ObservedRecord & Json)[]> {
    return this.recordReads.read(user);
  }

  private async readRecords(user: string): Promise<(ObservedRecord & Json)[]> {
    const out: Json[] = [];
    let start: Json | undefined;
    do {
      const page = await this.app.db.doc.send(
        new QueryCommand({
          TableName: this.app.db.tables.billingActivity,
          KeyConditionExpression: 'user_id = :u',
          ExpressionAttributeValues: { ':u': user },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      out.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return out.map((item) => ({ ...item, amount_cents: Math.round(Number(item.amount) * 100) })) as (ObservedRecord & Json)[];
  }

  historyRows(user: string): Promise<Json[]> {
    return this.historyReads.read(user);
  }

  private async readHistoryRows(user: string): Promise<Json[]> {
    const out: Json[] = [];
    let start: Json | undefined;
    do {
      const page = await this.app.db.doc.send(
        new QueryCommand({
          TableName: this.app.db.tables.billingActivityHistory,
          KeyConditionExpression: 'user_id = :u',
          ExpressionAttributeValues: { ':u': user },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      out.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  charges(user: string): ObservedCharge[] {
    return this.app.simulator
      .charges()
      .filter((c) => c.user_id === user && c.reference.kind === 'subscription')
      .map((c) => {
        const ref = c.reference as { billing_date: string; subscription_id: string };
        return {
          user_id: c.user_id,
          billing_date: ref.billing_date,
          subscription_id: ref.subscription_id,
          amount_cents: c.amount_cents,
          confirmation_id: c.confirmation_id,
          submitted_at: c.submitted_at,
          rail: c.rail,
          idempotency_key: c.idempotency_key,
        };
      });
  }

  /** What the API lists for the user (every page): billing_date (ms) → status as shown. */
  visible(user: string): Promise<Map<number, string>> {
    return this.visibleReads.read(user);
  }

  private async readVisible(user: string): Promise<Map<number, string>> {
    const shown = new Map<number, string>();
    let next: string | null = null;
    for (let pages = 0; pages < 20; pages++) {
      const res = await this.api('GET', '/v1/users/{userId}/subscriptions', { userId: user }, undefined, { limit: '100', ...(next ? { next } : {}) }, false);
      if (res.status !== 200) {
        this.problems.push(`GET subscriptions of ${user} answered ${res.status} ${JSON.stringify(res.body)}`);
        return shown;
      }
      for (const item of res.body.items as Json[]) shown.set(ms(item.billing_date), item.billing_status);
      next = res.body.next;
      if (!next) break;
    }
    return shown;
  }

  /* ---------------- the API ---------------- */

  async api(
    method: string,
    route: string,
    params: Record<string, string>,
    body?: unknown,
    query?: Record<string, string>,
    faulty = true,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: any; fired: string[] }> {
    const proc = faulty ? this.process('api') : { deps: this.base('api') };
    const event = httpEvent(method, { route, pathParameters: params, ...(body !== undefined ? { body } : {}), ...(query ? { query } : {}), headers });
    let res;
    // A manual pay is the customer's own payment; retry-billing an operator's (DESIGN 5b): neither is an automatic attempt.
    this.recorder.initiator = route.endsWith('/pay') ? 'customer' : route.endsWith('/retry-billing') ? 'operator' : 'merchant';
    try {
      res = responseOf(await createApiHandler(proc.deps)(event));
    } catch (error) {
      this.problems.push(`${method} ${route} threw ${String(error)}`);
      return { status: 0, body: undefined, fired: proc.faults?.fired ?? [] };
    } finally {
      this.recorder.initiator = 'merchant';
    }
    const fired = proc.faults?.fired ?? [];
    if (res.status >= 500 && fired.length === 0 && res.status !== 502) {
      this.problems.push(`${method} ${route} answered ${res.status} without an injected fault: ${JSON.stringify(res.body)}`);
    }
    return { ...res, fired };
  }

  /* ---------------- memberships (Kinesis) ---------------- */

  membershipBody(user: number, type: MembershipInput['type'], extra: { months?: number; plan?: Plan; occurredAt?: number } = {}): SentMembership {
    const userId = this.users[user]!;
    const occurredAt = extra.occurredAt ?? this.now();
    const body: Json = { event_id: `ev-${randomUUID()}`, type, user_id: userId, occurred_at: iso(occurredAt) };
    if (type === 'PAUSE') body.months = extra.months;
    if (type === 'NEW') {
      const plan = extra.plan!;
      body.plan = {
        amount: (plan.amountCents / 100).toFixed(2),
        term: plan.term,
        tier: 'plus:v3',
        payment_method: plan.method,
        account_last_four: '6789',
        first_billing_date: iso(plan.firstDate),
        ...(plan.friday !== undefined ? { friday_billing: plan.friday } : {}),
      };
    }
    const input: MembershipInput = { event_id: body.event_id, type, occurredAt, ...(extra.months !== undefined ? { months: extra.months } : {}), ...(extra.plan ? { plan: extra.plan } : {}) };
    return { user, body, input };
  }

  /** Puts a membership event on the stream; the world's account directory learns of bans at once. */
  async sendMembership(sent: SentMembership, remember = true): Promise<void> {
    const userId = this.users[sent.user]!;
    // The account directory follows the member's real state: a replay or a late (stale) delivery does not change it.
    const stale = this.member(sent.user).newestAppliedAt !== undefined && sent.input.occurredAt < this.member(sent.user).newestAppliedAt!;
    if (remember && !stale && sent.input.type === 'BAN') this.setAccount(userId, 'banned');
    if (remember && !stale && sent.input.type === 'REACTIVATE') this.setAccount(userId, 'active');
    if (remember) this.sentMemberships.push(sent);
    this.membershipQueues.get(userId)!.push(sent);
    await this.drainMemberships(userId);
    // A ban or a waive orders against charges by time: what happens next is strictly later.
    if (sent.input.type === 'BAN' || sent.input.type === 'REACTIVATE') this.app.clock.advance(1);
  }

  /** Types of the user's membership records still waiting on the stream (behind a refused one). */
  queuedTypes(user: number): string[] {
    return this.membershipQueues.get(this.users[user]!)!.map((q) => q.input.type);
  }

  private stamped(records: readonly Json[], eventId: string): boolean {
    return records.some((r) => r.membership_event_id === eventId || (Array.isArray(r.membership_event_ids) && r.membership_event_ids.includes(eventId)));
  }

  /** Delivers the user's queued membership records in order until one is refused (Kinesis retries it later). */
  async drainMemberships(userId: string): Promise<void> {
    const queue = this.membershipQueues.get(userId)!;
    const m = this.model.members[this.users.indexOf(userId)]!;
    while (queue.length > 0) {
      const sent = queue[0]!;
      const before = await this.records(userId);
      const now = this.now();
      const expectation = expectMembership(this.model, m, sent.input, now, before);
      const wasStamped = this.stamped(before, sent.input.event_id);
      const proc = this.process('memberships-consumer');
      let failed: boolean;
      try {
        const out = await createMembershipsConsumerHandler(proc.deps)(kinesisEvent([kinesisRecord(sent.body)]), lambdaContext());
        failed = out.batchItemFailures.length > 0;
      } catch (error) {
        this.problems.push(`memberships-consumer threw ${String(error)}`);
        failed = true;
      }
      const after = await this.records(userId);
      const applied = !wasStamped && this.stamped(after, sent.input.event_id);
      const label = `${sent.input.type} ${sent.input.event_id.slice(0, 11)} (occurred ${iso(sent.input.occurredAt)})`;
      this.trace.push(`  ${userId}: ${label} → ${failed ? 'refused (redelivered later)' : 'accepted'}; ${applied ? 'applied' : 'not applied'}; model: ${expectation.kind} (${expectation.why})`);
      switch (expectation.kind) {
        case 'apply':
          if (applied) expectation.apply();
          else if (!failed) this.problems.push(`${userId}: ${label} was accepted but changed nothing; the model expected it to apply (${expectation.why})`);
          break;
        case 'noop':
          if (applied) this.problems.push(`${userId}: ${label} was applied, but it must be a no-op: ${expectation.why}`);
          break;
        case 'either':
          if (applied || !failed) expectation.decide(after, applied);
          break;
      }
      if (failed) return;
      queue.shift();
    }
  }

  /** The directory says since when the account has its status, as a real one would (the attempt's account gate reads it). */
  private setAccount(userId: string, status: 'active' | 'banned'): void {
    const before = this.settings.accounts[userId];
    const since = before?.status === status && before.status_since !== undefined ? before.status_since : iso(this.now());
    this.settings.accounts[userId] = { ...before, status, status_since: since };
    this.app.simulator.configure(this.settings as never);
  }

  /** The balance the account directory reports (the scheduled path's gate); undefined: none observed. */
  setBalance(user: number, cents: number | undefined): void {
    const userId = this.users[user]!;
    const { available_balance_cents: _a, current_balance_cents: _c, ...rest } = this.settings.accounts[userId] ?? { status: 'active' as const };
    this.settings.accounts[userId] = { ...rest, status: rest.status ?? 'active', ...(cents !== undefined ? { available_balance_cents: cents, current_balance_cents: cents } : {}) };
    this.app.simulator.configure(this.settings as never);
  }

  /** A signed balance webhook through its function, then its queue message to the webhook-balance-worker. */
  async balanceWebhook(user: number, cents: number): Promise<void> {
    const userId = this.users[user]!;
    const body = JSON.stringify({ event_id: `bal-${randomUUID()}`, user_id: userId, institution_id: 'ins_1', available_balance_cents: cents, current_balance_cents: cents, occurred_at: iso(this.now()) });
    const queue = this.app.balanceEventsQueue;
    queue.clear();
    const signature = signPayload(body, this.app.deps.secrets.balanceWebhook, Math.floor(Date.now() / 1000));
    const res = responseOf(await createBalanceWebhookHandler(this.base('balance-webhook'))(httpEvent('POST', { route: '/webhooks/balance', body, headers: { 'x-balance-signature': signature } })));
    this.trace.push(`  balance webhook ${cents} → ${res.status}`);
    if (res.status !== 202) this.problems.push(`balance webhook answered ${res.status} ${JSON.stringify(res.body)}`);
    const messages = queue.sent.splice(0);
    if (messages.length === 0) return;
    const proc = this.process('webhook-balance-worker');
    await createBalanceWorkerHandler(proc.deps)(sqsEvent(messages.map((m) => sqsRecord(m.body, { messageId: m.id, queue: 'test-balance-events' }))), lambdaContext());
    this.collectBankOutcomes();
  }

  setOutcome(user: number, outcome: string): void {
    this.settings.users[this.users[user]!] = outcome;
    this.app.simulator.configure(this.settings as never);
  }

  /* ---------------- webhooks ---------------- */

  /** Delivers a Stripe event (signed now); a refusal (409, 5xx) is delivered again later, re-signed. */
  async sendStripe(body: Json, onAnswer: (res: { status: number; body: any }) => Promise<void> | void, remember = true): Promise<void> {
    if (remember) this.sentStripe.push(body);
    const deliver = async (): Promise<boolean> => {
      const proc = this.process('stripe-webhook');
      const res = responseOf(await createStripeWebhookHandler(proc.deps)(stripeDelivery(body, { signedAtMs: Date.now() })));
      this.trace.push(`  stripe ${body.type} ${body.id.slice(0, 12)} → ${res.status} ${JSON.stringify(res.body)}`);
      if (res.status === 409 || res.status >= 500) {
        if (res.status >= 500 && proc.faults?.fired.length === 0) this.problems.push(`stripe webhook answered ${res.status} without an injected fault`);
        return false;
      }
      if (res.status !== 200) this.problems.push(`stripe webhook answered ${res.status}: ${JSON.stringify(res.body)}`);
      await onAnswer(res);
      return true;
    };
    if (!(await deliver())) this.pending.push({ label: `stripe ${body.type}`, attempt: deliver });
  }

  async sendAch(body: Json, onAnswer: (res: { status: number; body: any }) => Promise<void> | void): Promise<void> {
    const deliver = async (): Promise<boolean> => {
      const proc = this.process('ach-handler');
      const res = responseOf(await createAchHandler(proc.deps)(achDelivery(body, { signedAtMs: Date.now() })));
      this.trace.push(`  ach ${body.type}${body.return_code ? ` ${body.return_code}` : ''} ${String(body.confirmation_id).slice(0, 12)} → ${res.status} ${JSON.stringify(res.body)}`);
      if (res.status === 409 || res.status >= 500) {
        if (res.status >= 500 && proc.faults?.fired.length === 0) this.problems.push(`ach webhook answered ${res.status} without an injected fault`);
        return false;
      }
      if (res.status !== 200) this.problems.push(`ach webhook answered ${res.status}: ${JSON.stringify(res.body)}`);
      this.achAnswered.set(body.confirmation_id, `${body.type}${body.return_code ? ` ${body.return_code}` : ''} answered ${JSON.stringify(res.body)}`);
      if (body.type === 'returned' && !this.rails.returnsAccepted.has(body.confirmation_id)) this.rails.returnsAccepted.set(body.confirmation_id, this.seq());
      await onAnswer(res);
      return true;
    };
    if (!(await deliver())) this.pending.push({ label: `ach ${body.type}`, attempt: deliver });
  }

  /** The bank's outcomes of accepted ACH debits, as the simulator decides them. */
  collectBankOutcomes(): void {
    const mine = new Set(this.users);
    for (const outcome of this.app.simulator.takeDueAchOutcomes(this.now())) {
      if (mine.has(outcome.charge.user_id)) this.bankOutbox.push(outcome);
      else this.app.simulator.redeliver(outcome.charge.confirmation_id);
    }
  }

  bankOutcomesOf(user: number): BankOutcome[] {
    return this.bankOutbox.filter((o) => o.charge.user_id === this.users[user]);
  }

  async deliverBankOutcome(outcome: BankOutcome): Promise<void> {
    if (this.known.has('ach_outcome_before_record')) {
      const ref = outcome.charge.reference as { user_id: string; billing_date: string };
      const record = (await this.records(ref.user_id)).find((r) => r.billing_date === ref.billing_date);
      if (record && record.transaction_id !== outcome.charge.confirmation_id && (record.billing_status === 'PENDING' || record.billing_status === 'FAILED')) return;
    }
    const i = this.bankOutbox.indexOf(outcome);
    if (i >= 0) this.bankOutbox.splice(i, 1);
    const ref = outcome.charge.reference as { user_id: string; billing_date: string };
    const reference = outcome.charge.reference.kind === 'loan_payment' ? outcome.charge.reference : { kind: 'subscription', user_id: ref.user_id, billing_date: ref.billing_date };
    const body = {
      event_id: `ach_${randomUUID()}`,
      type: outcome.type,
      confirmation_id: outcome.charge.confirmation_id,
      ...(outcome.return_code ? { return_code: outcome.return_code } : {}),
      amount_cents: outcome.charge.amount_cents,
      occurred_at: iso(this.now()),
      reference,
    };
    this.bankDelivered.push(body);
    await this.sendAchBody(body);
  }

  /** Sends an ACH body (first delivery or a duplicate); a recorded return or chargeback gives the money back (`countReversal`). */
  async sendAchBody(body: Json): Promise<void> {
    const user = this.users.indexOf(body.reference.user_id);
    await this.sendAch(body, (res) => {
      if (body.type === 'settled' || body.reference.kind !== 'subscription') return;
      const recorded = res.body?.status === 'applied' || (res.body?.status === 'ignored' && res.body?.reason === 'already_applied');
      this.countReversal(recorded, body.confirmation_id, user, body.reference.billing_date, `ach ${body.type} ${body.return_code ?? ''}`);
    });
  }

  /**
   * A reversal the system says it recorded gives the money back, once per payment (`confirmationId`:
   * a refund and a dispute of one charge return its money once). A delivery that crashed after its write answered 500 and its redelivery
   * `already_applied`: that answer is the system saying the reversal is recorded, so it counts too
   * (regressions: ach_return_committed_before_crash, card_dispute_committed_before_crash).
   */
  private countReversal(recorded: boolean, confirmationId: string, user: number, billingDate: string, what: string): void {
    if (!recorded || this.reversalsSeen.has(confirmationId)) return;
    this.reversalsSeen.add(confirmationId);
    applyReversal(this.model, this.member(user), ms(billingDate), what);
  }
  /** The payments whose reversal the model has counted, by confirmation id. */
  private readonly reversalsSeen = new Set<string>();

  /** Card webhook for a charge: succeeded, refunded or disputed. */
  async sendCardEvent(charge: ObservedCharge, type: 'payment_intent.succeeded' | 'charge.refunded' | 'charge.dispute.created'): Promise<void> {
    const metadata = { user_id: charge.user_id, billing_date: charge.billing_date, subscription_id: charge.subscription_id };
    const now = this.now();
    const object =
      type === 'payment_intent.succeeded'
        ? { id: charge.confirmation_id, object: 'payment_intent', amount: charge.amount_cents, amount_received: charge.amount_cents, currency: 'usd', metadata }
        : type === 'charge.refunded'
          ? { id: `ch_${randomUUID().slice(0, 8)}`, object: 'charge', payment_intent: charge.confirmation_id, amount: charge.amount_cents, amount_refunded: charge.amount_cents, refunded: true, metadata }
          : { id: `dp_${randomUUID().slice(0, 8)}`, object: 'dispute', charge: `ch_${randomUUID().slice(0, 8)}`, payment_intent: charge.confirmation_id, amount: charge.amount_cents, status: 'needs_response', metadata };
    const body = stripeEvent(type, object, now);
    const user = this.users.indexOf(charge.user_id);
    await this.sendStripe(body, (res) => {
      if (type === 'payment_intent.succeeded') return;
      const recorded = res.body?.outcome === 'applied' || (res.body?.outcome === 'ignored' && res.body?.reason === 'already_applied');
      if (type === 'charge.dispute.created' && recorded && !this.rails.disputes.some((d) => d.confirmation_id === charge.confirmation_id)) {
        this.rails.disputes.push({ confirmation_id: charge.confirmation_id, from: this.seq() });
      }
      this.countReversal(recorded, charge.confirmation_id, user, charge.billing_date, type);
    });
  }

  /** checkout.session.completed: opens a card chain only when the member has no open chain (DESIGN 2.9). */
  async checkout(user: number, body: Json, plan: Plan): Promise<void> {
    const userId = this.users[user]!;
    const m = this.member(user);
    const before = await this.records(userId);
    const sentAt = this.now();
    const open = before.filter((r) => OPEN_STATUSES.has(r.billing_status) || r.billing_status === 'INACTIVE');
    const taken = before.some((r) => ms(r.billing_date) === plan.firstDate);
    if (this.known.has('checkout_second_chain') && open.length > 0) return;
    if (this.known.has('new_chain_before_old_end') && before.some((r) => ms(r.billing_date) >= plan.firstDate)) return;
    // The model learns of a chain from the records: a checkout whose answer was lost to a fault after its commit (the lock
    // release) opened the chain all the same, and its redelivery is answered `duplicate` (run 1 seed 829006854).
    let learned = false;
    const createdNow = async () =>
      (await this.records(userId)).some((r) => ms(r.billing_date) === plan.firstDate && !before.some((b) => b.subscription_id === r.subscription_id) && ms(r.created_date) >= sentAt);
    const learnCommitted = async () => {
      if (learned || !(await createdNow())) return;
      learned = true;
      this.trace.push(`  checkout for ${userId} at ${iso(plan.firstDate)}: committed though its answer was lost`);
      if (open.length > 0 && !open.every((r) => r.billing_status === 'INACTIVE')) {
        this.problems.push(`${userId}: a checkout opened a second chain at ${iso(plan.firstDate)} beside the open ${open.map((r) => `${r.billing_status} ${r.billing_date}`).join(', ')}`);
      } else openChain(m, plan, this.now());
    };
    await this.sendStripe(body, async (res) => {
      if (learned) return;
      learned = true;
      const created = await createdNow();
      this.trace.push(`  checkout for ${userId} at ${iso(plan.firstDate)}: ${created ? 'opened a chain' : 'opened nothing'} (${open.length} open before)`);
      if (res.body?.status === 'duplicate') return;
      // Open at the answer (a redelivery can come after the old chain closed: long run 4 seed 771100168), the new record aside.
      const openNow = (await this.records(userId)).filter((r) => before.some((b) => b.subscription_id === r.subscription_id) && (OPEN_STATUSES.has(r.billing_status) || r.billing_status === 'INACTIVE'));
      if (created && open.length > 0 && openNow.length === 0) {
        openChain(m, plan, this.now());
      } else if (created && open.length > 0) {
        if (open.every((r) => r.billing_status === 'INACTIVE')) openChain(m, plan, this.now());
        else this.problems.push(`${userId}: a checkout opened a second chain at ${iso(plan.firstDate)} beside the open ${open.map((r) => `${r.billing_status} ${r.billing_date}`).join(', ')}`);
      } else if (created) {
        openChain(m, plan, this.now());
        this.model.log.push(`${userId}: checkout opened a card chain at ${iso(plan.firstDate)}`);
      } else if (open.length === 0 && !taken) {
        // A chain opened between its deliveries (a NEW refused by the same crash's lock, redelivered first: long run 7
        // seed 777000010) makes the answering delivery `already_member`, rightly.
        const openAtAnswer = (await this.records(userId)).some((r) => OPEN_STATUSES.has(r.billing_status) || r.billing_status === 'INACTIVE');
        if (!openAtAnswer) this.problems.push(`${userId}: a checkout with no open chain opened nothing (${JSON.stringify(res.body)})`);
      }
    });
    await learnCommitted();
  }

  /** payment_intent.payment_failed for a card submission the processor declined. */
  async sendCardFailed(user: number, pick: number): Promise<void> {
    const userId = this.users[user]!;
    const declined = this.recorder.declined.filter((d) => d.request.user_id === userId && d.request.rail === 'card');
    if (declined.length === 0) return;
    const { request } = declined[pick % declined.length]!;
    const ref = request.reference as { user_id: string; billing_date: string; subscription_id: string };
    const object = {
      id: declinedIntentId(request),
      object: 'payment_intent',
      amount: request.amount_cents,
      currency: 'usd',
      metadata: { user_id: ref.user_id, billing_date: ref.billing_date, subscription_id: ref.subscription_id },
      last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds' },
    };
    // One decline, one slot: the event of an attempt the period has recorded (its number within payment_attempts) changes nothing.
    const attempt = Number(request.idempotency_key.slice(request.idempotency_key.lastIndexOf(':') + 1));
    const before = (await this.records(userId)).find((r) => r.billing_date === ref.billing_date && r.subscription_id === ref.subscription_id);
    let immediate = true;
    await this.sendStripe(stripeEvent('payment_intent.payment_failed', object, this.now()), (res) => {
      if (immediate && before && attempt <= before.payment_attempts && res.body?.outcome === 'applied') {
        this.problems.push(`${userId}: payment_intent.payment_failed for attempt ${attempt} of ${ref.billing_date}, already recorded (${before.payment_attempts} attempts, ${before.billing_status}), was applied again`);
      }
    });
    immediate = false;
  }

  async resendStripe(body: Json): Promise<void> {
    await this.sendStripe(body, () => undefined, false);
  }

  /** Retries every refused delivery once, in order (membership records per user, behind their first refusal). */
  async drain(): Promise<void> {
    for (const user of this.users) await this.drainMemberships(user);
    const retry = this.pending.splice(0);
    for (const p of retry) if (!(await p.attempt())) this.pending.push(p);
    this.collectBankOutcomes();
  }

  /* ---------------- collections ---------------- */

  /** The scheduled run: the collections-job plans, then each of our messages goes to the batch-worker (10 per batch). */
  async collectionsRun(): Promise<{ enqueued: number; failed: number }> {
    const queue = this.app.collectionsQueue;
    queue.clear();
    await createCollectionsJobHandler(this.base('collections-job'))(scheduledEvent(iso(this.now())), lambdaContext());
    const mine = new Set(this.users);
    const messages = queue.sent.filter((m) => mine.has(JSON.parse(m.body).user_id));
    queue.clear();
    let failed = 0;
    for (let i = 0; i < messages.length; i += 10) {
      const proc = this.process('batch-worker');
      const batch = messages.slice(i, i + 10).map((m) => sqsRecord(m.body, { messageId: m.id }));
      const out = await createBatchWorkerHandler(proc.deps)(sqsEvent(batch), lambdaContext());
      failed += out.batchItemFailures.length;
    }
    this.collectBankOutcomes();
    return { enqueued: messages.length, failed };
  }

  /* ---------------- loans and instruments ---------------- */

  /**
   * A loan payment through the API (DESIGN 2.7) on the member's ACH account or pinless card, with the
   * client's Idempotency-Key; `repeat` resends an earlier request as it was (a client repeating).
   */
  async loanPay(user: number, method: 'ach' | 'pinless', amountCents: number, repeat: number | undefined): Promise<void> {
    const earlier = repeat === undefined ? undefined : this.loanRequests.filter((r) => r.user === user)[repeat % Math.max(this.loanRequests.filter((r) => r.user === user).length, 1)];
    if (repeat !== undefined && !earlier) return;
    this.keyCounter += 1;
    const request = earlier ?? { user, key: `loan-${this.users[user]}-${this.keyCounter}`, body: { amount_cents: amountCents, payment_method: method, account_last_four: method === 'ach' ? '6789' : '4242' } };
    if (!earlier) this.loanRequests.push(request);
    this.recorder.initiator = 'customer';
    let res;
    try {
      res = await this.api('POST', '/v1/users/{userId}/loans/{loanId}/payments', { userId: this.users[user]!, loanId: 'loan-1' }, request.body, undefined, true, { 'Idempotency-Key': request.key });
    } finally {
      this.recorder.initiator = 'merchant';
    }
    this.trace.push(`  loan payment ${request.key} ${request.body.payment_method} ${request.body.amount_cents}${earlier ? ' (repeat)' : ''} → ${res.status} ${res.body?.loc_status ?? res.body?.error?.code ?? ''}`);
    if (![200, 201, 409, 502, 503].includes(res.status) && res.status < 500) this.problems.push(`loan payment ${request.key} answered ${res.status}: ${JSON.stringify(res.body)}`);
    this.collectBankOutcomes();
  }

  /**
   * The payer gives another instrument: the account directory names a new ACH account or a new
   * authorization on the same one, or a new pinless card; or Stripe's default card changes and
   * its `customer.updated` webhook is delivered.
   */
  async newInstrument(user: number, kind: 'ach_account' | 'ach_authorization' | 'pinless' | 'card'): Promise<void> {
    const userId = this.users[user]!;
    this.keyCounter += 1;
    const n = this.keyCounter;
    const account = this.settings.accounts[userId] ?? { status: 'active' as const };
    const current = (account as Json).instruments ?? {};
    const defaults = this.app.simulator.getAccount(userId);
    const known = { ...(await defaults).instruments, ...current };
    if (kind === 'card') {
      const cards = ((this.settings as Json).cards ??= {}) as Json;
      cards[userId] = { fingerprint: `fpc_${userId}_${n}`, brand: 'visa' };
      this.app.simulator.configure(this.settings as never);
      const customer = { id: simulatedCustomerId(userId), object: 'customer' };
      await this.sendStripe(stripeEvent('customer.updated', customer, this.now()), () => undefined);
      this.trace.push(`  ${userId}: new Stripe card fpc_${userId}_${n}`);
      return;
    }
    const instruments =
      kind === 'pinless'
        ? { ...known, pinless: { fingerprint: `fp_${userId}_${n}`, brand: 'visa' } }
        : kind === 'ach_account'
          ? { ...known, ach: { account_id: `acct_${userId}_${n}`, authorization_id: `auth_${n}`, authorized_at: iso(this.now()) } }
          : { ...known, ach: { ...known.ach, authorization_id: `auth_${n}`, authorized_at: iso(this.now()) } };
    this.settings.accounts[userId] = { ...account, instruments } as never;
    this.app.simulator.configure(this.settings as never);
    this.trace.push(`  ${userId}: new ${kind} ${JSON.stringify(kind === 'pinless' ? instruments.pinless : instruments.ach)}`);
  }

  /** A dispute of a card payment closes in our favour (`charge.dispute.closed`, won): the dispute hold lifts. */
  async disputeWon(charge: ObservedCharge): Promise<void> {
    const dispute = this.rails.disputes.find((d) => d.confirmation_id === charge.confirmation_id && d.until === undefined);
    if (!dispute) return;
    const metadata = { user_id: charge.user_id, billing_date: charge.billing_date, subscription_id: charge.subscription_id };
    const object = { id: `dp_${randomUUID().slice(0, 8)}`, object: 'dispute', charge: `ch_${randomUUID().slice(0, 8)}`, payment_intent: charge.confirmation_id, amount: charge.amount_cents, status: 'won', metadata };
    await this.sendStripe(stripeEvent('charge.dispute.closed', object, this.now()), (res) => {
      if (res.status === 200 && dispute.until === undefined) dispute.until = this.seq();
    });
  }

  /* ---------------- operator and member actions ---------------- */

  nextPayKey(repeat: boolean): string {
    if (repeat && this.lastPayKey) return this.lastPayKey;
    this.keyCounter += 1;
    this.lastPayKey = `pay-${this.users[0]}-${this.keyCounter}`;
    return this.lastPayKey;
  }

  /**
   * Drives one member toward work a bulk retry selects, through the entry points a real member's
   * hopeless period goes through: processor errors up the failure ladder until it parks, or a hard
   * decline (`stolen_card`) that exhausts dunning at once. Each round moves the clock to the
   * member's next attempt and runs collections; at most 10 rounds. The outcome stays set.
   */
  async makeHopeless(user: number, state: 'parked' | 'exhausted'): Promise<void> {
    const userId = this.users[user]!;
    this.setOutcome(user, state === 'parked' ? 'error' : 'decline:stolen_card');
    for (let round = 0; round < 10; round++) {
      const records = await this.records(userId);
      const now = this.now();
      if (records.some((r) => (state === 'parked' ? failureState(r as never) === 'parked' : dunningState(r as never, new Date(now)) === 'exhausted'))) break;
      const next = records
        .filter((r) => r.billing_status === 'PENDING' || r.billing_status === 'FAILED')
        .map((r) => ms(r.billing_next_attempt_at ?? r.dunning_next_attempt_at ?? r.billing_date))
        .filter((at) => Number.isFinite(at))
        .sort((a, b) => a - b)[0];
      if (next === undefined) break;
      this.app.clock.advance(Math.max(next - now, 0) + 60_000);
      await this.drain();
      await this.collectionsRun();
    }
    this.trace.push(`  ${userId}: ${(await this.records(userId)).map((r) => `${r.billing_status} ${r.billing_date.slice(0, 10)}${r.billing_failure_count ? ` failures ${r.billing_failure_count}` : ''}`).join(', ')}`);
  }

  /**
   * POST /v1/billing/retry-runs for the members' periods in `state` (DESIGN 8; the members named,
   * so other sequences' periods in the shared tables are not selected). The run's item
   * messages wait in the retry-runs queue, as they would behind a backlog, until
   * deliverRetryRunItems hands them to the worker: other commands may come first.
   */
  async startRetryRun(state: 'parked' | 'exhausted', options: { readonly repeatKey: boolean; readonly dryRun: boolean }): Promise<void> {
    // The same key replays the last run's request as it was (another body under a used key is a 422, rightly).
    const last = options.repeatKey ? this.lastRun : undefined;
    if (!last) this.keyCounter += 1;
    const key = last?.key ?? `run-${this.users[0]}-${this.keyCounter}`;
    const body = last?.body ?? { state, user_ids: [...this.users], reason: 'model bulk retry', ...(options.dryRun ? { dry_run: true } : {}) };
    this.lastRun = { key, body };
    const queue = this.app.retryRunsQueue;
    queue.clear();
    const res = await this.api('POST', '/v1/billing/retry-runs', {}, body, undefined, true, { 'Idempotency-Key': key });
    const mine = new Set(this.users);
    const items = queue.sent.splice(0).filter((m) => mine.has(JSON.parse(m.body).user_id));
    this.retryRunItems.push(...items);
    this.trace.push(`  retry run ${body.state}${body.dry_run ? ' (dry run)' : ''} key ${key} → ${res.status} ${res.body?.run_id ?? res.body?.error?.code ?? ''} selected ${res.body?.selected ?? '-'}, ${items.length} queued`);
    // Every run is accepted, or 409 request_in_progress while an earlier request with its key that
    // crashed selecting still holds it (a replay after RUN_CLAIM_STALE_MS takes it over); a 5xx
    // only under an injected fault (api() reports any other).
    if (res.status !== 202 && !(res.status === 409 && res.body?.error?.code === 'request_in_progress') && res.status < 500) this.problems.push(`POST retry-runs answered ${res.status}: ${JSON.stringify(res.body)}`);
  }

  /**
   * Hands the queued retry-run items to the retry-run-worker, 10 per batch (each message twice when
   * `duplicate`: SQS delivers at least once, with the same message id). A batch item failure stays
   * queued and is delivered again later; settle delivers what is left.
   */
  async deliverRetryRunItems(duplicate: boolean): Promise<void> {
    const items = this.retryRunItems.splice(0);
    if (items.length === 0) return;
    const deliveries = duplicate ? items.flatMap((m) => [m, m]) : items;
    const failed = new Map<string, { id: string; body: string }>();
    for (let i = 0; i < deliveries.length; i += 10) {
      const batch = deliveries.slice(i, i + 10);
      const proc = this.process('retry-run-worker');
      // A bulk retry is an operator's attempt (DESIGN 5b), as retry-billing is.
      this.recorder.initiator = 'operator';
      try {
        const out = await createRetryRunWorkerHandler(proc.deps)(sqsEvent(batch.map((m) => sqsRecord(m.body, { messageId: m.id, queue: 'test-retry-runs' }))), lambdaContext());
        for (const f of out.batchItemFailures) {
          const m = batch.find((b) => b.id === f.itemIdentifier);
          if (m) failed.set(m.id, m);
        }
      } finally {
        this.recorder.initiator = 'merchant';
      }
    }
    this.retryRunItems.push(...failed.values());
    this.trace.push(`  retry run items: ${deliveries.length} delivered${duplicate ? ' (each twice)' : ''}, ${failed.size} to deliver again`);
    this.collectBankOutcomes();
  }
  /** Retry-run item messages sent and not yet taken by the worker. */
  private readonly retryRunItems: { id: string; body: string }[] = [];
  private lastRun: { readonly key: string; readonly body: { state: string; user_ids: string[]; reason: string; dry_run?: boolean } } | undefined;

  /** Waive: the model learns of it from the record (a committed waive counts even when the answer was an error). */
  async waive(user: number, record: Json): Promise<void> {
    const kind = recordSlot(this.member(user), record as ObservedRecord)?.slot.kind;
    if (this.known.has('waive_cancel_successor') && kind === 'cancel') return;
    if (this.known.has('waive_ends_pause') && kind === 'pause') return;
    const res = await this.api('POST', '/v1/subscriptions/{subscriptionId}/waive', { subscriptionId: record.subscription_id }, { reason: 'model test' });
    const after = (await this.records(this.users[user]!)).find((r) => r.subscription_id === record.subscription_id);
    this.trace.push(`  waive ${record.billing_date} (${record.billing_status}) → ${res.status} ${res.body?.error?.code ?? ''}`);
    if (after?.billing_status === 'WAIVED' && record.billing_status !== 'WAIVED') {
      applyWaive(this.model, this.member(user), record as ObservedRecord, this.now());
      this.app.clock.advance(1);
      // An answer lost with the commit itself (a fault at or before it) cannot be known; one after it (the lock release) must not change the answer (DESIGN 3.1).
      if (res.status !== 200 && res.fired.every((p) => p === 'lock.release.before')) this.problems.push(`waive of ${record.subscription_id} committed but answered ${res.status} ${JSON.stringify(res.body)} (faults: ${res.fired.join(', ')})`);
    }
  }

  async changeDueDate(user: number, record: Json, to: number): Promise<void> {
    const now = this.now();
    const found = recordSlot(this.member(user), record as ObservedRecord);
    if (this.known.has('due_date_change_erases_cancel') && found?.slot.kind === 'cancel') return;
    if (this.known.has('due_date_change_keeps_anchor') && found && found.chain.plan.friday === undefined && new Date(to).getUTCDate() !== found.chain.anchorDay) return;
    const dueUnbilled = (record.billing_status === 'PENDING' || record.billing_status === 'FAILED') && ms(record.billing_date) <= now;
    const res = await this.api('PUT', '/v1/subscriptions/{subscriptionId}/billing-date', { subscriptionId: record.subscription_id }, { billing_date: iso(to), reason: 'model test' });
    const after = (await this.records(this.users[user]!)).find((r) => r.subscription_id === record.subscription_id);
    this.trace.push(`  due-date change ${record.billing_date} (${record.billing_status}) → ${iso(to)}: ${res.status} ${res.body?.error?.code ?? ''}`);
    if (dueUnbilled && res.fired.length === 0 && res.status !== 409) this.problems.push(`due-date change of the due, unbilled ${record.billing_date} answered ${res.status}, not 409 unbilled_period`);
    if (dueUnbilled && res.status === 409 && res.body?.error?.code !== 'unbilled_period' && res.body?.error?.code !== 'locked') this.problems.push(`due-date change of a due period answered 409 ${res.body?.error?.code}, not unbilled_period`);
    if (after && ms(after.billing_date) === to && ms(record.billing_date) !== to) {
      applyDueDateChange(this.model, this.member(user), record as ObservedRecord, to, now);
      if (res.status !== 200 && res.fired.every((p) => p === 'lock.release.before')) this.problems.push(`due-date change of ${record.subscription_id} committed but answered ${res.status} ${JSON.stringify(res.body)} (faults: ${res.fired.join(', ')})`);
    }
  }

  /* ---------------- the checks ---------------- */

  /** All invariants after a step; throws with the trace when one fails. */
  async check(label: string): Promise<void> {
    const problems = [...this.problems];
    this.problems.length = 0;
    const now = this.now();
    // A member no write named since their last check has the records, rows and listing it judged (history as then);
    // the counters and the indexes they are checked against change only by writes to the table. Read at once, judged in order.
    const table = this.writes.tableGeneration();
    const [observed, gauges] = await Promise.all([
      Promise.all(
        this.users.map(async (user) => {
          const generation = this.writes.generation(user);
          const fresh = this.checkedAt.get(user) !== generation;
          const [records, visible, rows] = await Promise.all([this.records(user), this.visible(user), fresh ? this.historyRows(user) : undefined]);
          return { user, generation, records, visible, rows };
        }),
      ),
      this.gaugesCheckedAt !== table ? gaugeProblems(this.app) : undefined,
    ]);
    for (const [i, { user, generation, records, visible, rows }] of observed.entries()) {
      const charges = this.charges(user);
      const firstPresentedAt = this.handOffs.firstHandedOver(user);
      for (const p of this.recorder.presentments) if (p.user_id === user) firstPresentedAt.set(p.idempotency_key, Math.min(firstPresentedAt.get(p.idempotency_key) ?? p.at, p.at));
      problems.push(...violations(this.member(i), { records, charges, visible, firstPresentedAt }, now));
      problems.push(...dunningViolations(this.recorder.presentments.filter((p) => p.user_id === user)));
      if (rows) {
        problems.push(...historyProblems(user, records, rows, this.known));
        if (this.writes.generation(user) === generation) this.checkedAt.set(user, generation);
      }
      for (const r of records) {
        const answered = r.transaction_id === undefined ? undefined : this.achAnswered.get(r.transaction_id);
        if (r.billing_status === 'ACHSENT' && answered) problems.push(`${user}: ${r.billing_date} is ACHSENT with ${r.transaction_id}, whose bank outcome was already ${answered}: the outcome was dropped`);
      }
    }
    problems.push(...this.railProblems());
    if (gauges) {
      problems.push(...gauges);
      if (this.writes.tableGeneration() === table) this.gaugesCheckedAt = table;
    }
    if (problems.length > 0) throw new ModelViolation(label, problems, this);
  }

  /** The rails judged from the processor's log of this world's members (test/model/rails.ts). */
  railProblems(count = false): string[] {
    const mine = new Set(this.users);
    const log = this.app.simulator.presentments().filter((p) => mine.has(p.user_id));
    const unconfirmed = new Set<number>();
    for (const f of this.rails.faulted) if (f.faults.fired.some((point) => point !== 'lock.release.before')) for (let s = f.from; s < f.to; s++) unconfirmed.add(s);
    const facts: RailFacts = { ...this.rails, unconfirmed };
    if (count) countRails(log, facts);
    return railViolations(log, facts, { ceilings: this.ceilings });
  }

  /** Lets every delivery through and the books settle: the checks that need a quiet system (every accepted charge recorded). */
  async settle(): Promise<void> {
    // Settling is quiet: a fault still armed (no process took it during the sequence) must not fire in its last round,
    // where no later run is left to repair it (long run 3, seed 554400056: a crash at the commit in round 3).
    this.armed = undefined;
    for (let i = 0; i < this.users.length; i++) {
      this.setOutcome(i, 'approve');
      this.setBalance(i, undefined);
    }
    for (let round = 0; round < 3; round++) {
      this.app.clock.advance(25 * 3_600_000);
      await this.drain();
      await this.deliverRetryRunItems(false);
      await this.collectionsRun();
      for (const outcome of [...this.bankOutboxAll()]) await this.deliverBankOutcome(outcome);
      await this.drain();
    }
    this.touchAll();
    await this.check('settle');
    const problems: string[] = [];
    for (const user of this.users) problems.push(...unbookedCharges(user, await this.historyRows(user), this.charges(user)));
    if (problems.length > 0) throw new ModelViolation('settle: charges on the books', problems, this);
    this.railProblems(true);
    const events: string[] = [];
    const codes = new Map<string, string>();
    for (const p of this.app.simulator.presentments()) {
      if (p.bank?.return_code !== undefined && (p.answer.kind === 'submitted') && this.rails.returnsAccepted.has(p.answer.confirmation_id)) codes.set(p.answer.confirmation_id, p.bank.return_code);
    }
    for (const user of this.users) events.push(...(await publishedViolations(user, await this.historyRows(user), codes)));
    if (events.length > 0) throw new ModelViolation('settle: published events against the history', events, this);
  }

  private bankOutboxAll(): BankOutcome[] {
    return [...this.bankOutbox];
  }
}
