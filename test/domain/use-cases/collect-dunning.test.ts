import fc from 'fast-check';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DUNNING_RETRY_DAYS, DUNNING_WINDOW_MS, NETWORK_CEILINGS } from '../../../src/domain/dunning.js';
import { PaymentHoldError } from '../../../src/domain/errors.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../../src/domain/ports/processor.js';
import type { BillingRecord, Process } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { collectOnBalanceEvent } from '../../../src/domain/use-cases/collect-on-balance-event.js';
import { runCollectionAttempt } from '../../../src/domain/use-cases/collect.js';
import type { UseCaseDeps } from '../../../src/domain/use-cases/deps.js';
import { manualPay } from '../../../src/domain/use-cases/manual-pay.js';
import { retryBilling } from '../../../src/domain/use-cases/retry-billing.js';
import { applyMembershipEvent, membershipEventSchema } from '../../../src/domain/use-cases/membership/apply-membership-event.js';
import { publishedEventsOf } from '../../../src/domain/published-events.js';
import { eventIdOf } from '../../../src/adapters/eventbridge/event-id.js';
import { createCollectionsJobHandler } from '../../../src/handlers/collections-job.js';
import { callerFor, type Caller } from '../../handlers/api-fixtures.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { scheduledEvent } from '../../support/aws-events.js';
import { makeRecord } from '../../support/billing-fixtures.js';
import { seedRecords } from '../../support/seed.js';
import { DAY, HOUR } from '../../support/time.js';

/**
 * Dunning through the real attempt on DynamoDB Local (DESIGN 5b): what each decline code costs the
 * card over 30 simulated days, the manual-pay refusal, the balance webhook's wait, the operator
 * reset and what the API shows.
 */

const NOW = '2026-12-01T12:00:00.000Z';

/** Counts every payment presented to the processor (declines included), per user, with its process. */
class PresentmentLog implements PaymentProcessor {
  readonly log: { user_id: string; at: number }[] = [];
  constructor(
    private readonly inner: PaymentProcessor,
    private readonly now: () => number,
  ) {}
  async submit(request: PaymentRequest): Promise<PaymentResult> {
    this.log.push({ user_id: request.user_id, at: this.now() });
    return this.inner.submit(request);
  }
  of(userId: string): number[] {
    return this.log.filter((p) => p.user_id === userId).map((p) => p.at);
  }
}

let app: TestApp;
let presented: PresentmentLog;
let deps: UseCaseDeps;
let call: Caller;
let unknownCodes: string[];

beforeAll(async () => {
  let clockNow = () => Date.parse(NOW);
  presented = new PresentmentLog({ submit: (r) => app.simulator.submit(r) }, () => clockNow());
  app = await createTestApp({ label: 'dunning', now: NOW, processor: presented });
  clockNow = () => app.clock.now().getTime();
  unknownCodes = [];
  deps = { ...app.deps, onUnknownDecline: (info) => unknownCodes.push(info.decline_code) };
  call = callerFor(app);
});

beforeEach(() => {
  app.clock.set(NOW);
});

let users = 0;
async function declinedPeriod(code: string, overrides: Partial<BillingRecord> = {}): Promise<BillingRecord> {
  const record = makeRecord({ user_id: `dunning-${code}-${++users}-${Date.now()}`, payment_method: 'card', billing_date: formatInstant(new Date(Date.parse(NOW) - HOUR)), ...overrides });
  await seedRecords(app, record);
  app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: code === 'generic_decline' ? 'decline' : `decline:${code}` } });
  return record;
}

const balanceEventOf = (userId: string) => ({
  event_id: `bal-${userId}-${app.clock.now().getTime()}`,
  user_id: userId,
  institution_id: 'inst-1',
  available_balance_cents: 1_000_000,
  current_balance_cents: 1_000_000,
  occurred_at: formatInstant(app.clock.now()),
});

/**
 * 30 simulated days of every automatic path: the scheduled first attempt, then every 6 hours the
 * retry path and a balance webhook with a large balance. Answers the instants of the presentments made.
 */
async function thirtyDaysOf(code: string): Promise<{ record: BillingRecord; times: number[] }> {
  const record = await declinedPeriod(code);
  await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
  const end = Date.parse(NOW) + 30 * DAY;
  while (app.clock.now().getTime() + 6 * HOUR <= end) {
    app.clock.advance(6 * HOUR);
    await runCollectionAttempt(deps, { key: record, process: 'RETRY', owner: 'test' });
    await collectOnBalanceEvent(deps, { event: balanceEventOf(record.user_id), thresholdCents: 5000, owner: 'test', stopAfter: () => false });
  }
  return { record, times: presented.of(record.user_id) };
}

describe('attempts in 30 simulated days, by decline code', () => {
  it('`lost_card` is not retried (was: 31 attempts in 30 days)', async () => {
    expect((await thirtyDaysOf('lost_card')).times).toHaveLength(1);
  }, 240_000);

  it('`expired_card` waits for a new card: one attempt', async () => {
    expect((await thirtyDaysOf('expired_card')).times).toHaveLength(1);
  }, 240_000);

  it.each(['insufficient_funds', 'generic_decline'])('`%s` follows the schedule: 8 attempts, all within 14 days', async (code) => {
    const { record, times } = await thirtyDaysOf(code);
    expect(times).toHaveLength(8);
    expect(times.at(-1)! - times[0]!).toBeLessThanOrEqual(14 * DAY);
    const stored = await app.deps.billing.get(record);
    expect(stored).toMatchObject({ billing_status: 'FAILED', decline_code: code, decline_class: 'retry_later', dunning_attempts: 8 });
    expect(stored?.dunning_next_attempt_at).toBeUndefined();
  }, 240_000);

  it('an unknown decline code is retry_later and reported, never an error', async () => {
    const record = await declinedPeriod('brand_new_code');
    expect((await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' })).kind).toBe('declined');
    expect(await app.deps.billing.get(record)).toMatchObject({ decline_code: 'brand_new_code', decline_class: 'retry_later', dunning_attempts: 1 });
    expect(unknownCodes).toContain('brand_new_code');
  });
});

describe('the gate on every path', () => {
  it('a manual pay after do_not_retry answers 409 payment_method_required and charges nothing', async () => {
    const record = await declinedPeriod('stolen_card');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    const before = presented.of(record.user_id).length;
    await expect(manualPay(deps, { subscriptionId: record.subscription_id, owner: 'test', idempotencyKey: 'pay-stolen' })).rejects.toBeInstanceOf(PaymentHoldError);
    const answer = await call('POST', {
      route: '/v1/subscriptions/{subscriptionId}/pay',
      pathParameters: { subscriptionId: record.subscription_id },
      headers: { 'Idempotency-Key': 'pay-stolen-api' },
    });
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('payment_method_required');
    const retry = await call('POST', { route: '/v1/subscriptions/{subscriptionId}/retry-billing', pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'try again' } });
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('payment_method_required');
    expect(presented.of(record.user_id)).toHaveLength(before);
    expect((await app.deps.billing.get(record))?.last_request_key).toBeUndefined();
  });

  it('the balance webhook does not re-present a payment declined an hour earlier', async () => {
    const record = await declinedPeriod('insufficient_funds');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    app.clock.advance(HOUR);
    const done = await collectOnBalanceEvent(deps, { event: balanceEventOf(record.user_id), thresholdCents: 5000, owner: 'test', stopAfter: () => false });
    expect(done.map((d) => d.outcome)).toEqual([expect.objectContaining({ kind: 'not_due', reason: 'not_yet_due' })]);
    expect(presented.of(record.user_id)).toHaveLength(1);
    app.clock.advance(23 * HOUR);
    await collectOnBalanceEvent(deps, { event: balanceEventOf(record.user_id), thresholdCents: 5000, owner: 'test', stopAfter: () => false });
    expect(presented.of(record.user_id)).toHaveLength(2);
  });

  it('a manual pay of a retry_later decline is the customer asking: it skips the schedule and spends no slot', async () => {
    const record = await declinedPeriod('insufficient_funds');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    app.clock.advance(HOUR);
    const result = await manualPay(deps, { subscriptionId: record.subscription_id, owner: 'test', idempotencyKey: 'pay-if' });
    expect(result.outcome.kind).toBe('declined');
    expect(result.subscription).toMatchObject({ dunning_attempts: 1, dunning_next_attempt_at: formatInstant(new Date(Date.parse(NOW) + DAY)) });
  });

  it('retry-billing resets an exhausted schedule, audited with actor and reason', async () => {
    const record = await declinedPeriod('expired_card');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    app.clock.advance(2 * DAY);
    app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'decline:insufficient_funds' } });
    const result = await retryBilling(deps, { subscriptionId: record.subscription_id, owner: 'test', actor: 'ops|alice', reason: 'customer updated the card' });
    expect(result.outcome).toBe('failed');
    expect(result.subscription).toMatchObject({
      decline_code: 'insufficient_funds',
      decline_class: 'retry_later',
      dunning_attempts: 1,
      dunning_first_declined_at: formatInstant(app.clock.now()),
      dunning_next_attempt_at: formatInstant(new Date(app.clock.now().getTime() + DAY)),
    });
    const history = (await app.deps.billing.history(record.subscription_id, { limit: 10 })).items;
    const resetRow = history.find((row) => row.updated_event === 'BILLING_RETRY_REQUESTED' && row.decline_class === undefined);
    expect(resetRow).toMatchObject({ actor: 'ops|alice', reason: 'customer updated the card', process: 'OPERATOR_RETRY' });
    expect(history[0]).toMatchObject({ decline_code: 'insufficient_funds', decline_class: 'retry_later', actor: 'ops|alice' });
    expect(history.find((row) => row.decline_code === 'expired_card')).toMatchObject({ decline_class: 'update_payment_method' });
  });
});

describe('the planner, the lists and the gauge', () => {
  it('the planner reads a declined period at its next attempt and never before; an exhausted one never', async () => {
    const retrying = await declinedPeriod('insufficient_funds');
    const exhausted = await declinedPeriod('lost_card');
    await runCollectionAttempt(deps, { key: retrying, process: 'SCHEDULED', owner: 'test' });
    await runCollectionAttempt(deps, { key: exhausted, process: 'SCHEDULED', owner: 'test' });
    const ids = async (offsetMs: number) => {
      const due: string[] = [];
      for await (const page of app.deps.billing.streamDue(formatInstant(new Date(Date.parse(NOW) + offsetMs)), { pageSize: 1000 })) {
        due.push(...page.filter((r) => r.billing_status === 'FAILED').map((r) => r.subscription_id));
      }
      return due;
    };
    expect(await ids(DAY - 1)).not.toContain(retrying.subscription_id);
    expect(await ids(DAY)).toContain(retrying.subscription_id);
    expect(await ids(365 * DAY)).not.toContain(exhausted.subscription_id);

    app.clock.advance(DAY);
    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(formatInstant(app.clock.now())));
    const enqueued = app.collectionsQueue.bodies<{ subscription_id: string; process: Process }>().map((m) => m.subscription_id);
    expect(enqueued).toContain(retrying.subscription_id);
    expect(enqueued).not.toContain(exhausted.subscription_id);
    expect(app.metrics.dunning.at(-1)!.exhausted).toBeGreaterThanOrEqual(1);
    expect(app.metrics.dunning.at(-1)!.retrying).toBeGreaterThanOrEqual(1);
  });

  it('every read of a declined period carries `dunning`; ?billing=dunning lists them by state', async () => {
    const record = await declinedPeriod('lost_card');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    const read = await call('GET', { route: '/v1/subscriptions/{subscriptionId}', pathParameters: { subscriptionId: record.subscription_id } });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      decline_code: 'lost_card',
      decline_class: 'do_not_retry',
      dunning: { state: 'exhausted', attempts: 1, next_attempt_at: null, decline_code: 'lost_card', decline_class: 'do_not_retry' },
    });
    expect(read.body.dunning_presented_at).toBeUndefined();
    const history = await call('GET', { route: '/v1/subscriptions/{subscriptionId}/history', pathParameters: { subscriptionId: record.subscription_id } });
    expect(history.body.items[0]).toMatchObject({ decline_code: 'lost_card', decline_class: 'do_not_retry', dunning: { state: 'exhausted' } });

    const list = async (query: Record<string, string>) => call('GET', { route: '/v1/subscriptions', path: '/v1/subscriptions', query });
    const exhausted = await list({ billing: 'dunning', state: 'exhausted', limit: '100' });
    expect(exhausted.status).toBe(200);
    expect(exhausted.body.items.map((i: { subscription_id: string }) => i.subscription_id)).toContain(record.subscription_id);
    const retrying = await list({ billing: 'dunning', state: 'retrying', limit: '100' });
    expect(retrying.body.items.map((i: { subscription_id: string }) => i.subscription_id)).not.toContain(record.subscription_id);
    const all = await list({ billing: 'dunning', limit: '100' });
    expect(all.body.items.every((i: { dunning?: unknown }) => i.dunning !== undefined)).toBe(true);
    expect((await list({ billing: 'dunning', state: 'parked' })).status).toBe(400);
    expect((await list({ billing: 'failing', state: 'exhausted' })).status).toBe(400);
  });
});

/* ---------------- the 14-day window (DESIGN 5b): a late run presents nothing and records the exhaustion ---------------- */

describe('after the 14-day window', () => {
  /** A retry_later cycle declined at NOW, left with its overdue slot (no run came), and the clock moved past the window. */
  async function lapsedCycle(afterWindowMs = DAY): Promise<BillingRecord> {
    const record = await declinedPeriod('insufficient_funds');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    app.clock.advance(14 * DAY + afterWindowMs);
    return (await app.deps.billing.get(record))!;
  }
  const ids = (page: { items: readonly BillingRecord[] }) => page.items.map((r) => r.subscription_id);
  /** The FAILED records the planner would read at `at` (the due-index holds every status). */
  const dueFailed = async (at: string) => {
    const due: string[] = [];
    for await (const page of app.deps.billing.streamDue(at, { pageSize: 1000 })) due.push(...page.filter((r) => r.billing_status === 'FAILED').map((r) => r.subscription_id));
    return due;
  };

  it('the collections run presents nothing and records the exhaustion: history row, due-index out, EXHAUSTED partition, the event', async () => {
    const read = await lapsedCycle();
    expect(read).toMatchObject({ dunning_attempts: 1, dunning_next_attempt_at: formatInstant(new Date(Date.parse(NOW) + DAY)) });
    const presentedBefore = presented.of(read.user_id).length;
    // Keyed in the due-index no later than the window's end, so the run reads it once.
    expect(await dueFailed(formatInstant(app.clock.now()))).toContain(read.subscription_id);
    app.collectionsQueue.clear();
    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(formatInstant(app.clock.now())));
    const message = app.collectionsQueue.bodies<{ subscription_id: string; process: Process }>().find((m) => m.subscription_id === read.subscription_id);
    expect(message?.process).toBe('RETRY');

    const outcome = await runCollectionAttempt(deps, { key: read, process: 'RETRY', owner: 'test' });
    expect(outcome).toMatchObject({ kind: 'not_due', reason: 'exhausted' });
    expect(presented.of(read.user_id)).toHaveLength(presentedBefore);
    const stored = (await app.deps.billing.get(read))!;
    expect(stored).toMatchObject({ billing_status: 'FAILED', version: read.version + 1, dunning_attempts: 1, decline_code: 'insufficient_funds', decline_class: 'retry_later', payment_attempts: read.payment_attempts, process: 'RETRY' });
    expect(stored.dunning_next_attempt_at).toBeUndefined();
    expect(stored.last_attempt_date).toBe(read.last_attempt_date);
    expect(await dueFailed(formatInstant(new Date(Date.parse(NOW) + 365 * DAY)))).not.toContain(read.subscription_id);
    expect(ids(await app.deps.billing.listDunning('exhausted', { limit: 1000 }))).toContain(read.subscription_id);
    expect(ids(await app.deps.billing.listDunning('retrying', { limit: 1000 }))).not.toContain(read.subscription_id);

    const row = (await app.deps.billing.history(read.subscription_id, { limit: 1 })).items[0]!;
    expect(row).toMatchObject({ billing_event: 'DUNNING_EXHAUSTED', last_run_date: stored.last_run_date, process: 'RETRY' });
    expect(publishedEventsOf(row, eventIdOf).map((e) => [e['detail-type'], e.detail])).toEqual([
      ['billing.dunning.exhausted', expect.objectContaining({ subscription_id: read.subscription_id, decline_code: 'insufficient_funds', decline_class: 'retry_later', attempts: 1, cause: 'window_ended' })],
    ]);

    // The next run neither reads nor writes it again.
    const again = await runCollectionAttempt(deps, { key: read, process: 'RETRY', owner: 'test' });
    expect(again).toMatchObject({ kind: 'not_due', reason: 'exhausted' });
    expect((await app.deps.billing.get(read))?.version).toBe(stored.version);
  });

  it('the balance webhook and the memberships catch-up present nothing either, and record it', async () => {
    const viaBalance = await lapsedCycle();
    const done = await collectOnBalanceEvent(deps, { event: balanceEventOf(viaBalance.user_id), thresholdCents: 5000, owner: 'test', stopAfter: () => false });
    expect(done.map((d) => d.outcome)).toEqual([expect.objectContaining({ kind: 'not_due', reason: 'exhausted' })]);
    expect(presented.of(viaBalance.user_id)).toHaveLength(1);
    expect(await app.deps.billing.get(viaBalance)).toMatchObject({ process: 'BALANCE_WEBHOOK', dunning_attempts: 1 });
    expect((await app.deps.billing.get(viaBalance))?.dunning_next_attempt_at).toBeUndefined();

    app.clock.set(NOW);
    const viaMembership = await lapsedCycle();
    const event = membershipEventSchema.parse({ event_id: `pause-${viaMembership.user_id}`, type: 'PAUSE', months: 1, user_id: viaMembership.user_id, occurred_at: formatInstant(app.clock.now()) });
    await applyMembershipEvent(deps, { event, owner: 'test' });
    expect(presented.of(viaMembership.user_id)).toHaveLength(1);
    const after = (await app.deps.billing.get(viaMembership))!;
    expect(after).toMatchObject({ billing_status: 'FAILED', dunning_attempts: 1 });
    expect(after.dunning_next_attempt_at).toBeUndefined();
  });

  it('reads and the lists show it exhausted before any run records it', async () => {
    const read = await lapsedCycle(2 * HOUR); // past the window's late-run grace of an hour
    const view = await call('GET', { route: '/v1/subscriptions/{subscriptionId}', pathParameters: { subscriptionId: read.subscription_id } });
    expect(view.body.dunning).toEqual({ state: 'exhausted', attempts: 1, next_attempt_at: null, decline_code: 'insufficient_funds', decline_class: 'retry_later' });
    const list = async (query: Record<string, string>) =>
      (await call('GET', { route: '/v1/subscriptions', path: '/v1/subscriptions', query })).body.items.map((i: { subscription_id: string }) => i.subscription_id);
    expect(await list({ billing: 'dunning', state: 'exhausted', limit: '100' })).toContain(read.subscription_id);
    expect(await list({ billing: 'dunning', state: 'retrying', limit: '100' })).not.toContain(read.subscription_id);
    const all = await list({ billing: 'dunning', limit: '100' });
    expect(all.filter((id: string) => id === read.subscription_id)).toHaveLength(1);
  });

  it('a customer may still pay after the window (manual pay is refused for do_not_retry only)', async () => {
    const read = await lapsedCycle();
    app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [read.user_id]: 'approve' } });
    const result = await manualPay(deps, { subscriptionId: read.subscription_id, owner: 'test', idempotencyKey: `pay-late-${read.user_id}` });
    expect(result.outcome.kind).toBe('collected');
    expect(presented.of(read.user_id)).toHaveLength(2);
  });

  it('retry-billing after the window starts a new cycle, audited', async () => {
    const read = await lapsedCycle();
    const result = await retryBilling(deps, { subscriptionId: read.subscription_id, owner: 'test', actor: 'ops|bob', reason: 'card topped up' });
    expect(result.outcome).toBe('failed');
    expect(result.subscription).toMatchObject({
      dunning_attempts: 1,
      dunning_first_declined_at: formatInstant(app.clock.now()),
      dunning_next_attempt_at: formatInstant(new Date(app.clock.now().getTime() + DAY)),
    });
    expect(presented.of(read.user_id)).toHaveLength(2);
  });

  it('a system failure on the last slot is not a decline: the ladder\'s retry after the window presents nothing, and the failure stays', async () => {
    const record = await declinedPeriod('insufficient_funds');
    await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    for (const day of DUNNING_DAYS_BEFORE_LAST) {
      app.clock.set(formatInstant(new Date(Date.parse(NOW) + day * DAY)));
      expect((await runCollectionAttempt(deps, { key: record, process: 'RETRY', owner: 'test' })).kind).toBe('declined');
    }
    // The last slot taken late, 10 minutes before the window's end (its late-run grace): the ladder's retry falls after it.
    app.clock.set(formatInstant(new Date(Date.parse(NOW) + DUNNING_WINDOW_MS - 10 * 60_000)));
    app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'error' } });
    const failedLast = await runCollectionAttempt(deps, { key: record, process: 'RETRY', owner: 'test' });
    expect(failedLast.kind).toBe('failed_counted');
    const saved = (await app.deps.billing.get(record))!;
    expect(saved.dunning_attempts).toBe(7); // a system failure spends no slot
    expect(presented.of(record.user_id)).toHaveLength(8);

    app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'decline' } });
    app.clock.set(saved.billing_next_attempt_at!); // the ladder's next attempt, after the window
    expect(await dueFailed(formatInstant(app.clock.now()))).toContain(record.subscription_id);
    const late = await runCollectionAttempt(deps, { key: record, process: 'RETRY', owner: 'test' });
    expect(late).toMatchObject({ kind: 'not_due', reason: 'exhausted' });
    expect(presented.of(record.user_id)).toHaveLength(8);
    const stored = (await app.deps.billing.get(record))!;
    expect(stored.dunning_next_attempt_at).toBeUndefined();
    expect(stored).toMatchObject({ billing_failure_count: 1, billing_failed_for: saved.billing_failed_for });
    expect(await dueFailed(formatInstant(new Date(Date.parse(NOW) + 365 * DAY)))).not.toContain(record.subscription_id);
  });
});

/** The retry days before the last one. */
const DUNNING_DAYS_BEFORE_LAST = DUNNING_RETRY_DAYS.slice(0, -1);

/* ---------------- the property, through the real attempt ---------------- */

/** A subset of PROCESSES on purpose: one entry point per kind of caller, each driven through its own use case below. */
const PATHS = ['RETRY', 'BALANCE_WEBHOOK', 'BATCH', 'OPERATOR_RETRY', 'MANUAL'] as const;
const OUTCOMES = ['decline', 'decline:insufficient_funds', 'decline:lost_card', 'decline:expired_card', 'decline:try_again_later'];

describe('the dunning policy on DynamoDB Local, as a property', () => {
  it('no sequence of paths and clock moves exceeds a ceiling or presents a card after a do_not_retry decline', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ path: fc.constantFrom(...PATHS), advanceHours: fc.integer({ min: 0, max: 60 }), outcome: fc.constantFrom(...OUTCOMES) }),
          { minLength: 1, maxLength: 25 },
        ),
        async (steps) => {
          app.clock.set(NOW);
          run += 1;
          const record = await declinedPeriod('generic_decline');
          const setOutcome = (outcome: string) =>
            app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: outcome as 'decline' } });
          setOutcome('decline');
          await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner: 'test' });
          let merchant = [app.clock.now().getTime()];
          for (const [i, s] of steps.entries()) {
            app.clock.advance(s.advanceHours * HOUR);
            setOutcome(s.outcome);
            const before = presented.of(record.user_id).length;
            const stored = await app.deps.billing.get(record);
            const doNotRetry = stored?.decline_class === 'do_not_retry';
            try {
              if (s.path === 'OPERATOR_RETRY') await retryBilling(deps, { subscriptionId: record.subscription_id, owner: 'test', actor: 'ops', reason: 'property' });
              else if (s.path === 'MANUAL') await manualPay(deps, { subscriptionId: record.subscription_id, owner: 'test', idempotencyKey: `k-${run}-${i}` });
              else if (s.path === 'BALANCE_WEBHOOK') await collectOnBalanceEvent(deps, { event: balanceEventOf(record.user_id), thresholdCents: 5000, owner: 'test', stopAfter: () => false });
              else await runCollectionAttempt(deps, { key: record, process: s.path, owner: 'test' });
            } catch (error) {
              if (!(error instanceof PaymentHoldError)) throw error;
            }
            const made = presented.of(record.user_id).length - before;
            if (doNotRetry) expect(made).toBe(0);
            if (made > 0 && s.path !== 'MANUAL') merchant = [...merchant, app.clock.now().getTime()];
            const now = app.clock.now().getTime();
            for (const ceiling of NETWORK_CEILINGS.visa) expect(merchant.filter((t) => t > now - ceiling.windowMs).length).toBeLessThanOrEqual(ceiling.max);
            // A successful collection (none here: every outcome declines) would end the test's premise.
            expect((await app.deps.billing.get(record))?.billing_status).toBe('FAILED');
          }
        },
      ),
      { numRuns: 6 },
    );
  }, 240_000);
});
