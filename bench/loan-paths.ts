import { randomUUID } from 'node:crypto';
import { loanRetryMessage } from '../src/domain/collections.js';
import type { LoanPayment } from '../src/domain/loan-payments.js';
import { formatInstant } from '../src/domain/time.js';
import { createApiHandler } from '../src/handlers/api.js';
import { loanPaymentId } from '../src/handlers/api/loans.js';
import { createBatchWorkerHandler } from '../src/handlers/batch-worker.js';
import { pool, type BenchApp } from './app.js';
import type { CapacityTotals } from './capacity.js';
import { apiEvent, sqsEvent } from './lambda-events.js';

/**
 * Section 1, loan paths: DynamoDB requests per loan payment billed, through the api (a customer's
 * payment) and the batch-worker (an automatic retry), every attempt approved (DESIGN 2.7, 3.2).
 */

export interface LoanPathRun {
  readonly path: string;
  readonly payments: number;
  readonly billed: number;
  readonly totals: CapacityTotals;
}

const DAY = 24 * 3_600_000;

function retrying(now: Date, rail: LoanPayment['loc_payment_method']): LoanPayment {
  const at = formatInstant(new Date(now.getTime() - 2 * DAY));
  return {
    loc_user_id: `user-${randomUUID()}`,
    loc_loan_id: `loan-${randomUUID().slice(0, 8)}`,
    loc_payment_id: `pay_${randomUUID().replaceAll('-', '')}`,
    loc_amount: 4200,
    loc_status: 'RETRY',
    loc_payment_method: rail,
    loc_process: 'MANUAL',
    loc_payment_attempts: 1,
    loc_update_reason: 'The payment was declined by the bank.',
    loc_created_date: at,
    loc_last_updated: at,
    loc_decline_code: 'insufficient_funds',
    loc_decline_class: 'retry_later',
    loc_first_declined_at: at,
    loc_next_attempt_at: formatInstant(new Date(now.getTime() - DAY)),
    version: 1,
    ...(rail === 'ach' ? { loc_account_last_four: '6789' } : {}),
  };
}

async function billedOf(app: BenchApp, keys: readonly { user_id: string; loan_id: string; payment_id: string }[]): Promise<number> {
  let billed = 0;
  app.meter.pause(true);
  await pool(keys, 16, async (k) => {
    const status = (await app.deps.payments.get(k.user_id, k.loan_id, k.payment_id))?.loc_status;
    if (status === 'COMPLETED' || status === 'ACHSENT') billed += 1;
  });
  app.meter.pause(false);
  return billed;
}

async function customerPayments(app: BenchApp, n: number, rail: LoanPayment['loc_payment_method']): Promise<LoanPathRun> {
  const api = createApiHandler(app.depsFor('api'));
  const requests = Array.from({ length: n }, () => ({ user_id: `user-${randomUUID()}`, loan_id: `loan-${randomUUID().slice(0, 8)}`, key: randomUUID() }));
  const body = JSON.stringify({ amount_cents: 4200, payment_method: rail, ...(rail === 'ach' ? { account_last_four: '6789' } : {}) });
  app.meter.reset();
  await pool(requests, 16, (r) => api(apiEvent('POST', `/v1/users/${r.user_id}/loans/${r.loan_id}/payments`, { 'idempotency-key': r.key, 'content-type': 'application/json' }, body)));
  const totals = app.meter.snapshot();
  const paid = requests.map((r) => ({ user_id: r.user_id, loan_id: r.loan_id, payment_id: loanPaymentId(r.user_id, r.loan_id, r.key) }));
  return { path: `loan payment, ${rail} (api)`, payments: n, billed: await billedOf(app, paid), totals };
}

async function automaticRetries(app: BenchApp, n: number, rail: LoanPayment['loc_payment_method']): Promise<LoanPathRun> {
  const payments = Array.from({ length: n }, () => retrying(app.clock.now(), rail));
  app.meter.pause(true);
  await pool(payments, 16, (p) => app.deps.payments.create(p, { actor: 'bench' }));
  app.meter.pause(false);
  const worker = createBatchWorkerHandler(app.depsFor('batch-worker'));
  const messages = payments.map((p) => {
    const message = loanRetryMessage({ user_id: p.loc_user_id, loan_id: p.loc_loan_id, payment_id: p.loc_payment_id }, app.clock.now());
    return { id: randomUUID(), body: JSON.stringify(message) };
  });
  const batches: (typeof messages)[] = [];
  for (let i = 0; i < messages.length; i += 10) batches.push(messages.slice(i, i + 10));
  app.meter.reset();
  await pool(batches, 4, (b) => worker(sqsEvent(b)));
  const totals = app.meter.snapshot();
  const keys = payments.map((p) => ({ user_id: p.loc_user_id, loan_id: p.loc_loan_id, payment_id: p.loc_payment_id }));
  return { path: `loan retry, ${rail} (batch-worker)`, payments: n, billed: await billedOf(app, keys), totals };
}

export async function measureLoanPaths(app: BenchApp, perPath: number): Promise<LoanPathRun[]> {
  return [
    await customerPayments(app, perPath, 'pinless'),
    await customerPayments(app, perPath, 'ach'),
    await automaticRetries(app, perPath, 'pinless'),
    await automaticRetries(app, perPath, 'ach'),
  ];
}
