import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { balanceWebhookEvent, responseOf } from '../support/http-events.js';
import { allHistory, dueRecord, ledgerViolations, tableItemCounts } from '../support/ledger.js';
import { seedRecords } from '../support/seed.js';
import {
  achDelivery,
  achEventBody,
  disputeObject,
  nowSeconds,
  paymentIntentObject,
  stripeDelivery,
  stripeEvent,
} from '../support/webhooks.js';

/**
 * Webhook storms (DESIGN 4, 6, 2.8): hundreds of concurrent deliveries of one event apply it
 * once; events out of order end in the right state; stale or forged signatures are refused with
 * 400 before anything is read or written.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const STORM = 300;

let app: TestApp;
const nowMs = () => app.clock.now().getTime();
/** The senders' clock: signatures are checked against wall time, not the business clock. */
const wallMs = () => app.wallClock.now().getTime();
const nowIso = () => formatInstant(app.clock.now());

beforeAll(async () => {
  app = await createTestApp({ label: 'storms', now: NOW });
});

function statuses(results: { statusCode?: number }[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of results) out[r.statusCode ?? 0] = (out[r.statusCode ?? 0] ?? 0) + 1;
  return out;
}

describe('storms of one event', () => {
  it(`${STORM} concurrent deliveries of one payment_intent.succeeded apply it once`, async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'card'));
    const intent = `pi_${randomUUID().replace(/-/g, '')}`;
    const event = stripeEvent('payment_intent.succeeded', paymentIntentObject(record, intent), nowMs());
    const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
    const results = await Promise.all(Array.from({ length: STORM }, () => handler(stripeDelivery(event, { signedAtMs: wallMs() }))));
    const bodies = results.map((r) => JSON.parse(r.body ?? '{}'));
    const processed = bodies.filter((b) => b.status === 'processed');
    expect(processed, JSON.stringify(statuses(results))).toHaveLength(1);
    expect(processed[0]).toMatchObject({ outcome: 'applied' });
    // Everyone else is told "duplicate" (200) or "in progress" (409: Stripe redelivers later).
    expect(results.every((r) => r.statusCode === 200 || r.statusCode === 409)).toBe(true);
    const redelivered = await Promise.all(results.filter((r) => r.statusCode === 409).map(() => handler(stripeDelivery(event, { signedAtMs: wallMs() }))));
    expect(redelivered.every((r) => JSON.parse(r.body ?? '{}').status === 'duplicate')).toBe(true);

    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED', transaction_id: intent, payment_attempts: 1 });
    const rows = await allHistory(app.deps.billing, record.subscription_id);
    expect(rows.filter((r) => r.billing_status === 'COMPLETED')).toHaveLength(1);
    expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
  });

  it(`${STORM} concurrent deliveries of one ACH settlement apply it once (the version fence, no lock)`, async () => {
    const confirmation = `sim_${randomUUID()}`;
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach', { billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: confirmation }));
    const body = achEventBody(record, 'settled', confirmation, nowIso());
    const handler = createAchHandler(app.depsFor('ach-handler'));
    const results = await Promise.all(Array.from({ length: STORM }, () => handler(achDelivery(body, { signedAtMs: wallMs() }))));
    const bodies = results.map((r) => JSON.parse(r.body ?? '{}'));
    expect(bodies.filter((b) => b.status === 'applied'), JSON.stringify(statuses(results))).toHaveLength(1);
    // Losers of the race see the record already settled (200) or, after a second conflict, ask for a redelivery (409).
    expect(results.every((r) => r.statusCode === 200 || r.statusCode === 409)).toBe(true);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'COMPLETED', updated_event: 'ACH_SETTLED' });
    const rows = await allHistory(app.deps.billing, record.subscription_id);
    expect(rows.filter((r) => r.updated_event === 'ACH_SETTLED')).toHaveLength(1);
    expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: true })).toEqual([]);
  });
});

/** Every order of `items`. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [items.slice()];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe('events out of order', () => {
  it('Stripe: a declined PaymentIntent and the next one succeeding, in either order, end COMPLETED on the successful one', async () => {
    for (const order of permutations(['failed', 'succeeded'] as const)) {
      const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'card'));
      const declined = `pi_${randomUUID().slice(0, 8)}`;
      const paid = `pi_${randomUUID().slice(0, 8)}`;
      const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
      for (const step of order) {
        const event =
          step === 'failed'
            ? stripeEvent('payment_intent.payment_failed', paymentIntentObject(record, declined, { last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds' } }), nowMs())
            : stripeEvent('payment_intent.succeeded', paymentIntentObject(record, paid), nowMs());
        expect((await handler(stripeDelivery(event, { signedAtMs: wallMs() }))).statusCode).toBe(200);
      }
      expect(await app.deps.billing.get(record), order.join(' → ')).toMatchObject({ billing_status: 'COMPLETED', transaction_id: paid });
      expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: true })).toEqual([]);
    }
  });

  it('Stripe: a dispute and a (re)delivered payment_intent.succeeded of the same payment, in either order, end disputed', async () => {
    for (const order of permutations(['succeeded', 'dispute'] as const)) {
      const intent = `pi_${randomUUID().slice(0, 8)}`;
      // The attempt already recorded the card payment; the webhook's succeeded is a late repeat of it.
      const [record] = await seedRecords(
        app,
        dueRecord(app.clock.now(), 'card', { billing_status: 'COMPLETED', transaction_id: intent, payment_attempts: 1, payment_error: '', completed_date: nowIso() }),
      );
      const handler = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
      for (const step of order) {
        const event =
          step === 'dispute'
            ? stripeEvent('charge.dispute.created', disputeObject(record, intent), nowMs())
            : stripeEvent('payment_intent.succeeded', paymentIntentObject(record, intent), nowMs());
        expect((await handler(stripeDelivery(event, { signedAtMs: wallMs() }))).statusCode).toBe(200);
      }
      expect(await app.deps.billing.get(record), order.join(' → ')).toMatchObject({ billing_status: 'FAILED', card_disputed: true, transaction_id: intent });
    }
  });

  it('ACH: a settlement and a chargeback of one entry, in either order, end charged back and never retried', async () => {
    for (const order of permutations(['settled', 'chargeback'] as const)) {
      const confirmation = `sim_${randomUUID()}`;
      const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach', { billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: confirmation }));
      const handler = createAchHandler(app.depsFor('ach-handler'));
      for (const type of order) expect((await handler(achDelivery(achEventBody(record, type, confirmation, nowIso()), { signedAtMs: wallMs() }))).statusCode).toBe(200);
      expect(await app.deps.billing.get(record), order.join(' → ')).toMatchObject({ billing_status: 'FAILED', ach_unauthorized: true });
    }
  });

  it('ACH: a late repeat of an older entry’s R01 return and the re-presentment’s settlement, in either order, end COMPLETED', async () => {
    for (const order of permutations(['late-return', 'settled'] as const)) {
      const first = `sim_${randomUUID()}`;
      const second = `sim_${randomUUID()}`;
      const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach', { billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: first }));
      const handler = createAchHandler(app.depsFor('ach-handler'));
      const returned = achEventBody(record, 'returned', first, nowIso(), { return_code: 'R01' });
      expect(JSON.parse((await handler(achDelivery(returned, { signedAtMs: wallMs() }))).body ?? '{}')).toMatchObject({ status: 'applied', effect: 'represent' });
      // The daily retry re-presents the debit as a new entry.
      const failed = (await app.deps.billing.get(record))!;
      expect(failed.billing_status).toBe('FAILED');
      const represented: BillingRecord = { ...failed, billing_status: 'ACHSENT', transaction_id: second, payment_attempts: 2, version: failed.version + 1, last_run_date: formatInstant(new Date(nowMs() + 1000)) };
      await app.deps.billing.commit({ writes: [{ kind: 'update', read: failed, record: represented }], history: [represented] });
      for (const step of order) {
        const body = step === 'settled' ? achEventBody(record, 'settled', second, nowIso()) : returned;
        expect((await handler(achDelivery(body, { signedAtMs: wallMs() }))).statusCode).toBe(200);
      }
      expect(await app.deps.billing.get(record), order.join(' → ')).toMatchObject({ billing_status: 'COMPLETED', transaction_id: second });
      expect(await ledgerViolations(app, record.user_id, { settled: false, lockFree: true })).toEqual([]);
    }
  });
});

describe('stale and forged signatures', () => {
  it('answers 400 invalid_signature and writes nothing, on the Stripe, ACH and balance webhooks', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'card'));
    const [achRecord] = await seedRecords(app, dueRecord(app.clock.now(), 'ach', { billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: 'sim_x' }));
    const before = await tableItemCounts(app);
    const stale = nowSeconds(wallMs()) - 10 * 60;
    const future = nowSeconds(wallMs()) + 10 * 60;
    const stripeBody = stripeEvent('payment_intent.succeeded', paymentIntentObject(record, 'pi_forged'), nowMs());
    const achBody = achEventBody(achRecord, 'settled', 'sim_x', nowIso());
    const balanceBody = { event_id: 'bal_1', user_id: record.user_id, institution_id: 'ins_1', available_balance_cents: 100000, current_balance_cents: 100000, occurred_at: nowIso() };
    const stripe = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
    const ach = createAchHandler(app.depsFor('ach-handler'));
    const balance = createBalanceWebhookHandler(app.depsFor('balance-webhook'));
    const signedStripe = stripeDelivery(stripeBody, { signedAtMs: wallMs() });
    const tamperedStripe = { ...signedStripe, body: JSON.stringify({ ...stripeBody, type: 'charge.refunded' }) };
    const signedAch = achDelivery(achBody, { signedAtMs: wallMs() });
    const tamperedAch = { ...signedAch, body: JSON.stringify({ ...achBody, type: 'chargeback' }) };
    const attempts = [
      stripe(stripeDelivery(stripeBody, { signedAtMs: wallMs(), timestamp: stale })),
      stripe(stripeDelivery(stripeBody, { signedAtMs: wallMs(), timestamp: future })),
      stripe(stripeDelivery(stripeBody, { signedAtMs: wallMs(), secret: 'whsec_forged' })),
      stripe(tamperedStripe),
      stripe({ ...signedStripe, headers: { ...signedStripe.headers, 'stripe-signature': '' } }),
      ach(achDelivery(achBody, { signedAtMs: wallMs(), timestamp: stale })),
      ach(achDelivery(achBody, { signedAtMs: wallMs(), timestamp: future })),
      ach(achDelivery(achBody, { signedAtMs: wallMs(), secret: 'forged' })),
      ach(tamperedAch),
      ach(achDelivery(achBody, { signedAtMs: wallMs(), signature: 't=1,v1=zz' })),
      balance(balanceWebhookEvent(balanceBody, TEST_SECRETS.balanceWebhook, stale)),
      balance(balanceWebhookEvent(balanceBody, 'forged', nowSeconds(wallMs()))),
      balance(balanceWebhookEvent(balanceBody, TEST_SECRETS.balanceWebhook, nowSeconds(wallMs()), { signature: 'v1=abc' })),
    ];
    for (const result of await Promise.all(attempts)) {
      const { status, body } = responseOf(result);
      expect(status).toBe(400);
      expect(body.error).toMatchObject({ code: 'invalid_signature', message: expect.any(String) });
    }
    expect(await tableItemCounts(app)).toEqual(before);
    expect(app.balanceEventsQueue.sent.filter((m) => m.body.includes(record.user_id))).toEqual([]);
    expect(await app.deps.billing.get(record)).toMatchObject({ billing_status: 'PENDING', version: 0 });
    expect(await app.deps.billing.get(achRecord)).toMatchObject({ billing_status: 'ACHSENT', version: 0 });
  });
});
