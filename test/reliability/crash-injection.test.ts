import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { beforeAll, describe, expect, it } from 'vitest';
import { InterruptedError, TransientError } from '../../src/domain/errors.js';
import { LOCK_LEASE_MS } from '../../src/domain/lock.js';
import type { BillingRecord, PaymentMethod } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import type { FunctionName } from '../../src/manifest/index.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord } from '../support/aws-events.js';
import { FaultInjector, faultyPorts, type FaultPoint, type FaultSpec } from '../support/faults.js';
import { httpEvent } from '../support/http-events.js';
import { allHistory, allRecords, dueRecord, ledgerViolations } from '../support/ledger.js';
import { seedRecords } from '../support/seed.js';
import { PAYMENT_METHODS } from '../support/unions.js';
import { runPath, type AttemptPath } from '../support/paths.js';
import { HOUR, SHORT_LOCK_LEASE_MS } from '../support/time.js';

/**
 * Crash injection (DESIGN 3, 5, 10): a fault at every step of every path, either one error of a
 * class (transient, interrupted, counted) after which the process goes on, or a crash after which
 * the process does nothing more. Then the normal flow resumes (the clock passes the lease and the
 * ladder's wait, the work runs again) and the books must balance: no double charge, no lost
 * charge, no missing or overwritten audit row, no lock held past its lease, and the ladder counting
 * only counted failures.
 */

const NOW = '2026-12-01T12:00:00.000Z';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'crash', now: NOW, settings: { lockLeaseMs: SHORT_LOCK_LEASE_MS } });
});

type Mode = 'crash' | 'transient' | 'interrupted' | 'counted';
const MODES: readonly Mode[] = ['crash', 'transient', 'interrupted', 'counted'];

function spec(point: FaultPoint, mode: Mode, nth = 1): FaultSpec {
  if (mode === 'crash') return { point, mode: 'crash', nth };
  const error =
    mode === 'transient'
      ? () => new TransientError(`injected transient fault at ${point}`)
      : mode === 'interrupted'
        ? () => new InterruptedError(`injected deadline at ${point}`)
        : () => new Error(`injected bug at ${point}`);
  return { point, mode: 'throw', error, nth };
}

/** One `name` process's deps, whose ports follow `faults`. */
function processDeps(faults: FaultInjector): (name: FunctionName) => AppDeps {
  return (name) => faultyPorts(app.depsFor(name), faults);
}


function setOutcome(userId: string, outcome: 'approve' | 'decline' | 'error'): void {
  const current = app.simulator.current();
  app.simulator.configure({ ...current, users: { ...current.users, [userId]: outcome } });
}

const ATTEMPT_POINTS: readonly FaultPoint[] = [
  'lock.acquire.after',
  'billing.find.after',
  'billing.get.after',
  'accounts.after',
  'processor.before',
  'processor.accepted',
  'billing.commit.before',
  'billing.commit.after',
  'lock.release.before',
];
const RAILS = PAYMENT_METHODS;
const CRASH_PATHS: readonly AttemptPath[] = ['scheduled', 'batch-worker', 'manual', 'operator'];

/** One scenario: fault, check the interim books, resume, check the settled books. */
async function faultThenResume(path: AttemptPath, point: FaultPoint, mode: Mode, rail: PaymentMethod, firstOutcome: 'approve' | 'error' = 'approve') {
  const [record] = await seedRecords(app, dueRecord(app.clock.now(), rail));
  setOutcome(record.user_id, firstOutcome);
  const faults = new FaultInjector([spec(point, mode)]);
  const first = await runPath(processDeps(faults), record, { path, requestKey: 'pay-1' });
  const label = `${path} ${mode} at ${point} (${rail}) → ${first.kind === 'outcome' ? first.outcome : first.kind}`;

  expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: false }), label).toEqual([]);

  // The normal flow resumes: the lease (and the ladder's first wait) pass, the processor is back, the work runs again.
  setOutcome(record.user_id, 'approve');
  app.clock.advance(25 * HOUR);
  const current = await app.deps.billing.get(record);
  const resumed = await runPath(app.depsFor, record, { path: current?.billing_status === 'FAILED' ? 'retry' : 'scheduled' });
  const after = await app.deps.billing.get(record);
  expect(['COMPLETED', 'ACHSENT'], `${label}; resumed → ${JSON.stringify(resumed)}`).toContain(after?.billing_status);
  const counted = mode === 'counted' || firstOutcome === 'error' ? 1 : 0;
  expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: counted }), label).toEqual([]);
  expect(app.simulator.charges().filter((c) => c.user_id === record.user_id), label).toHaveLength(1);
  return { faults, first };
}

describe('crash injection at every step of the collection attempt', () => {
  for (const path of CRASH_PATHS) {
    for (const mode of MODES) {
      it(`${path}: ${mode} at each step, then the normal flow resumes with the books balanced`, async () => {
        const results = await Promise.all(ATTEMPT_POINTS.map((point, i) => faultThenResume(path, point, mode, RAILS[i % RAILS.length]!)));
        // Every point but those a path never reaches fired: the queue paths locate no subscription, and
        // every path's attempt releases the lock inside its transaction (no separate release call).
        const unreachable = path === 'operator' || path === 'manual' ? 1 : 2;
        const fired = results.filter((r) => r.faults.fired.length > 0).length;
        expect(fired).toBeGreaterThanOrEqual(ATTEMPT_POINTS.length - unreachable);
      });
    }
  }

  it('saving a counted failure: a fault before or after RecordBillingFailure never double-counts or loses the charge', async () => {
    const points: FaultPoint[] = ['billing.recordFailure.before', 'billing.recordFailure.after'];
    await Promise.all(
      points.flatMap((point) => MODES.map((mode, i) => faultThenResume('scheduled', point, mode, RAILS[i % RAILS.length]!, 'error'))),
    );
  });

  it('throttling-like transient faults on every write of a path leave billing_failure_count at zero', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    for (let round = 0; round < 3; round++) {
      const faults = new FaultInjector([spec('billing.commit.before', 'transient')]);
      await runPath(processDeps(faults), record, { path: 'batch-worker' });
      app.clock.advance(SHORT_LOCK_LEASE_MS + 1);
    }
    const stored = await app.deps.billing.get(record);
    expect(stored?.billing_failure_count ?? 0).toBe(0);
    expect(stored?.billing_status).toBe('PENDING');
    expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
  });
});

/* ---------------- ACH ---------------- */

function achDelivery(body: unknown) {
  const raw = JSON.stringify(body);
  return httpEvent('POST', {
    route: '/webhooks/ach',
    body: raw,
    auth: null,
    headers: { 'x-ach-signature': signPayload(raw, TEST_SECRETS.achWebhook, Math.floor(app.wallClock.now().getTime() / 1000)) },
  });
}

describe('crash injection on the ach-handler', () => {
  const points: FaultPoint[] = ['billing.get.after', 'billing.commit.before', 'billing.commit.after'];
  it('a fault while settling, then the provider redelivers: settled once, one audit row for it', async () => {
    await Promise.all(
      points.flatMap((point) =>
        (['crash', 'transient', 'counted'] as const).map(async (mode) => {
          const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach', { billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: `sim_${randomUUID()}` }));
          const event = {
            event_id: `ach_${randomUUID()}`,
            type: 'settled',
            confirmation_id: record.transaction_id,
            amount_cents: 1999,
            occurred_at: formatInstant(app.clock.now()),
            reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
          };
          const first = await createAchHandler(processDeps(new FaultInjector([spec(point, mode)]))('ach-handler'))(achDelivery(event));
          expect(first.statusCode).not.toBe(200);
          const again = await createAchHandler(app.depsFor('ach-handler'))(achDelivery(event));
          expect(again.statusCode, `${mode} at ${point}: ${again.body}`).toBe(200);
          const replay = await createAchHandler(app.depsFor('ach-handler'))(achDelivery(event));
          expect(JSON.parse(replay.body ?? '{}')).toMatchObject({ status: 'duplicate' });
          expect((await app.deps.billing.get(record))?.billing_status).toBe('COMPLETED');
          const rows = await allHistory(app.deps.billing, record.subscription_id);
          expect(rows.filter((r) => r.updated_event === 'ACH_SETTLED')).toHaveLength(1);
          expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
        }),
      ),
    );
  });
});

/* ---------------- Stripe ---------------- */

function stripeDelivery(body: unknown) {
  const payload = JSON.stringify(body);
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: TEST_SECRETS.stripeWebhook, timestamp: Math.floor(app.wallClock.now().getTime() / 1000) });
  return httpEvent('POST', { route: '/webhooks/stripe', body: payload, auth: null, headers: { 'stripe-signature': signature } });
}

function paymentSucceeded(record: BillingRecord, intentId: string) {
  return {
    id: `evt_${randomUUID().replace(/-/g, '')}`,
    object: 'event',
    api_version: '2025-10-29.clover',
    created: Math.floor(app.clock.now().getTime() / 1000),
    type: 'payment_intent.succeeded',
    data: {
      object: {
        id: intentId,
        object: 'payment_intent',
        amount: record.amount_cents,
        metadata: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id },
      },
    },
  };
}

describe('crash injection on the stripe-webhook', () => {
  const points: FaultPoint[] = ['stripe.claim.after', 'billing.get.after', 'billing.commit.before', 'billing.commit.after', 'stripe.mark.before'];
  it('a fault while applying payment_intent.succeeded, then Stripe redelivers: applied once, the claim never stuck', async () => {
    await Promise.all(
      points.flatMap((point) =>
        (['crash', 'transient'] as const).map(async (mode) => {
          const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'card'));
          const intent = `pi_${randomUUID().replace(/-/g, '')}`;
          const event = paymentSucceeded(record, intent);
          const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
          await createStripeWebhookHandler(processDeps(new FaultInjector([spec(point, mode)]))('stripe-webhook'))(stripeDelivery(event));
          let answer = await handler(stripeDelivery(event));
          // A dead delivery's claim, one whose claim answer was lost, or one whose mark failed after
          // the apply, holds until its lease passes (a redelivery meanwhile is told 409); then the
          // redelivery takes it over.
          const claimMayBeHeld = mode === 'crash' || point === 'stripe.claim.after' || point === 'stripe.mark.before';
          if (claimMayBeHeld && answer.statusCode === 409) {
            app.clock.advance(61_000);
            answer = await handler(stripeDelivery(event));
          }
          expect(answer.statusCode, `${mode} at ${point}: ${answer.body}`).toBe(200);
          expect(JSON.parse((await handler(stripeDelivery(event))).body ?? '{}')).toMatchObject({ status: 'duplicate' });
          const stored = await app.deps.billing.get(record);
          expect(stored).toMatchObject({ billing_status: 'COMPLETED', transaction_id: intent, payment_attempts: 1 });
          const rows = await allHistory(app.deps.billing, record.subscription_id);
          expect(rows.filter((r) => r.billing_status === 'COMPLETED')).toHaveLength(1);
          // A dead delivery that took the user's lock and died holding it leaves the lock until its
          // lease passes, whether or not the redelivery needed it (that depends on the interleaving).
          if (mode === 'crash') app.clock.advance(LOCK_LEASE_MS + 1);
          expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
          expect((await app.deps.stripeEvents.get(event.id))?.status).toBe('processed');
        }),
      ),
    );
  });
});

/* ---------------- memberships ---------------- */

function membership(type: string, userId: string, extra: Record<string, unknown> = {}) {
  return { event_id: `mem_${randomUUID()}`, type, user_id: userId, occurred_at: formatInstant(app.clock.now()), ...extra };
}

describe('crash injection on the memberships-consumer', () => {
  it('a fault while applying NEW, then the stream redelivers: one first record, its audit row once', async () => {
    const points: FaultPoint[] = ['lock.acquire.after', 'billing.list.after', 'billing.commit.before', 'billing.commit.after', 'lock.release.before'];
    await Promise.all(
      points.flatMap((point) =>
        (['crash', 'transient', 'counted'] as const).map(async (mode) => {
          const userId = `user-${randomUUID()}`;
          const event = membership('NEW', userId, {
            plan: { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'ach', account_last_four: '6789', first_billing_date: formatInstant(new Date(app.clock.now().getTime() + 10 * 24 * HOUR)) },
          });
          const record = kinesisRecord(event);
          await createMembershipsConsumerHandler(processDeps(new FaultInjector([spec(point, mode)]))('memberships-consumer'))(kinesisEvent([record]));
          app.clock.advance(SHORT_LOCK_LEASE_MS + 1);
          const again = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([record]));
          expect(again.batchItemFailures, `${mode} at ${point}`).toEqual([]);
          const records = await allRecords(app.deps.billing, userId);
          expect(records).toHaveLength(1);
          expect(await allHistory(app.deps.billing, records[0]!.subscription_id)).toHaveLength(1);
          expect(await ledgerViolations(app, userId, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
        }),
      ),
    );
  });

  it('a crash inside PAUSE’s catch-up collection, then redelivery: the due period is charged once and recorded, the pause lands', async () => {
    const points: FaultPoint[] = ['processor.accepted', 'billing.commit.before', 'billing.commit.after', 'lock.release.before'];
    await Promise.all(
      points.map(async (point) => {
        const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
        setOutcome(record.user_id, 'approve');
        const kin = kinesisRecord(membership('PAUSE', record.user_id, { months: 2 }));
        const first = await createMembershipsConsumerHandler(processDeps(new FaultInjector([spec(point, 'crash')]))('memberships-consumer'))(kinesisEvent([kin]));
        // A failed release after the change committed does not fail the record: the committed result stands (DESIGN 3.1).
        expect(first.batchItemFailures, point).toHaveLength(point === 'lock.release.before' ? 0 : 1);
        app.clock.advance(SHORT_LOCK_LEASE_MS + 1);
        const again = await createMembershipsConsumerHandler(app.depsFor('memberships-consumer'))(kinesisEvent([kin]));
        expect(again.batchItemFailures, point).toEqual([]);
        expect((await app.deps.billing.get(record))?.billing_status, point).toBe('COMPLETED');
        const records = await allRecords(app.deps.billing, record.user_id);
        expect(records.some((r) => r.billing_status === 'PAUSED'), point).toBe(true);
        expect(app.simulator.charges().filter((c) => c.user_id === record.user_id)).toHaveLength(1);
        expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
      }),
    );
  });
});
