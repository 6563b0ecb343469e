import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { historyRowOf } from '../../src/domain/billing-record.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { STRIPE_EVENT_LEASE_MS } from '../../src/domain/stripe-events.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';
import { achDelivery, achEventBody } from '../support/webhooks.js';
import { billingRecord } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';

/**
 * DESIGN 15: ACH events are claimed by id, like Stripe's, on DynamoDB Local. A replayed event id
 * is answered 200 `duplicate` and writes nothing (no audit row, no movement, no record change); a
 * different id for the same outcome is decided by the record as before; a delivery that died
 * holding the claim loses it when its lease ends, and one for a submission not recorded yet
 * releases it, so no event is lost.
 */

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'ach-replays' });
});

beforeEach(() => {
  app.clock.set('2026-12-03T12:00:00.000Z');
});

const send = async (body: unknown) => parseBody(await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
const now = () => formatInstant(app.clock.now());
const historyOf = async (record: BillingRecord) => (await app.deps.billing.history(record.subscription_id, { limit: 100 })).items;
const movementsOf = async (userId: string) => (await app.deps.movements.listDay('ach', now().slice(0, 10))).filter((m) => m.user_id === userId);

async function achSent(): Promise<BillingRecord> {
  const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: `conf-${randomUUID()}` }));
  return record!;
}

describe('ach-handler: events claimed by id', () => {
  it('answers a replayed settlement id 200 duplicate: no second audit row, no second movement, the record unchanged', async () => {
    const record = await achSent();
    const body = achEventBody(record, 'settled', record.transaction_id, now());
    expect(await send(body)).toMatchObject({ status: 'applied', effect: 'settled', record_status: 'COMPLETED' });
    const [rows, movements, settled] = [await historyOf(record), await movementsOf(record.user_id), await app.deps.billing.get(record)];
    expect(movements).toHaveLength(1);

    app.clock.advance(60_000);
    expect(await send(body)).toEqual({ status: 'duplicate' });
    expect(await historyOf(record)).toEqual(rows);
    expect(await movementsOf(record.user_id)).toEqual(movements);
    expect(await app.deps.billing.get(record)).toEqual(settled);
    expect(await app.deps.achEventClaims.get(body.event_id)).toMatchObject({ status: 'processed', event_type: 'settled' });
  });

  it('decides a different id for the same outcome by the record, as before (already applied, nothing written)', async () => {
    const record = await achSent();
    expect(await send(achEventBody(record, 'settled', record.transaction_id, now()))).toMatchObject({ status: 'applied' });
    const rows = await historyOf(record);
    expect(await send(achEventBody(record, 'settled', record.transaction_id, now()))).toEqual({ status: 'ignored', reason: 'already_applied' });
    expect(await historyOf(record)).toEqual(rows);
  });

  it('answers a replayed return id without a second reversal: one return movement, one audit row for it', async () => {
    const record = await achSent();
    expect(await send(achEventBody(record, 'settled', record.transaction_id, now()))).toMatchObject({ status: 'applied' });
    const returned = achEventBody(record, 'returned', record.transaction_id, now(), { return_code: 'R01' });
    expect(await send(returned)).toMatchObject({ status: 'applied', reversed: true });
    const rows = await historyOf(record);
    expect(await send(returned)).toEqual({ status: 'duplicate' });
    expect(await historyOf(record)).toEqual(rows);
    expect((await movementsOf(record.user_id)).filter((m) => m.kind === 'return')).toHaveLength(1);
  });

  it('answers a replayed loan payment settlement id without effect', async () => {
    const payment: LoanPayment = {
      loc_user_id: `user-${randomUUID()}`,
      loc_loan_id: 'loan-replay',
      loc_payment_id: randomUUID(),
      loc_amount: 5000,
      loc_status: 'ACHSENT',
      loc_payment_method: 'ach',
      loc_process: 'AUTO',
      loc_confirmation_id: `conf-${randomUUID()}`,
      loc_payment_attempts: 1,
      loc_created_date: '2026-12-01T00:00:00.000000000Z',
      loc_last_updated: '2026-12-01T00:00:00.000000000Z',
      version: 1,
    };
    await app.deps.payments.create(payment, { actor: 'test:ach', reason: 'fixture' });
    const body = {
      event_id: `ach-${randomUUID()}`,
      type: 'settled',
      confirmation_id: payment.loc_confirmation_id,
      amount_cents: payment.loc_amount,
      occurred_at: now(),
      reference: { kind: 'loan_payment', user_id: payment.loc_user_id, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id },
    };
    expect(await send(body)).toMatchObject({ status: 'applied', record_status: 'COMPLETED' });
    const after = await app.deps.payments.get(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id);
    expect(await send(body)).toEqual({ status: 'duplicate' });
    expect(await app.deps.payments.get(payment.loc_user_id, payment.loc_loan_id, payment.loc_payment_id)).toEqual(after);
    expect(await movementsOf(payment.loc_user_id)).toHaveLength(1);
  });

  it('does not lose an event whose delivery died holding the claim: 409 in progress under the lease, applied after it', async () => {
    const record = await achSent();
    const body = achEventBody(record, 'settled', record.transaction_id, now());
    await app.deps.achEventClaims.claim(body.event_id, app.clock.now().getTime(), STRIPE_EVENT_LEASE_MS);
    expect(await send(body)).toMatchObject({ error: { code: 'event_in_progress' } });
    expect((await app.deps.billing.get(record))!.billing_status).toBe('ACHSENT');
    app.clock.advance(STRIPE_EVENT_LEASE_MS + 1000);
    expect(await send(body)).toMatchObject({ status: 'applied', record_status: 'COMPLETED' });
  });

  it('releases the claim of an outcome for a submission not recorded yet, so its redelivery applies', async () => {
    const [pending] = await seedRecords(app, billingRecord(app, { payment_method: 'ach' }));
    const confirmation = `conf-${randomUUID()}`;
    const body = achEventBody(pending!, 'settled', confirmation, now());
    expect(await send(body)).toMatchObject({ error: { code: 'not_yet_recorded' } });
    expect(await app.deps.achEventClaims.get(body.event_id)).toBeUndefined();
    // The attempt's repair records the submission; the bank delivers the outcome again.
    const sent = { ...pending!, billing_status: 'ACHSENT' as const, transaction_id: confirmation, payment_attempts: 1, version: pending!.version + 1, last_run_date: now() };
    await app.deps.billing.commit({ writes: [{ kind: 'update', read: pending!, record: sent }], history: [historyRowOf(sent)] });
    expect(await send(body)).toMatchObject({ status: 'applied', record_status: 'COMPLETED' });
  });
});
