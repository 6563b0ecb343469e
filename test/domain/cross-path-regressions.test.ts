import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { failureState } from '../../src/domain/ladder.js';
import type { LockStore } from '../../src/domain/ports/locks.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { nextPeriodDate } from '../../src/domain/billing-record.js';
import { applyMembershipEvent, membershipEventSchema } from '../../src/domain/use-cases/membership/apply-membership-event.js';
import { changeBillingDate } from '../../src/domain/use-cases/change-billing-date.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import type { UseCaseDeps } from '../../src/domain/use-cases/deps.js';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import { waive } from '../../src/domain/use-cases/waive.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { recordsOf, seedRecords } from '../support/seed.js';
import { achDelivery, achEventBody, stripeDelivery, stripeEvent } from '../support/webhooks.js';
import { DAY } from '../support/time.js';

/**
 * The nine cases of issue 9, where two paths meet, each reproduced on DynamoDB Local through the
 * real stores and use cases. Each failed before membership intent had attributes of its own.
 */

const NOW = '2026-12-10T12:00:00.000Z';
const owner = 'regression-test';

let app: TestApp;
let deps: UseCaseDeps;

beforeAll(async () => {
  app = await createTestApp({ label: 'cross-path', now: NOW });
  deps = app.deps;
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve' });
});

const membership = (type: string, userId: string, extra: Record<string, unknown> = {}) =>
  membershipEventSchema.parse({ event_id: randomUUID(), type, user_id: userId, occurred_at: formatInstant(app.clock.now()), ...extra });

const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

/** The collections run on one user: every due record attempted on the scheduled path. */
async function collectDue(userId: string): Promise<void> {
  for (const record of await recordsOf(app, userId)) {
    if (Date.parse(record.billing_date) > app.clock.now().getTime()) continue;
    const process = record.billing_status === 'PAUSED' ? 'PAUSE' : record.billing_status === 'FAILED' ? 'RETRY' : 'SCHEDULED';
    await runCollectionAttempt(deps, { key: record, process, owner });
  }
}

/** A lock store whose release always fails after the change committed. */
function failingRelease(locks: LockStore): LockStore {
  return {
    tryAcquire: (lease, nowMs) => locks.tryAcquire(lease, nowMs),
    renew: (key, previous, next) => locks.renew(key, previous, next),
    release: async () => {
      throw new Error('release failed: connection reset');
    },
  };
}

describe('money semantics across paths (issue 9 regressions)', () => {
  it('1. a due-date change keeps a pending cancel: the member who cancelled is never charged', async () => {
    const record = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) + 5 * DAY)), payment_method: 'pinless' });
    await seedRecords(app, record);
    await applyMembershipEvent(deps, { event: membership('CANCEL', record.user_id), owner });
    const moved = await changeBillingDate(deps, { subscriptionId: record.subscription_id, owner, billingDate: '2026-12-20T00:00:00.000000000Z', actor: 'op', reason: 'asked' });
    expect(moved.cancel_requested_at).toBeDefined();
    app.clock.set('2026-12-20T01:00:00.000Z');
    await collectDue(record.user_id);
    const records = await recordsOf(app, record.user_id);
    expect(records.map((r) => r.billing_status)).toEqual(['CANCELLED']);
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it('2a. a waive of a cancel-requested period opens no successor: nothing is charged next month', async () => {
    const record = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) + 5 * DAY)), payment_method: 'pinless' });
    await seedRecords(app, record);
    await applyMembershipEvent(deps, { event: membership('CANCEL', record.user_id), owner });
    await waive(deps, { subscriptionId: record.subscription_id, owner, reason: 'goodwill', actor: 'op' });
    app.clock.set('2027-02-01T00:00:00.000Z');
    await collectDue(record.user_id);
    expect((await recordsOf(app, record.user_id)).map((r) => r.billing_status)).toEqual(['WAIVED']);
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it('2b. a waive of the first month of a 3-month pause keeps the other two months of the pause', async () => {
    const record = makeRecord({ billing_date: '2026-12-15T00:00:00.000000000Z', payment_method: 'pinless', billing_anchor_day: 15 });
    await seedRecords(app, record);
    await applyMembershipEvent(deps, { event: membership('PAUSE', record.user_id, { months: 3 }), owner });
    await waive(deps, { subscriptionId: record.subscription_id, owner, reason: 'first month free', actor: 'op' });
    const [next] = await recordsOf(app, record.user_id);
    expect(next).toMatchObject({ billing_status: 'PAUSED', paused_months: 2, billing_date: '2027-01-15T00:00:00.000000000Z' });
    for (const day of ['2027-01-15T01:00:00.000Z', '2027-02-15T01:00:00.000Z', '2027-03-15T01:00:00.000Z']) {
      app.clock.set(day);
      await collectDue(record.user_id);
    }
    const charges = chargesOf(record.user_id);
    expect(charges).toHaveLength(1);
    expect(charges[0]!.reference).toMatchObject({ billing_date: '2027-03-15T00:00:00.000000000Z' });
  });

  it('3. a due-date change moves the anchor: the 1st moved to Dec 30 bills Dec 30 then Jan 30; the 30th moved to the 11th bills Jan 11', async () => {
    const first = makeRecord({ billing_date: '2027-01-01T00:00:00.000000000Z', payment_method: 'pinless', billing_anchor_day: 1 });
    const thirtieth = makeRecord({ billing_date: '2026-12-30T00:00:00.000000000Z', payment_method: 'pinless', billing_anchor_day: 30 });
    await seedRecords(app, first, thirtieth);
    await changeBillingDate(deps, { subscriptionId: first.subscription_id, owner, billingDate: '2026-12-30T00:00:00.000000000Z' });
    await changeBillingDate(deps, { subscriptionId: thirtieth.subscription_id, owner, billingDate: '2026-12-11T00:00:00.000000000Z' });
    app.clock.set('2026-12-30T01:00:00.000Z');
    await collectDue(first.user_id);
    await collectDue(thirtieth.user_id);
    expect((await recordsOf(app, first.user_id)).map((r) => r.billing_date)).toEqual(['2027-01-30T00:00:00.000000000Z', '2026-12-30T00:00:00.000000000Z']);
    expect((await recordsOf(app, thirtieth.user_id)).map((r) => r.billing_date)).toEqual(['2027-01-11T00:00:00.000000000Z', '2026-12-11T00:00:00.000000000Z']);
  });

  it('4. PAUSE of 1 month on an ANNUAL plan moves the next charge one month, never a year', async () => {
    const record = makeRecord({ billing_date: '2026-12-15T00:00:00.000000000Z', term: 'ANNUAL', payment_method: 'pinless', billing_anchor_day: 15 });
    await seedRecords(app, record);
    await applyMembershipEvent(deps, { event: membership('PAUSE', record.user_id, { months: 1 }), owner });
    app.clock.set('2026-12-15T01:00:00.000Z');
    await collectDue(record.user_id);
    const [next, skipped] = await recordsOf(app, record.user_id);
    expect(skipped).toMatchObject({ billing_status: 'SKIPPED' });
    expect(next).toMatchObject({ billing_status: 'PENDING', billing_date: '2027-01-15T00:00:00.000000000Z', term: 'ANNUAL' });
    app.clock.set('2027-01-15T01:00:00.000Z');
    await collectDue(record.user_id);
    expect(chargesOf(record.user_id)).toHaveLength(1);
    expect((await recordsOf(app, record.user_id))[0]).toMatchObject({ billing_status: 'PENDING', billing_date: '2028-01-15T00:00:00.000000000Z' });
  });

  it('5. a Stripe checkout for a user whose chain is open opens no second chain', async () => {
    const record = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) + 5 * DAY)), payment_method: 'card' });
    await seedRecords(app, record);
    const session = {
      id: `cs_${randomUUID().replace(/-/g, '')}`,
      object: 'checkout.session',
      mode: 'subscription',
      payment_status: 'paid',
      status: 'complete',
      amount_total: 1999,
      currency: 'usd',
      metadata: { user_id: record.user_id, tier: 'plus:v3', term: 'MONTHLY', first_billing_date: '2027-01-03T00:00:00Z' },
    };
    const answer = await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(
      stripeDelivery(stripeEvent('checkout.session.completed', session, app.clock.now().getTime()), { signedAtMs: app.wallClock.now().getTime() }),
    );
    expect(answer.statusCode).toBe(200);
    expect((await recordsOf(app, record.user_id)).map((r) => r.subscription_id)).toEqual([record.subscription_id]);
  });

  it('6. a re-delivered PAUSE with the same occurred_at as a later UNPAUSE is not applied again', async () => {
    const record = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) + 5 * DAY)), payment_method: 'pinless' });
    await seedRecords(app, record);
    const pause = membership('PAUSE', record.user_id, { months: 2 });
    const unpause = membership('UNPAUSE', record.user_id);
    expect(pause.occurred_at).toBe(unpause.occurred_at);
    await applyMembershipEvent(deps, { event: pause, owner });
    await applyMembershipEvent(deps, { event: unpause, owner });
    expect(await applyMembershipEvent(deps, { event: pause, owner })).toEqual({ kind: 'duplicate' });
    expect(await deps.billing.get(record)).toMatchObject({ billing_status: 'PENDING' });
  });

  it('7. retry-billing, waive and due-date change answer their committed result when the lock release fails', async () => {
    const flaky: UseCaseDeps = { ...deps, locks: failingRelease(deps.locks) };
    const failed = makeRecord({ billing_status: 'FAILED', billing_date: formatInstant(new Date(Date.parse(NOW) - 2 * DAY)), payment_method: 'pinless', payment_attempts: 1, last_attempt_date: formatInstant(new Date(Date.parse(NOW) - 2 * DAY)) });
    const toWaive = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) + 5 * DAY)), payment_method: 'pinless' });
    const toMove = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) + 5 * DAY)), payment_method: 'pinless' });
    await seedRecords(app, failed, toWaive, toMove);
    await expect(retryBilling(flaky, { subscriptionId: failed.subscription_id, owner, actor: 'op', reason: 'fixed' })).resolves.toMatchObject({ outcome: 'billed' });
    await expect(waive(flaky, { subscriptionId: toWaive.subscription_id, owner, actor: 'op', reason: 'goodwill' })).resolves.toMatchObject({ billing_status: 'WAIVED' });
    await expect(changeBillingDate(flaky, { subscriptionId: toMove.subscription_id, owner, billingDate: '2026-12-28T00:00:00.000000000Z' })).resolves.toMatchObject({
      billing_date: '2026-12-28T00:00:00.000000000Z',
    });
  });

  it('8. a closed balance gate on the scheduled path voids a live saved failure: the ladder starts over', async () => {
    const due = formatInstant(new Date(Date.parse(NOW) - 60_000));
    const record = makeRecord({
      billing_date: due,
      payment_method: 'ach',
      billing_failed_for: `${due}#0`,
      billing_failure_count: 6,
      billing_failed_at: formatInstant(new Date(Date.parse(NOW) - DAY)),
      billing_next_attempt_at: formatInstant(new Date(Date.parse(NOW) - 1000)),
      billing_last_error: 'An internal error occurred.',
    });
    await seedRecords(app, record);
    expect(failureState(record)).toBe('retrying');
    app.simulator.configure({ default: 'approve', accounts: { [record.user_id]: { status: 'active', available_balance_cents: 100 } } });
    expect((await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner })).kind).toBe('declined');
    const after = (await deps.billing.get(record))!;
    expect(after.billing_status).toBe('FAILED');
    expect(failureState(after)).toBe('healthy');
    expect(chargesOf(record.user_id)).toHaveLength(0);
  });

  it('9. an ACH settlement for a record still PENDING is answered 409 not_yet_recorded, and settles once the repair records it', async () => {
    const record: BillingRecord = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) - 60_000)), payment_method: 'ach' });
    await seedRecords(app, record);
    // The bank accepted the debit, then the attempt crashed before its write.
    const accepted = await app.simulator.submit({
      idempotency_key: `${record.subscription_id}:1`,
      user_id: record.user_id,
      amount_cents: record.amount_cents,
      rail: 'ach',
      reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
    });
    const confirmation = (accepted as { confirmation_id: string }).confirmation_id;
    const ach = createAchHandler(app.depsFor('ach-handler'));
    const body = achEventBody(record, 'settled', confirmation, formatInstant(app.clock.now()));
    const first = await ach(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
    expect(first.statusCode).toBe(409);
    expect(JSON.parse(first.body!)).toMatchObject({ error: { code: 'not_yet_recorded' } });
    expect(await deps.billing.get(record)).toMatchObject({ billing_status: 'PENDING', version: record.version });
    // The repair sends the same key and records the submission; the redelivery then settles it.
    expect((await runCollectionAttempt(deps, { key: record, process: 'SCHEDULED', owner })).kind).toBe('submitted');
    const again = await ach(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }));
    expect(again.statusCode).toBe(200);
    expect(await deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED', transaction_id: confirmation });
    expect(chargesOf(record.user_id)).toHaveLength(1);
  });
});

describe('chain identity: a closed chain’s record never ends a new chain (F10)', () => {
  const nanoLater = (date: string) => date.replace(/000Z$/, '001Z');
  /** A period of chain `new` due an hour ago, and a closed chain's record at its next period's date. */
  async function collision(overrides: Partial<BillingRecord> = {}) {
    const head = makeRecord({ billing_date: formatInstant(new Date(Date.parse(NOW) - 3_600_000)), payment_method: 'pinless', chain_id: 'chain-new', ...overrides });
    const nextDate = nextPeriodDate(head);
    const closed = makeRecord({ user_id: head.user_id, billing_date: nextDate, billing_status: 'WAIVED', chain_id: 'chain-old' });
    await seedRecords(app, head, closed);
    return { head, nextDate, closed };
  }
  const chainOf = async (userId: string) => (await recordsOf(app, userId)).filter((r) => r.chain_id === 'chain-new').sort((a, b) => (a.billing_date < b.billing_date ? -1 : 1));

  it('a waive’s successor takes the next free instant', async () => {
    const { head, nextDate, closed } = await collision();
    await waive(deps, { subscriptionId: head.subscription_id, owner, actor: 'op', reason: 'goodwill' });
    expect((await chainOf(head.user_id)).map((r) => [r.billing_date, r.billing_status])).toEqual([
      [head.billing_date, 'WAIVED'],
      [nanoLater(nextDate), 'PENDING'],
    ]);
    expect(await deps.billing.get(closed)).toEqual(closed);
  });

  it('the pause run’s successor takes the next free instant', async () => {
    const { head, nextDate } = await collision({ billing_status: 'PAUSED', paused_months: 1 });
    expect((await runCollectionAttempt(deps, { key: head, process: 'PAUSE', owner })).kind).toBe('pause_advanced');
    expect((await chainOf(head.user_id)).map((r) => [r.billing_date, r.billing_status])).toEqual([
      [head.billing_date, 'SKIPPED'],
      [nanoLater(nextDate), 'PENDING'],
    ]);
  });

  it('a due-date change of a displaced period links its predecessor: the predecessor’s attempt opens no second period', async () => {
    const { head, nextDate, closed } = await collision();
    const displaced = makeRecord({ user_id: head.user_id, billing_date: nanoLater(nextDate), chain_id: 'chain-new', payment_method: 'pinless' });
    await seedRecords(app, displaced);
    const to = formatInstant(new Date(Date.parse(nextDate) + 5 * DAY));
    await changeBillingDate(deps, { subscriptionId: displaced.subscription_id, owner, billingDate: to, actor: 'op', reason: 'asked' });
    expect((await runCollectionAttempt(deps, { key: head, process: 'SCHEDULED', owner })).kind).toBe('collected');
    expect((await chainOf(head.user_id)).map((r) => [r.billing_date, r.billing_status, r.subscription_id])).toEqual([
      [head.billing_date, 'COMPLETED', head.subscription_id],
      [to, 'PENDING', displaced.subscription_id],
    ]);
    expect(await deps.billing.get(closed)).toEqual(closed);
  });
});

