import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { ACH_RATE_COUNTER_SHARDS, ACH_RATE_PARTITION } from '../../src/adapters/dynamodb/ach-rate-counters.js';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { CollectionMessage } from '../../src/domain/collections.js';
import type { BillingRecord } from '../../src/domain/records.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import { makeLoanPayment } from '../../src/domain/use-cases/make-loan-payment.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { responseOf } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { achDelivery, achEventBody } from '../support/webhooks.js';
import { DAY } from '../support/time.js';

/**
 * ACH return-rate gauges (DESIGN 4.1) through the real paths on DynamoDB Local: attempts that
 * present ACH debits (subscriptions through the batch-worker, a loan payment through its use case),
 * returns through the ach-handler, and the collections-job's gauges over the trailing 60 days.
 */

const NOW = '2026-12-01T12:00:00.000Z';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'ach-rates', now: NOW });
  app.simulator.configure({ default: 'approve' });
});

/** One collections run and one batch-worker delivery of what it enqueued. */
async function collect(): Promise<void> {
  app.collectionsQueue.clear();
  await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(), lambdaContext());
  const bodies = app.collectionsQueue.bodies<CollectionMessage>();
  if (bodies.length > 0) await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(bodies.map((b) => sqsRecord(b))), lambdaContext());
}

/** The gauges of a fresh collections run. */
async function gauges() {
  app.collectionsQueue.clear();
  await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(), lambdaContext());
  return app.metrics.returnRates.at(-1)!;
}

const reread = async (r: BillingRecord) => (await app.deps.billing.get(r))!;

async function deliver(body: Record<string, unknown>) {
  return responseOf(await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
}

async function returnSubscription(r: BillingRecord, code: string, eventId = `ach_${randomUUID()}`) {
  const read = await reread(r);
  return deliver({ ...achEventBody(read, 'returned', read.transaction_id!, formatInstant(app.clock.now()), { return_code: code }), event_id: eventId });
}

describe('ACH return-rate gauges (collections-job)', () => {
  let subs: BillingRecord[];
  let loan: LoanPayment;

  it('count every ACH debit presented and every return applied, by NACHA class, over subscriptions and loan payments', async () => {
    expect(await gauges()).toEqual({
      unauthorized: { percent: 0, returns: 0, debits: 0 },
      administrative: { percent: 0, returns: 0, debits: 0 },
      overall: { percent: 0, returns: 0, debits: 0 },
    });

    subs = Array.from({ length: 9 }, () => dueRecord(app.clock.now(), 'ach'));
    // A card payment is no ACH debit.
    const pinless = dueRecord(app.clock.now(), 'pinless');
    await seedRecords(app, ...subs, pinless);
    await collect();
    for (const s of subs) expect((await reread(s)).billing_status).toBe('ACHSENT');
    expect((await reread(pinless)).billing_status).toBe('COMPLETED');

    const made = await makeLoanPayment(app.deps, {
      user_id: `user-${randomUUID()}`,
      loan_id: 'loan-1',
      payment_id: `pay_${randomUUID().replaceAll('-', '')}`,
      amount_cents: 5000,
      payment_method: 'ach',
      account_last_four: '6789',
    });
    loan = made.payment;
    expect(loan.loc_status).toBe('ACHSENT');

    const first = await returnSubscription(subs[0]!, 'R10', 'ach_evt_r10');
    expect(first.status).toBe(200);
    // A replay of the same return changes nothing and counts nothing.
    expect((await returnSubscription(subs[0]!, 'R10', 'ach_evt_r10')).body).toMatchObject({ status: 'duplicate' });
    // R51 is unauthorized for NACHA's rate and for the holds.
    await returnSubscription(subs[1]!, 'R51');
    await returnSubscription(subs[2]!, 'R02');
    // R01: re-presentable, counted in overall only.
    await returnSubscription(subs[3]!, 'R01');
    // A settlement is no return.
    const settled = await reread(subs[4]!);
    expect((await deliver(achEventBody(settled, 'settled', settled.transaction_id!, formatInstant(app.clock.now())))).body).toMatchObject({ status: 'applied', effect: 'settled' });
    // A loan payment returned for an invalid account number.
    const loanReturn = await deliver({
      event_id: `ach_${randomUUID()}`,
      type: 'returned',
      return_code: 'R03',
      confirmation_id: loan.loc_confirmation_id,
      amount_cents: loan.loc_amount,
      occurred_at: formatInstant(app.clock.now()),
      reference: { kind: 'loan_payment', user_id: loan.loc_user_id, loan_id: loan.loc_loan_id, payment_id: loan.loc_payment_id },
    });
    expect(loanReturn.body).toMatchObject({ status: 'applied' });

    // 10 debits (9 subscriptions, 1 loan payment); returns R10, R51 | R02, R03 | and R01.
    expect(await gauges()).toEqual({
      unauthorized: { percent: 20, returns: 2, debits: 10 },
      administrative: { percent: 20, returns: 2, debits: 10 },
      overall: { percent: 50, returns: 5, debits: 10 },
    });
  });

  it('a re-presented R01 entry is one more debit originated', async () => {
    app.clock.advance(DAY + 60_000);
    await collect();
    expect((await reread(subs[3]!)).billing_status).toBe('ACHSENT');
    expect(await gauges()).toMatchObject({ overall: { returns: 5, debits: 11 }, unauthorized: { returns: 2, debits: 11 } });
  });

  it('a return after the settlement is counted (an R10 can come 60 days later)', async () => {
    await returnSubscription(subs[4]!, 'R10');
    expect((await reread(subs[4]!)).billing_status).toBe('FAILED');
    expect(await gauges()).toMatchObject({ unauthorized: { returns: 3, debits: 11 }, overall: { returns: 6, debits: 11 } });
  });

  it('keeps the counters in small per-day items of a partition no user owns, read with one Query per table', async () => {
    const out = await app.db.client.send(
      new QueryCommand({ TableName: app.db.tables.billingActivity, KeyConditionExpression: 'user_id = :p', ExpressionAttributeValues: { ':p': { S: ACH_RATE_PARTITION } } }),
    );
    expect(out.Items!.length).toBeGreaterThan(0);
    expect(out.Items!.length).toBeLessThanOrEqual(2 * ACH_RATE_COUNTER_SHARDS);
    for (const item of out.Items!) expect(item.billing_date!.S).toMatch(/^DAY#2026-12-0[12]#\d{3}$/);
  });

  it('counts only the trailing 60 days: debits and returns of older days drop out', async () => {
    // Day 1 (2026-12-01) is the first of the window 59 days later...
    app.clock.set(formatInstant(new Date(Date.parse(NOW) + 59 * DAY)));
    expect((await gauges()).overall).toMatchObject({ debits: 11, returns: 6 });
    // ...and out of it on day 61, leaving the re-presentment and the late return of 2026-12-02.
    app.clock.set(formatInstant(new Date(Date.parse(NOW) + 60 * DAY)));
    expect(await gauges()).toEqual({
      unauthorized: { percent: 100, returns: 1, debits: 1 },
      administrative: { percent: 0, returns: 0, debits: 1 },
      overall: { percent: 100, returns: 1, debits: 1 },
    });
    app.clock.set(formatInstant(new Date(Date.parse(NOW) + 61 * DAY)));
    expect((await gauges()).overall).toEqual({ percent: 0, returns: 0, debits: 0 });
  });
});
