import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defaultInstruments } from '../../src/adapters/processor/simulator.js';
import { PaymentHoldError, ProcessorError } from '../../src/domain/errors.js';
import { achInstrumentId } from '../../src/domain/instruments/instrument.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { makeLoanPayment } from '../../src/domain/use-cases/make-loan-payment.js';
import { manualPay } from '../../src/domain/use-cases/manual-pay.js';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import { retryLoanPayment } from '../../src/domain/use-cases/retry-loan-payment.js';
import { sweepHeldPeriods } from '../../src/domain/use-cases/release-held.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { sqsEvent, sqsRecord } from '../support/aws-events.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { responseOf } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { DAY } from '../support/time.js';
import { achDelivery, achEventBody } from '../support/webhooks.js';

/**
 * Issue 31, cases 1-4: holds live on the instrument the payer pays with, not on one period or one
 * payment. The real handlers and use cases on DynamoDB Local, the simulator as the bank.
 */

const NOW = '2026-12-01T12:00:00.000Z';

/** The simulator behind a per-user script of processor errors and declines (then the simulator answers). */
class ScriptedProcessor implements PaymentProcessor {
  app!: TestApp;
  readonly scripts = new Map<string, ('error' | 'decline')[]>();

  async submit(request: PaymentRequest): Promise<PaymentResult> {
    const step = this.scripts.get(request.user_id)?.shift();
    if (step === 'error') throw new ProcessorError('processor_unavailable', 'The payment processor is unavailable.');
    if (step === 'decline') return { outcome: 'declined', decline_code: 'insufficient_funds', message: 'The payment was declined by the bank.' };
    return this.app.simulator.submit(request);
  }
}

let app: TestApp;
const processor = new ScriptedProcessor();

beforeAll(async () => {
  app = await createTestApp({ label: 'instrument-holds', now: NOW, processor });
  processor.app = app;
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve' });
});

const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
const reread = async (key: Pick<BillingRecord, 'user_id' | 'billing_date'>) => (await app.deps.billing.get(key))!;

async function scheduled(record: Pick<BillingRecord, 'user_id' | 'billing_date' | 'subscription_id'>, process: 'SCHEDULED' | 'RETRY' = 'SCHEDULED'): Promise<void> {
  const body = { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id, process, enqueued_at: formatInstant(app.clock.now()) };
  await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(body)]));
}

async function returnEntry(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return responseOf(await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
}

/** An ACH period collected by the schedule and returned with `code`; answers the next period. */
async function presentAndReturn(code: string): Promise<{ first: BillingRecord; next: BillingRecord }> {
  const [first] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
  await scheduled(first);
  const submitted = await reread(first);
  expect(submitted.billing_status).toBe('ACHSENT');
  expect(submitted.instrument_id).toBe(achInstrumentId(defaultInstruments(first.user_id).ach!.account_id, defaultInstruments(first.user_id).ach!.authorization_id));
  const answer = await returnEntry(achEventBody(first, 'returned', submitted.transaction_id, formatInstant(app.clock.now()), { return_code: code }));
  expect(answer.status).toBe(200);
  const next = (await app.deps.billing.listByUser(first.user_id)).items.find((r) => r.subscription_id !== first.subscription_id)!;
  expect(next.billing_status).toBe('PENDING');
  return { first, next };
}

describe('issue 31 case 1: an unauthorized or account-closed return stops the next period too', () => {
  for (const [code, rule, refusal] of [
    ['R10', 'nacha.unauthorized_return', 'ach_authorization_required'],
    ['R02', 'nacha.account_error', 'ach_account_invalid'],
  ] as const) {
    it(`${code}: the schedule does not debit the account again next month; the period is held with ${rule}`, async () => {
      const { first, next } = await presentAndReturn(code);
      app.clock.set(formatInstant(new Date(Date.parse(next.billing_date) + 60_000)));
      await scheduled(next);
      expect(chargesOf(first.user_id)).toHaveLength(1);
      const held = await reread(next);
      expect(held.billing_status).toBe('PENDING');
      expect(held.held_on).toMatchObject({ code: refusal, decided_by: rule });
      expect(held.decided_by).toBe(rule);
      // Held: off the schedule, and no successor opened for it.
      expect((await app.deps.billing.listByUser(first.user_id)).items).toHaveLength(2);
      const rows = (await app.deps.billing.history(next.subscription_id)).items;
      expect(rows[0]).toMatchObject({ billing_event: 'INSTRUMENT_HELD', decided_by: rule });
      const item = await app.deps.instruments.get(first.user_id);
      expect(Object.values(item.holds).flatMap((h) => Object.values(h))).toEqual([expect.objectContaining({ code: refusal, rule, set_by: expect.objectContaining({ return_code: code }) })]);
    });
  }

  it('R10: a manual pay on the same authorization answers 409 with decided_by and charges nothing', async () => {
    const { first, next } = await presentAndReturn('R10');
    app.clock.set(formatInstant(new Date(Date.parse(next.billing_date) + 60_000)));
    const refused = manualPay(app.depsFor('api'), { subscriptionId: next.subscription_id, owner: 'test', idempotencyKey: randomUUID() });
    await expect(refused).rejects.toBeInstanceOf(PaymentHoldError);
    await expect(refused).rejects.toMatchObject({ code: 'ach_authorization_required', decidedBy: 'nacha.unauthorized_return' });
    expect(chargesOf(first.user_id)).toHaveLength(1);
  });

  it('R10: a person refused 409 (manual pay, retry-billing) leaves an audit row naming the rule; the period is not written', async () => {
    const { next } = await presentAndReturn('R10');
    app.clock.set(formatInstant(new Date(Date.parse(next.billing_date) + 60_000)));
    await expect(manualPay(app.depsFor('api'), { subscriptionId: next.subscription_id, owner: 'test', actor: 'user:me', idempotencyKey: randomUUID() })).rejects.toMatchObject({ code: 'ach_authorization_required' });
    await expect(retryBilling(app.depsFor('api'), { subscriptionId: next.subscription_id, owner: 'test', actor: 'ops:ann', reason: 'customer called' })).rejects.toMatchObject({ code: 'ach_authorization_required' });
    const rows = (await app.deps.billing.history(next.subscription_id)).items.filter((r) => r.billing_event === 'PAYMENT_REFUSED');
    expect(rows.map((r) => [r.actor, r.decided_by, r.billing_status])).toEqual([
      ['ops:ann', 'nacha.unauthorized_return', 'PENDING'],
      ['user:me', 'nacha.unauthorized_return', 'PENDING'],
    ]);
    expect(rows[0]?.reason).toBe('customer called');
    expect((await reread(next)).version).toBe(next.version);
  });

  it('R10: a newer authorization on the account lifts the hold; R02 needs another account', async () => {
    const unauthorized = await presentAndReturn('R10');
    const closed = await presentAndReturn('R02');
    const due = Math.max(Date.parse(unauthorized.next.billing_date), Date.parse(closed.next.billing_date)) + 60_000;
    app.clock.set(formatInstant(new Date(due)));
    const reauthorized = (userId: string, accountId?: string) => ({
      status: 'active' as const,
      instruments: { ach: { account_id: accountId ?? defaultInstruments(userId).ach!.account_id, authorization_id: 'auth_new', authorized_at: formatInstant(app.clock.now()) } },
    });
    app.simulator.configure({ default: 'approve', accounts: { [unauthorized.first.user_id]: reauthorized(unauthorized.first.user_id), [closed.first.user_id]: reauthorized(closed.first.user_id) } });
    await scheduled(unauthorized.next);
    await scheduled(closed.next);
    expect((await reread(unauthorized.next)).billing_status).toBe('ACHSENT');
    expect(chargesOf(unauthorized.first.user_id).at(-1)?.instrument_id).toBe(achInstrumentId(defaultInstruments(unauthorized.first.user_id).ach!.account_id, 'auth_new'));
    expect((await reread(closed.next)).held_on?.code).toBe('ach_account_invalid');
    expect(chargesOf(closed.first.user_id)).toHaveLength(1);
  });
});

const loanRequest = (userId: string, loanId = `loan-${randomUUID().slice(0, 8)}`) => ({
  user_id: userId,
  loan_id: loanId,
  payment_id: `pay_${randomUUID().replaceAll('-', '')}`,
  amount_cents: 4200,
  payment_method: 'ach' as const,
  account_last_four: '6789',
});

function loanReturn(payment: { loc_user_id: string; loc_loan_id: string; loc_payment_id: string; loc_confirmation_id?: string | undefined; loc_amount: number }, code: string) {
  return {
    event_id: `ach_${randomUUID()}`,
    type: 'returned',
    confirmation_id: payment.loc_confirmation_id,
    return_code: code,
    amount_cents: payment.loc_amount,
    occurred_at: formatInstant(app.clock.now()),
    reference: { kind: 'loan_payment', user_id: payment.loc_user_id, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id },
  };
}

describe('issue 31 case 2: a loan payment on an account whose subscription debit came back R10', () => {
  it('is refused 409 ach_authorization_required (nacha.unauthorized_return) and debits nothing', async () => {
    const { first } = await presentAndReturn('R10');
    const before = chargesOf(first.user_id).length;
    const refused = makeLoanPayment(app.depsFor('api'), loanRequest(first.user_id));
    await expect(refused).rejects.toMatchObject({ code: 'ach_authorization_required', decidedBy: 'nacha.unauthorized_return' });
    expect(chargesOf(first.user_id)).toHaveLength(before);
  });
});

describe('issue 31 case 3: the loan hold is not lifted by a debit already in flight', () => {
  it('a payment submitted before the R10 arrived does not let the next one out', async () => {
    const userId = `user-${randomUUID()}`;
    const loanId = `loan-${randomUUID().slice(0, 8)}`;
    const a = await makeLoanPayment(app.depsFor('api'), loanRequest(userId, loanId));
    const b = await makeLoanPayment(app.depsFor('api'), loanRequest(userId, loanId));
    expect([a.payment.loc_status, b.payment.loc_status]).toEqual(['ACHSENT', 'ACHSENT']);
    expect((await returnEntry(loanReturn(a.payment, 'R10'))).status).toBe(200);
    const refused = makeLoanPayment(app.depsFor('api'), loanRequest(userId, loanId));
    await expect(refused).rejects.toMatchObject({ code: 'ach_authorization_required' });
    expect(chargesOf(userId)).toHaveLength(2);
  });
});

describe('issue 31 case 4: a loan re-presentment after an R01 keeps its RETRY PYMT flag', () => {
  for (const between of ['error', 'decline'] as const) {
    it(`after a processor ${between} between the return and the re-presentment`, async () => {
      const userId = `user-${randomUUID()}`;
      const { payment } = await makeLoanPayment(app.depsFor('api'), loanRequest(userId));
      expect((await returnEntry(loanReturn(payment, 'R01'))).status).toBe(200);
      const retrying = (await app.deps.payments.get(userId, payment.loc_loan_id, payment.loc_payment_id))!;
      expect(retrying).toMatchObject({ loc_status: 'RETRY', loc_ach_represented: 1 });
      processor.scripts.set(userId, [between]);
      const retry = async () => {
        const current = (await app.deps.payments.get(userId, payment.loc_loan_id, payment.loc_payment_id))!;
        app.clock.set(formatInstant(new Date(Math.max(app.clock.now().getTime(), Date.parse(current.loc_next_attempt_at ?? NOW)) + 1000)));
        return retryLoanPayment(app.depsFor('batch-worker'), { user_id: userId, loan_id: payment.loc_loan_id, payment_id: payment.loc_payment_id, owner: 'test' });
      };
      const interrupted = await retry();
      expect(interrupted.kind).toBe(between === 'error' ? 'error_rescheduled' : 'retry_scheduled');
      const represented = await retry();
      expect(represented.kind).toBe('submitted');
      const entries = chargesOf(userId);
      expect(entries).toHaveLength(2);
      expect(entries[1]).toMatchObject({ reinitiated: true, entry_description: 'RETRY PYMT' });
      expect(entries[0]?.reinitiated).toBeUndefined();
      app.clock.advance(DAY);
    });
  }
});

describe('held periods leave the schedule and come back when the instrument changes', () => {
  it('a held period is in the held index, not the due-index; the daily sweep brings it back due after a new authorization', async () => {
    const { first, next } = await presentAndReturn('R10');
    app.clock.set(formatInstant(new Date(Date.parse(next.billing_date) + 60_000)));
    await scheduled(next);
    const heldKeys = async () => (await app.deps.billing.listHeld({ limit: 100, cursor: null })).items.map((r) => r.subscription_id);
    const dueKeys = async () => {
      const keys: string[] = [];
      for await (const page of app.deps.billing.streamDue(formatInstant(app.clock.now()))) keys.push(...page.map((r) => r.subscription_id));
      return keys;
    };
    expect(await heldKeys()).toContain(next.subscription_id);
    expect(await dueKeys()).not.toContain(next.subscription_id);

    const collectionsJob = app.depsFor('collections-job');
    expect(await sweepHeldPeriods(collectionsJob)).toMatchObject({ released: expect.any(Number) });
    expect(await heldKeys()).toContain(next.subscription_id);

    app.simulator.configure({ default: 'approve', accounts: { [first.user_id]: { status: 'active', instruments: { ach: { account_id: 'acct_other', authorization_id: 'auth_other' } } } } });
    await sweepHeldPeriods(collectionsJob);
    const back = await reread(next);
    expect(back.held_on).toBeUndefined();
    expect(await heldKeys()).not.toContain(next.subscription_id);
    expect(await dueKeys()).toContain(next.subscription_id);
    // The returned period itself, FAILED on the old authorization, is owed again on the new account too.
    expect(await dueKeys()).toContain(first.subscription_id);
    await scheduled(next);
    expect(chargesOf(first.user_id).at(-1)?.instrument_id).toBe(achInstrumentId('acct_other', 'auth_other'));
  });
});
