import { beforeAll, describe, expect, it } from 'vitest';
import { applyAchEvent } from '../../src/domain/use-cases/apply-ach-outcome.js';
import { formatInstant } from '../../src/domain/time.js';
import { loanPaymentId } from '../../src/handlers/api/loans.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { readerAuth } from '../support/http-events.js';
import { callerFor, newUserId, type Caller } from './api-fixtures.js';

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'api-loans' });
  call = callerFor(app);
});

const PAYMENTS = '/v1/users/{userId}/loans/{loanId}/payments';
const PAYMENT = `${PAYMENTS}/{paymentId}`;

/** `key: null` sends no Idempotency-Key header. */
function post(userId: string, loanId: string, body: unknown, key: string | null = 'key-1', options: Parameters<Caller>[1] = {}) {
  return call('POST', {
    route: PAYMENTS,
    pathParameters: { userId, loanId },
    body,
    ...(key !== null ? { headers: { 'idempotency-key': key } } : {}),
    ...options,
  });
}

const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);

describe('POST /v1/users/{userId}/loans/{loanId}/payments', () => {
  it('collects a pinless payment at once and applies it to the intended installment (201)', async () => {
    const user = newUserId();
    const res = await post(user, 'loan-1', { amount_cents: 5000, payment_method: 'pinless', account_last_four: '4242', intended_installment_id: 'inst-456' });
    expect(res.status).toBe(201);
    const paymentId = loanPaymentId(user, 'loan-1', 'key-1');
    expect(res.body).toMatchObject({
      loc_user_id: user,
      loc_loan_id: 'loan-1',
      loc_payment_id: paymentId,
      loc_amount: 5000,
      loc_status: 'COMPLETED',
      loc_payment_method: 'pinless',
      loc_process: 'MANUAL',
      loc_account_last_four: '4242',
      loc_intended_installment_id: 'inst-456',
      loc_payment_attempts: 1,
      loc_applications: [{ payment_id: paymentId, installment_id: 'inst-456', amount: 5000, payment_date: '2026-12-01T12:00:00.000000000Z' }],
    });
    expect(res.body.loc_confirmation_id).toMatch(/^sim_/);
    expect(res.body).not.toHaveProperty('version');
    expect(chargesOf(user)).toEqual([
      expect.objectContaining({
        idempotency_key: `${paymentId}:1`,
        amount_cents: 5000,
        rail: 'pinless',
        reference: { kind: 'loan_payment', user_id: user, loan_id: 'loan-1', payment_id: paymentId },
      }),
    ]);
  });

  it('answers a repeat of the Idempotency-Key with the same payment (200) and no second charge', async () => {
    const user = newUserId();
    const body = { amount_cents: 1234, payment_method: 'pinless' };
    const first = await post(user, 'loan-1', body, 'repeat-me');
    const second = await post(user, 'loan-1', body, 'repeat-me');
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(chargesOf(user)).toHaveLength(1);
    const other = await post(user, 'loan-1', body, 'another-key');
    expect(other.status).toBe(201);
    expect(other.body.loc_payment_id).not.toBe(first.body.loc_payment_id);
  });

  it('refuses the same Idempotency-Key with a different payment (409 idempotency_key_reused)', async () => {
    const user = newUserId();
    await post(user, 'loan-1', { amount_cents: 1000, payment_method: 'pinless' }, 'k');
    const res = await post(user, 'loan-1', { amount_cents: 2000, payment_method: 'pinless' }, 'k');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('idempotency_key_reused');
    expect(chargesOf(user)).toHaveLength(1);
  });

  it('submits ACH (ACHSENT) and schedules a retry on a decline (RETRY)', async () => {
    const user = newUserId();
    const ach = await post(user, 'loan-2', { amount_cents: 2500, payment_method: 'ach' }, 'ach-1');
    expect(ach.body).toMatchObject({ loc_status: 'ACHSENT', loc_payment_attempts: 1 });
    expect(ach.body).not.toHaveProperty('loc_applications');

    app.simulator.configure({ users: { [user]: 'decline' } });
    const declined = await post(user, 'loan-2', { amount_cents: 2500, payment_method: 'pinless' }, 'declined-1');
    app.simulator.configure({});
    expect(declined.status).toBe(201);
    expect(declined.body).toMatchObject({ loc_status: 'RETRY', loc_update_reason: 'The payment was declined by the bank.' });
  });

  it('answers 502 on a processor error, leaves the payment PENDING and completes it on a repeat', async () => {
    const user = newUserId();
    app.simulator.configure({ users: { [user]: 'error' } });
    const failed = await post(user, 'loan-3', { amount_cents: 700, payment_method: 'pinless' }, 'flaky');
    app.simulator.configure({});
    expect(failed.status).toBe(502);
    expect(failed.body.error.code).toBe('processor_error');
    const paymentId = loanPaymentId(user, 'loan-3', 'flaky');
    const pending = await call('GET', { route: PAYMENT, pathParameters: { userId: user, loanId: 'loan-3', paymentId } });
    expect(pending.body.loc_status).toBe('PENDING');
    const repeated = await post(user, 'loan-3', { amount_cents: 700, payment_method: 'pinless' }, 'flaky');
    expect(repeated.status).toBe(200);
    expect(repeated.body).toMatchObject({ loc_status: 'COMPLETED', loc_payment_id: paymentId });
    expect(chargesOf(user)).toHaveLength(1);
  });

  it.each([
    ['a negative amount', { amount_cents: -5, payment_method: 'ach' }],
    ['zero', { amount_cents: 0, payment_method: 'ach' }],
    ['fractional cents', { amount_cents: 10.5, payment_method: 'ach' }],
    ['a string amount', { amount_cents: '100', payment_method: 'ach' }],
    ['an unknown method', { amount_cents: 100, payment_method: 'card' }],
    ['no method', { amount_cents: 100 }],
    ['a bad account_last_four', { amount_cents: 100, payment_method: 'ach', account_last_four: '12a4' }],
    ['an installment id with a slash', { amount_cents: 100, payment_method: 'ach', intended_installment_id: 'a/b' }],
    ['an unknown field', { amount_cents: 100, payment_method: 'ach', currency: 'usd' }],
    ['malformed JSON', '{"amount_cents":'],
    ['no body', undefined],
  ])('answers 400 for %s', async (_what, body) => {
    const user = newUserId();
    const res = await post(user, 'loan-1', body);
    expect(res.status).toBe(400);
    expect(chargesOf(user)).toHaveLength(0);
  });

  it.each([
    ['R10', 'ach_authorization_required'],
    ['R02', 'ach_account_invalid'],
  ])('refuses an ACH payment on an account whose previous payment came back %s (409 %s), charging nothing', async (code, expected) => {
    const user = newUserId();
    const first = await post(user, 'loan-held', { amount_cents: 2500, payment_method: 'ach', account_last_four: '6789' }, 'first');
    expect(first.body.loc_status).toBe('ACHSENT');
    const returned = await applyAchEvent(app.deps, {
      event_id: `evt-${code}-${user}`,
      type: 'returned',
      confirmation_id: first.body.loc_confirmation_id,
      return_code: code,
      amount_cents: 2500,
      occurred_at: formatInstant(app.clock.now()),
      reference: { kind: 'loan_payment', user_id: user, loan_id: 'loan-held', payment_id: first.body.loc_payment_id },
    });
    expect(returned.kind).toBe('applied');
    const before = chargesOf(user).length;
    const again = await post(user, 'loan-held', { amount_cents: 2500, payment_method: 'ach', account_last_four: '6789' }, 'second');
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe(expected);
    expect(chargesOf(user)).toHaveLength(before);
    const missing = await call('GET', { route: PAYMENT, pathParameters: { userId: user, loanId: 'loan-held', paymentId: loanPaymentId(user, 'loan-held', 'second') } });
    expect(missing.status).toBe(404);
    // Another account (the directory's answer changes) is not held.
    app.simulator.configure({ ...app.simulator.current(), accounts: { [user]: { status: 'active', instruments: { ach: { account_id: `other-${user}`, authorization_id: 'auth-2' } } } } });
    const other = await post(user, 'loan-held', { amount_cents: 2500, payment_method: 'ach', account_last_four: '1111' }, 'third');
    expect(other.status).toBe(201);
  });

  it('requires an Idempotency-Key (400) and billing:write (403)', async () => {
    const missing = await post('u1', 'loan-1', { amount_cents: 100, payment_method: 'ach' }, null);
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('idempotency_key_required');
    const forbidden = await post('u1', 'loan-1', { amount_cents: 100, payment_method: 'ach' }, 'k', { auth: readerAuth });
    expect(forbidden.status).toBe(403);
  });

  it('refuses a loan id with a key separator (400)', async () => {
    const res = await post('u1', 'loan#1', { amount_cents: 100, payment_method: 'ach' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_path');
  });
});

describe('GET loan payments', () => {
  it('lists a loan’s payments in pages, filters by status, and gets one', async () => {
    const user = newUserId();
    for (const key of ['a', 'b', 'c']) await post(user, 'loan-9', { amount_cents: 100, payment_method: 'pinless' }, key);
    await post(user, 'loan-9', { amount_cents: 100, payment_method: 'ach' }, 'd');
    await post(user, 'other-loan', { amount_cents: 100, payment_method: 'ach' }, 'e');

    const ids: string[] = [];
    let next: string | null = null;
    do {
      const page = await call('GET', { route: PAYMENTS, pathParameters: { userId: user, loanId: 'loan-9' }, query: { limit: '3', ...(next ? { next } : {}) }, auth: readerAuth });
      expect(page.status).toBe(200);
      ids.push(...page.body.items.map((p: { loc_payment_id: string }) => p.loc_payment_id));
      next = page.body.next;
    } while (next);
    expect(ids.sort()).toEqual(['a', 'b', 'c', 'd'].map((k) => loanPaymentId(user, 'loan-9', k)).sort());

    const achsent = await call('GET', { route: PAYMENTS, pathParameters: { userId: user, loanId: 'loan-9' }, query: { status: 'ACHSENT' } });
    expect(achsent.body.items.map((p: { loc_payment_id: string }) => p.loc_payment_id)).toEqual([loanPaymentId(user, 'loan-9', 'd')]);

    const one = await call('GET', { route: PAYMENT, pathParameters: { userId: user, loanId: 'loan-9', paymentId: loanPaymentId(user, 'loan-9', 'a') } });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ loc_status: 'COMPLETED', loc_amount: 100 });
  });

  it('lists a loan’s payments newest first (loc_created_date), paged', async () => {
    const user = newUserId();
    const keys = ['k-1', 'k-2', 'k-3', 'k-4', 'k-5'];
    for (const key of keys) {
      await post(user, 'loan-new', { amount_cents: 100, payment_method: 'pinless' }, key);
      app.clock.advance(60_000);
    }
    const ids: string[] = [];
    let next: string | null = null;
    do {
      const page = await call('GET', { route: PAYMENTS, pathParameters: { userId: user, loanId: 'loan-new' }, query: { limit: '2', ...(next ? { next } : {}) }, auth: readerAuth });
      ids.push(...page.body.items.map((p: { loc_payment_id: string }) => p.loc_payment_id));
      next = page.body.next;
    } while (next);
    expect(ids).toEqual([...keys].reverse().map((k) => loanPaymentId(user, 'loan-new', k)));
  });

  it('reads a payment’s audit rows newest first, with actor, reason and loc_update_reason (billing:read)', async () => {
    const user = newUserId();
    await post(user, 'loan-h', { amount_cents: 900, payment_method: 'pinless' }, 'h-1');
    const paymentId = loanPaymentId(user, 'loan-h', 'h-1');
    const pages: { loc_status: string; actor: string; loc_update_reason: string; version?: unknown }[] = [];
    let next: string | null = null;
    do {
      const page = await call('GET', { route: `${PAYMENT}/history`, pathParameters: { userId: user, loanId: 'loan-h', paymentId }, query: { limit: '1', ...(next ? { next } : {}) }, auth: readerAuth });
      expect(page.status).toBe(200);
      pages.push(...page.body.items);
      next = page.body.next;
    } while (next);
    expect(pages.map((r) => [r.loc_status, r.loc_update_reason])).toEqual([
      ['COMPLETED', 'Payment collected.'],
      ['PENDING', 'Payment requested by the user.'],
    ]);
    expect(pages.every((r) => typeof r.actor === 'string' && r.actor.length > 0 && !('version' in r))).toBe(true);
    const missing = await call('GET', { route: `${PAYMENT}/history`, pathParameters: { userId: user, loanId: 'loan-h', paymentId: 'pay_missing' }, auth: readerAuth });
    expect(missing.status).toBe(404);
  });

  it('answers 404 for an unknown payment and 400 for an unknown status filter', async () => {
    const missing = await call('GET', { route: PAYMENT, pathParameters: { userId: 'u1', loanId: 'l1', paymentId: 'pay_missing' } });
    expect(missing.status).toBe(404);
    const badStatus = await call('GET', { route: PAYMENTS, pathParameters: { userId: 'u1', loanId: 'l1' }, query: { status: 'DONE' } });
    expect(badStatus.status).toBe(400);
  });

  it('routes $default events for loan payments', async () => {
    const user = newUserId();
    const created = await call('POST', { path: `/v1/users/${user}/loans/loan-5/payments`, defaultRoute: true, headers: { 'idempotency-key': 'x' }, body: { amount_cents: 300, payment_method: 'pinless' } });
    expect(created.status).toBe(201);
    const fetched = await call('GET', { path: `/v1/users/${user}/loans/loan-5/payments/${created.body.loc_payment_id}`, defaultRoute: true });
    expect(fetched.body).toEqual(created.body);
    const wrong = await call('PUT', { path: `/v1/users/${user}/loans/loan-5/payments`, defaultRoute: true });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('GET, POST');
  });
});
