import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CollectionMessage } from '../../src/domain/collections.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { makeLoanPayment } from '../../src/domain/use-cases/make-loan-payment.js';
import { retryLoanPayment } from '../../src/domain/use-cases/retry-loan-payment.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { responseOf } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { achDelivery, achEventBody } from '../support/webhooks.js';
import { DAY } from '../support/time.js';

/**
 * One ACH return, one failure (DESIGN 4, 4.1): a return reaches the ach-handler again (the bank's
 * redelivery, the same return under another event id), out of order (a settlement after the return,
 * a return after the settlement) or late (an older entry's return after a re-presentment). Each
 * real return changes the period once: one FAILED audit row, one re-presentment granted, one
 * return in the NACHA return-rate counters; an older entry's return is answered 200 and changes
 * nothing, never a 409 the bank would repeat forever. Real paths: the attempt (the simulator as the
 * bank's ACH processor), signed deliveries to the ach-handler, DynamoDB Local.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const owner = 'ach-return-once-test';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'ach-once', now: NOW });
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve' });
});

const reread = async (r: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(r))!;
const rowsOf = async (r: BillingRecord) => (await app.deps.billing.history(r.subscription_id, { limit: 100 })).items;
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

async function deliver(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return responseOf(await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
}

/** The bank's event for the entry `confirmationId` of the period. */
function bankEvent(record: BillingRecord, type: 'settled' | 'returned' | 'chargeback', confirmationId: string, returnCode?: string) {
  return achEventBody(record, type, confirmationId, formatInstant(app.clock.now()), returnCode ? { return_code: returnCode } : {});
}

/** Returns counted in the NACHA gauges (DESIGN 4.1), as a fresh collections run reports them. */
async function returnsCounted(): Promise<{ overall: number; unauthorized: number }> {
  app.collectionsQueue.clear();
  await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(), lambdaContext());
  app.collectionsQueue.bodies<CollectionMessage>();
  const rates = app.metrics.returnRates.at(-1)!;
  return { overall: rates.overall.returns, unauthorized: rates.unauthorized.returns };
}

/** An ACH period presented by the scheduled attempt: ACHSENT with the bank's confirmation id. */
async function presented(): Promise<BillingRecord> {
  const record = dueRecord(app.clock.now(), 'ach');
  await seedRecords(app, record);
  expect(await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner })).toMatchObject({ kind: 'submitted' });
  return reread(record);
}

function counted(r: BillingRecord) {
  return {
    billing_status: r.billing_status,
    version: r.version,
    transaction_id: r.transaction_id,
    payment_attempts: r.payment_attempts,
    ach_represented: r.ach_represented,
    ach_blocked: r.ach_blocked,
    ach_unauthorized: r.ach_unauthorized,
    ach_return_code: r.ach_return_code,
    last_attempt_date: r.last_attempt_date,
  };
}

describe('an ACH return the period already recorded', () => {
  it('R01 delivered again, and the same return under another event id, change nothing and are counted once', async () => {
    const sent = await presented();
    const before = await returnsCounted();
    const ret = bankEvent(sent, 'returned', sent.transaction_id!, 'R01');
    expect(await deliver(ret)).toMatchObject({ status: 200, body: { status: 'applied', effect: 'represent', record_status: 'FAILED' } });
    const returned = await reread(sent);
    expect(returned).toMatchObject({ billing_status: 'FAILED', ach_represented: 1, ach_return_code: 'R01' });
    const rows = (await rowsOf(sent)).length;

    expect(await deliver(ret)).toMatchObject({ status: 200, body: { status: 'duplicate' } });
    expect(await deliver({ ...ret, event_id: `ach_${randomUUID()}` })).toMatchObject({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });
    // A different code for the same entry is not a second return either.
    expect(await deliver({ ...bankEvent(sent, 'returned', sent.transaction_id!, 'R09') })).toMatchObject({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });

    expect(counted(await reread(sent))).toEqual(counted(returned));
    expect(await rowsOf(sent)).toHaveLength(rows);
    expect((await returnsCounted()).overall - before.overall).toBe(1);
  });

  it('a return after the settlement reverses the collection once; its redelivery does not reverse it again', async () => {
    const sent = await presented();
    const before = await returnsCounted();
    expect(await deliver(bankEvent(sent, 'settled', sent.transaction_id!))).toMatchObject({ body: { status: 'applied', record_status: 'COMPLETED' } });
    const ret = bankEvent(sent, 'returned', sent.transaction_id!, 'R01');
    expect(await deliver(ret)).toMatchObject({ body: { status: 'applied', reversed: true, record_status: 'FAILED' } });
    const reversed = await reread(sent);
    expect(reversed.ach_represented).toBe(1);
    expect(await deliver({ ...ret, event_id: `ach_${randomUUID()}` })).toMatchObject({ body: { status: 'ignored', reason: 'already_applied' } });
    // The settlement delivered again after the return does not complete the period again.
    expect(await deliver(bankEvent(sent, 'settled', sent.transaction_id!))).toMatchObject({ body: { status: 'ignored', reason: 'status' } });
    expect(counted(await reread(sent))).toEqual(counted(reversed));
    expect((await returnsCounted()).overall - before.overall).toBe(1);
  });

  it('an unauthorized return (R10) and the chargeback for the same entry are one chargeback', async () => {
    const sent = await presented();
    const before = await returnsCounted();
    expect(await deliver(bankEvent(sent, 'returned', sent.transaction_id!, 'R10'))).toMatchObject({ body: { status: 'applied', effect: 'unauthorized' } });
    const charged = await reread(sent);
    expect(await deliver(bankEvent(sent, 'chargeback', sent.transaction_id!))).toMatchObject({ body: { status: 'ignored', reason: 'already_applied' } });
    expect(counted(await reread(sent))).toEqual(counted(charged));
    const after = await returnsCounted();
    expect([after.overall - before.overall, after.unauthorized - before.unauthorized]).toEqual([1, 1]);
  });

  it("an older entry's return after a re-presentment is answered 200 and changes nothing, before and after the new entry's own return", async () => {
    const sent = await presented();
    const first = sent.transaction_id!;
    const firstReturn = bankEvent(sent, 'returned', first, 'R01');
    expect(await deliver(firstReturn)).toMatchObject({ body: { status: 'applied', effect: 'represent' } });

    // The daily retry re-presents the entry (RETRY PYMT): a new entry, a new confirmation id.
    app.clock.set(new Date(Date.parse(NOW) + DAY + 60_000).toISOString());
    expect(await runCollectionAttempt(app.deps, { key: sent, process: 'RETRY', owner })).toMatchObject({ kind: 'submitted' });
    const represented = await reread(sent);
    expect(represented.transaction_id).not.toBe(first);
    expect(chargesOf(sent.user_id).map((c) => c.reinitiated ?? false)).toEqual([false, true]);

    // The first entry's return delivered again while the new entry is out: not this entry's.
    expect(await deliver({ ...firstReturn, event_id: `ach_${randomUUID()}` })).toMatchObject({ status: 200, body: { status: 'ignored', reason: 'confirmation_mismatch' } });
    expect(counted(await reread(sent))).toEqual(counted(represented));

    // The new entry comes back too: the second and last re-presentment is granted, once.
    const second = bankEvent(sent, 'returned', represented.transaction_id!, 'R01');
    expect(await deliver(second)).toMatchObject({ body: { status: 'applied', effect: 'represent', record_status: 'FAILED' } });
    const returnedTwice = await reread(sent);
    expect(returnedTwice).toMatchObject({ billing_status: 'FAILED', ach_represented: 2 });
    const before = await returnsCounted();
    const rows = (await rowsOf(sent)).length;

    // The first entry's return again, now that the period is FAILED on the second entry: recorded long ago, a 200.
    expect(await deliver({ ...firstReturn, event_id: `ach_${randomUUID()}` })).toMatchObject({ status: 200, body: { status: 'ignored', reason: 'confirmation_mismatch' } });
    expect(await deliver({ ...second, event_id: `ach_${randomUUID()}` })).toMatchObject({ status: 200, body: { status: 'ignored', reason: 'already_applied' } });
    expect(counted(await reread(sent))).toEqual(counted(returnedTwice));
    expect(await rowsOf(sent)).toHaveLength(rows);
    expect((await returnsCounted()).overall).toBe(before.overall);
  });

  it('a return for an entry the period has not recorded yet is still answered 409 not_yet_recorded (DESIGN 4.1)', async () => {
    const sent = await presented();
    expect(await deliver(bankEvent(sent, 'returned', sent.transaction_id!, 'R01'))).toMatchObject({ body: { status: 'applied' } });
    // The re-presentment reached the bank and its attempt died before its write: the period shows the first entry.
    const unrecorded = `conf-unrecorded-${randomUUID()}`;
    expect(await deliver(bankEvent(sent, 'returned', unrecorded, 'R01'))).toMatchObject({ status: 409, body: { error: { code: 'not_yet_recorded' } } });
  });
});

describe('an ACH return of a loan payment the payment already recorded', () => {
  it("an older entry's return after the retry's own return is answered 200 and changes nothing", async () => {
    const userId = `user-${randomUUID()}`;
    const made = await makeLoanPayment(app.deps, { user_id: userId, loan_id: 'loan-1', payment_id: `pay_${randomUUID().replaceAll('-', '')}`, amount_cents: 5000, payment_method: 'ach', account_last_four: '6789' });
    const payment = made.payment;
    const ref = { kind: 'loan_payment', user_id: userId, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id };
    const loanReturn = (confirmationId: string) => ({ event_id: `ach_${randomUUID()}`, type: 'returned', return_code: 'R01', confirmation_id: confirmationId, amount_cents: 5000, occurred_at: formatInstant(app.clock.now()), reference: ref });
    const current = async () => (await app.deps.payments.get(userId, payment.loc_loan_id, payment.loc_payment_id))!;

    const first = payment.loc_confirmation_id!;
    expect(await deliver(loanReturn(first))).toMatchObject({ body: { status: 'applied', effect: 'retry', record_status: 'RETRY' } });
    const retry = await current();
    app.clock.set(new Date(Date.parse(retry.loc_next_attempt_at!) + 60_000).toISOString());
    expect(await retryLoanPayment(app.deps, { user_id: userId, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id, owner })).toMatchObject({ kind: 'submitted' });
    const resent = await current();
    expect(resent.loc_confirmation_id).not.toBe(first);
    expect(await deliver(loanReturn(resent.loc_confirmation_id!))).toMatchObject({ body: { status: 'applied', record_status: 'RETRY' } });
    const returnedTwice = await current();

    expect(await deliver(loanReturn(first))).toMatchObject({ status: 200, body: { status: 'ignored', reason: 'confirmation_mismatch' } });
    expect(await current()).toEqual(returnedTwice);
  });
});
