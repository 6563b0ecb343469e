import { beforeAll, describe, expect, it } from 'vitest';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { loanPaymentId } from '../../src/handlers/api/loans.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { FaultInjector, faultyPorts } from '../support/faults.js';
import { httpEvent, responseOf } from '../support/http-events.js';
import { newUserId } from './api-fixtures.js';
import { parseBody, webhookEvent } from './webhook-events.js';
import { DAY } from '../support/time.js';

/**
 * A manual ACH loan payment whose process died after the bank accepted the debit (DESIGN 2.7, 4.1):
 * the payment is PENDING with no attempt recorded, and nothing but the user's own repeat of the
 * request would run its attempt again. The bank's outcome names the payment and the debit (the
 * only one it can have: attempt 1), so it records the submission and applies in one write, instead
 * of being answered 409 until the sender gives up with the money taken and off the books.
 */

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ label: 'loan-repair' });
});

const PAYMENTS = '/v1/users/{userId}/loans/{loanId}/payments';

async function postDying(userId: string, loanId: string, body: unknown, key: string, point: 'processor.before' | 'processor.accepted' = 'processor.accepted') {
  const faults = new FaultInjector([{ point, mode: 'crash', nth: 1 }]);
  const handler = createApiHandler(faultyPorts(app.depsFor('api'), faults));
  const res = responseOf(await handler(httpEvent('POST', { route: PAYMENTS, pathParameters: { userId, loanId }, body, headers: { 'idempotency-key': key }, timeEpoch: app.clock.now().getTime() })));
  expect(faults.fired).toEqual([point]);
  return res;
}

function bankOutcome(userId: string, loanId: string, paymentId: string, type: 'settled' | 'returned', confirmationId: string, amountCents: number, returnCode?: string) {
  const body = JSON.stringify({
    event_id: `ach-evt-${confirmationId}-${type}`,
    type,
    confirmation_id: confirmationId,
    amount_cents: amountCents,
    occurred_at: formatInstant(app.clock.now()),
    ...(returnCode ? { return_code: returnCode } : {}),
    reference: { kind: 'loan_payment', user_id: userId, loan_id: loanId, payment_id: paymentId },
  });
  const signature = signPayload(body, TEST_SECRETS.achWebhook, Math.floor(app.wallClock.now().getTime() / 1000));
  return webhookEvent('/webhooks/ach', body, { 'X-ACH-Signature': signature });
}

describe('a manual ACH loan payment that died after the bank accepted its debit', () => {
  it('is recorded by the bank\'s settlement (COMPLETED, attempt 1, the debit\'s confirmation), one charge, and the user\'s late repeat charges nothing', async () => {
    const user = newUserId();
    const request = { amount_cents: 4200, payment_method: 'ach', account_last_four: '6789' };
    expect((await postDying(user, 'loan-r1', request, 'k-1')).status).toBe(500);
    const paymentId = loanPaymentId(user, 'loan-r1', 'k-1');
    expect(await app.deps.payments.get(user, 'loan-r1', paymentId)).toMatchObject({ loc_status: 'PENDING', loc_payment_attempts: 0 });
    const [debit] = app.simulator.charges().filter((c) => c.user_id === user);
    expect(debit).toMatchObject({ idempotency_key: `${paymentId}:1`, amount_cents: 4200 });

    const answer = await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, 'loan-r1', paymentId, 'settled', debit!.confirmation_id, 4200));
    expect(answer.statusCode).toBe(200);
    expect(parseBody(answer)).toMatchObject({ status: 'applied', record_status: 'COMPLETED' });
    const payment = await app.deps.payments.get(user, 'loan-r1', paymentId);
    expect(payment).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 1, loc_confirmation_id: debit!.confirmation_id, version: 1 });
    const history = (await app.deps.payments.listHistory(user, 'loan-r1', paymentId, { limit: 10, cursor: null })).items;
    expect(history.map((h) => h.loc_status)).toEqual(['COMPLETED', 'PENDING']);

    const repeat = responseOf(await createApiHandler(app.depsFor('api'))(httpEvent('POST', { route: PAYMENTS, pathParameters: { userId: user, loanId: 'loan-r1' }, body: request, headers: { 'idempotency-key': 'k-1' }, timeEpoch: app.clock.now().getTime() })));
    expect(repeat.status).toBe(200);
    expect(repeat.body).toMatchObject({ loc_status: 'COMPLETED', loc_payment_id: paymentId });
    expect(app.simulator.charges().filter((c) => c.user_id === user)).toHaveLength(1);
  });

  it('is recorded by the bank\'s R01 return too, and re-presented on the loan schedule (RETRY, attempt 2 next)', async () => {
    const user = newUserId();
    const request = { amount_cents: 900, payment_method: 'ach', account_last_four: '6789' };
    expect((await postDying(user, 'loan-r2', request, 'k-2')).status).toBe(500);
    const paymentId = loanPaymentId(user, 'loan-r2', 'k-2');
    const [debit] = app.simulator.charges().filter((c) => c.user_id === user);
    const day = formatInstant(app.clock.now()).slice(0, 10);
    const before = await app.deps.payments.achRateCounts(day, day);
    const answer = await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, 'loan-r2', paymentId, 'returned', debit!.confirmation_id, 900, 'R01'));
    expect(parseBody(answer)).toMatchObject({ status: 'applied', record_status: 'RETRY' });
    // The return-rate counters get the debit the write records and its return, once each (DESIGN 4.1).
    const after = await app.deps.payments.achRateCounts(day, day);
    expect([after.debits - before.debits, after.returns - before.returns]).toEqual([1, 1]);
    expect(parseBody(await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, 'loan-r2', paymentId, 'returned', debit!.confirmation_id, 900, 'R01')))).toMatchObject({ status: 'duplicate' });
    expect((await app.deps.payments.achRateCounts(day, day)).debits - before.debits).toBe(1);
    expect(await app.deps.payments.get(user, 'loan-r2', paymentId)).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 1, loc_confirmation_id: debit!.confirmation_id, loc_return_code: 'R01' });
  });

  it('an outcome naming the payment but not its debit amount still records the debit it names (the amount mismatch is the settlement\'s to report)', async () => {
    const user = newUserId();
    const request = { amount_cents: 1500, payment_method: 'ach', account_last_four: '6789' };
    expect((await postDying(user, 'loan-r3', request, 'k-3')).status).toBe(500);
    const paymentId = loanPaymentId(user, 'loan-r3', 'k-3');
    const [debit] = app.simulator.charges().filter((c) => c.user_id === user);
    const answer = await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, 'loan-r3', paymentId, 'settled', debit!.confirmation_id, 1400));
    expect(answer.statusCode).toBe(200);
    expect((await app.deps.payments.get(user, 'loan-r3', paymentId))?.loc_confirmation_id).toBe(debit!.confirmation_id);
  });
});

describe('a repeat of a manual ACH loan payment whose first request died before the bank', () => {
  // Loan model, seed 100 path 49 (shrunk): k-0 died before the processor; k-1 on the same account came back R10
  // (CHARGED_BACK: a hold, DESIGN 3.1); the client's repeat of k-0 then debited the held account. The hold was judged
  // only when a payment was created; a repeat may be the first debit, so it is judged there too.
  it('is refused 409 ach_authorization_required once the account came back unauthorized since, nothing debited, the payment left PENDING', async () => {
    const user = newUserId();
    const request = { amount_cents: 500, payment_method: 'ach', account_last_four: '6789' };
    expect((await postDying(user, 'loan-h1', request, 'k-0', 'processor.before')).status).toBe(500);
    const post = (key: string) =>
      createApiHandler(app.depsFor('api'))(httpEvent('POST', { route: PAYMENTS, pathParameters: { userId: user, loanId: 'loan-h1' }, body: request, headers: { 'idempotency-key': key }, timeEpoch: app.clock.now().getTime() })).then(responseOf);
    app.simulator.configure({ users: { [user]: 'ach_return:R10' } });
    expect((await post('k-1')).status).toBe(201);
    app.simulator.configure({});
    const [debit] = app.simulator.charges().filter((c) => c.user_id === user);
    const returned = await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, 'loan-h1', loanPaymentId(user, 'loan-h1', 'k-1'), 'returned', debit!.confirmation_id, 500, 'R10'));
    expect(parseBody(returned)).toMatchObject({ status: 'applied', record_status: 'CHARGED_BACK' });

    const repeat = await post('k-0');
    expect([repeat.status, repeat.body.error?.code]).toEqual([409, 'ach_authorization_required']);
    expect(app.simulator.charges().filter((c) => c.user_id === user)).toHaveLength(1);
    expect(await app.deps.payments.get(user, 'loan-h1', loanPaymentId(user, 'loan-h1', 'k-0'))).toMatchObject({ loc_status: 'PENDING', loc_payment_attempts: 0, version: 0 });
  });
});

// Read off the retry path while fixing the repeat's hold: a retry whose answer was lost, then FAILED by a hold before
// its next run, ignored the bank's outcome of that debit as another entry's (money taken and off the books).
describe('a loan retry that died after the bank accepted its debit, then met a hold', () => {
  it('is FAILED by the hold, and the debit\'s outcome still records it (attempt 2, COMPLETED on settlement)', async () => {
    const user = newUserId();
    const loan = 'loan-h2';
    const at = (offsetMs: number) => formatInstant(new Date(app.clock.now().getTime() + offsetMs));
    const base = { loc_user_id: user, loc_loan_id: loan, loc_amount: 700, loc_payment_method: 'ach' as const, loc_account_last_four: '6789', loc_last_updated: at(-DAY) };
    const retry = { ...base, loc_payment_id: 'pay_retry', loc_status: 'RETRY' as const, loc_process: 'AUTO' as const, loc_payment_attempts: 1, loc_confirmation_id: 'conf-first', loc_decline_code: 'insufficient_funds', loc_decline_class: 'retry_later' as const, loc_update_reason: 'The payment was declined by the bank.', loc_first_declined_at: at(-DAY), loc_next_attempt_at: at(0), loc_created_date: at(-2 * DAY), version: 1 };
    await app.deps.payments.create(retry, { actor: 'test', reason: 'fixture' });
    const message = { kind: 'loan_payment_retry', user_id: user, loan_id: loan, payment_id: retry.loc_payment_id, enqueued_at: at(0) };
    const faults = new FaultInjector([{ point: 'processor.accepted', mode: 'crash', nth: 1 }]);
    await createBatchWorkerHandler(faultyPorts(app.depsFor('batch-worker'), faults))(sqsEvent([sqsRecord(message)]), lambdaContext());
    expect(faults.fired).toEqual(['processor.accepted']);
    // The attempt's answer was lost: the payment still owes attempt 2, whose debit the bank has.
    expect(await app.deps.payments.get(user, loan, retry.loc_payment_id)).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 1 });
    app.clock.advance(2 * DAY);
    const [debit] = app.simulator.charges().filter((c) => c.user_id === user);
    expect(debit?.idempotency_key).toBe('pay_retry:2');
    // Before the redelivery, a newer payment of the loan on the account comes back unauthorized: a hold.
    await app.deps.payments.create({ ...base, loc_payment_id: 'pay_newer', loc_status: 'CHARGED_BACK', loc_process: 'MANUAL', loc_payment_attempts: 1, loc_confirmation_id: 'conf-newer', loc_return_code: 'R10', loc_update_reason: 'ach_returned:R10', loc_created_date: at(-DAY), version: 2 }, { actor: 'test', reason: 'fixture' });
    await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent([sqsRecord(message)]), lambdaContext());
    expect(await app.deps.payments.get(user, loan, retry.loc_payment_id)).toMatchObject({ loc_status: 'FAILED', loc_update_reason: 'hold:ach_authorization_required', loc_payment_attempts: 1 });
    expect(app.simulator.charges().filter((c) => c.user_id === user)).toHaveLength(1);

    const answer = await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, loan, retry.loc_payment_id, 'settled', debit!.confirmation_id, 700));
    expect(parseBody(answer)).toMatchObject({ status: 'applied', record_status: 'COMPLETED' });
    expect(await app.deps.payments.get(user, loan, retry.loc_payment_id)).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 2, loc_confirmation_id: debit!.confirmation_id });
    // An older entry's outcome for it is still a replay, not a recording.
    expect(parseBody(await createAchHandler(app.depsFor('ach-handler'))(bankOutcome(user, loan, retry.loc_payment_id, 'settled', 'conf-first', 700)))).toMatchObject({ status: 'ignored', reason: 'confirmation_mismatch' });
  });
});
