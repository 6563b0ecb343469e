import { randomUUID } from 'node:crypto';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { paymentKeys } from '../../src/adapters/dynamodb/payments-store.js';
import { marshallItem } from '../../src/adapters/dynamodb/attribute-codec.js';
import type { CollectionMessage, LoanPaymentRetryMessage } from '../../src/domain/collections.js';
import { ProcessorError, TransientError } from '../../src/domain/errors.js';
import { LOAN_MAX_ATTEMPTS } from '../../src/domain/loan-retries.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import { applyAchEvent } from '../../src/domain/use-cases/apply-ach-outcome.js';
import { makeLoanPayment } from '../../src/domain/use-cases/make-loan-payment.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { retryingLoanPayment, seedLoanPayment } from '../support/loan-fixtures.js';
import { holdUserLock, releaseUserLock } from '../support/seed.js';
import { DAY, HOUR } from '../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';

type Step = { decline: string; advice_code?: string } | { error: 'counted' | 'transient' } | 'approve';

/**
 * The simulator (which records charges by idempotency key and never charges a key twice), with
 * per-user scripts of declines and errors in front of it. A declined key answers the same decline
 * again, as a processor does.
 */
class ScriptedProcessor implements PaymentProcessor {
  app!: TestApp;
  readonly scripts = new Map<string, Step[]>();
  readonly declined = new Map<string, PaymentResult>();
  readonly submitted: string[] = [];
  /** Awaited before answering: lets a test hold a submission open. */
  gate: Promise<void> = Promise.resolve();

  script(userId: string, ...steps: Step[]): void {
    this.scripts.set(userId, steps);
  }

  async submit(request: PaymentRequest): Promise<PaymentResult> {
    this.submitted.push(request.idempotency_key);
    await this.gate;
    const seen = this.declined.get(request.idempotency_key);
    if (seen) return seen;
    const step = this.scripts.get(request.user_id)?.shift() ?? 'approve';
    if (step === 'approve') return this.app.simulator.submit(request);
    if ('error' in step) {
      if (step.error === 'transient') throw new TransientError('connection reset');
      throw new ProcessorError('processor_unavailable', 'The payment processor is unavailable.');
    }
    const result: PaymentResult = { outcome: 'declined', decline_code: step.decline, ...(step.advice_code ? { advice_code: step.advice_code } : {}), message: 'The payment was declined by the bank.' };
    this.declined.set(request.idempotency_key, result);
    return result;
  }
}

let app: TestApp;
const processor = new ScriptedProcessor();

beforeAll(async () => {
  app = await createTestApp({ label: 'loan-retries', now: NOW, processor });
  processor.app = app;
});

const at = (offsetMs: number) => formatInstant(new Date(app.clock.now().getTime() + offsetMs));
const AUDIT = { actor: 'test:seed', reason: 'a declined payment' };

/** A payment declined once (attempt 1) whose first retry is due now. */
const seedRetry = (overrides: Partial<LoanPayment> = {}) => seedLoanPayment(app, retryingLoanPayment(app, overrides), AUDIT.reason);

const message = (p: LoanPayment): LoanPaymentRetryMessage => ({
  kind: 'loan_payment_retry',
  user_id: p.loc_user_id,
  loan_id: p.loc_loan_id,
  payment_id: p.loc_payment_id,
  enqueued_at: at(0),
});

async function runWorker(...messages: LoanPaymentRetryMessage[]) {
  const records = messages.map((m) => sqsRecord(m));
  const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(records), lambdaContext());
  return response.batchItemFailures.map((f) => records.findIndex((r) => r.messageId === f.itemIdentifier));
}

const reread = async (p: LoanPayment) => (await app.deps.payments.get(p.loc_user_id, p.loc_loan_id, p.loc_payment_id))!;
const history = async (p: LoanPayment) => (await app.deps.payments.listHistory(p.loc_user_id, p.loc_loan_id, p.loc_payment_id, { limit: 100 })).items;
const chargesOf = (p: LoanPayment) => app.simulator.charges().filter((c) => c.reference.kind === 'loan_payment' && c.reference.payment_id === p.loc_payment_id);

/** One collections run: the loan retry messages it enqueued, for the given payments. */
async function plannedFor(...payments: LoanPayment[]): Promise<LoanPaymentRetryMessage[]> {
  app.collectionsQueue.clear();
  await createCollectionsJobHandler(app.depsFor('collections-job'), { pageSize: 2 })(scheduledEvent(), lambdaContext());
  const ids = new Set(payments.map((p) => p.loc_payment_id));
  return app.collectionsQueue
    .bodies<CollectionMessage>()
    .filter((m): m is LoanPaymentRetryMessage => m.kind === 'loan_payment_retry' && ids.has(m.payment_id));
}

describe('loan payment retries (collections-job → batch-worker)', () => {
  it('plans due RETRY payments, and only due ones, and a retry that is approved completes with process RETRY, key {id}:{attempts+1} and an audit row', async () => {
    const due = [await seedRetry(), await seedRetry({ loc_next_attempt_at: at(-HOUR) })];
    const later = await seedRetry({ loc_next_attempt_at: at(HOUR) });
    const planned = await plannedFor(...due, later);
    expect(planned.map((m) => m.payment_id).sort()).toEqual(due.map((p) => p.loc_payment_id).sort());
    // A loan payment is debited on the payments service's rails: its retry goes to that processor's queue.
    expect(app.collectionQueues.payments.bodies<CollectionMessage>().filter((m) => m.kind === 'loan_payment_retry')).toHaveLength(app.collectionsQueue.bodies<CollectionMessage>().filter((m) => m.kind === 'loan_payment_retry').length);
    expect(app.collectionQueues.stripe.bodies<CollectionMessage>().filter((m) => m.kind === 'loan_payment_retry')).toEqual([]);

    expect(await runWorker(...planned)).toEqual([]);
    for (const p of due) {
      expect(await reread(p)).toMatchObject({ loc_status: 'COMPLETED', loc_process: 'RETRY', loc_payment_attempts: 2, version: 2 });
      expect((await reread(p)).loc_next_attempt_at).toBeUndefined();
      expect(chargesOf(p).map((c) => c.idempotency_key)).toEqual([`${p.loc_payment_id}:2`]);
      const rows = await history(p);
      expect(rows.map((r) => [r.version, r.loc_status, r.actor])).toEqual([
        [2, 'COMPLETED', 'system:collections'],
        [1, 'RETRY', 'test:seed'],
      ]);
      expect(rows[0]!.reason).toContain(`${p.loc_payment_id}:2`);
      expect(rows[0]!.loc_update_reason).toBe('Payment collected.');
    }
    expect(await reread(later)).toMatchObject({ loc_status: 'RETRY', version: 1 });
    // Completed payments leave the plan.
    expect(await plannedFor(...due)).toEqual([]);
  });

  it('a retry_later decline stays RETRY at the 5b waits from the first decline, and the 4th declined attempt is FAILED (3 retries)', async () => {
    const p = await seedRetry();
    const first = Date.parse(p.loc_first_declined_at!);
    processor.script(p.loc_user_id, { decline: 'insufficient_funds' }, { decline: 'do_not_honor' }, { decline: 'insufficient_funds' });
    const waits = [2, 3];
    for (const [i, days] of waits.entries()) {
      const planned = await plannedFor(p);
      expect(planned).toHaveLength(1);
      expect(await runWorker(...planned)).toEqual([]);
      const after = await reread(p);
      expect(after).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 2 + i, loc_decline_class: 'retry_later', loc_process: 'RETRY' });
      expect(after.loc_next_attempt_at).toBe(formatInstant(new Date(first + days * DAY)));
      // Not due before its wait: the planner does not read it.
      expect(await plannedFor(p)).toEqual([]);
      app.clock.set(after.loc_next_attempt_at!);
    }
    const planned = await plannedFor(p);
    expect(await runWorker(...planned)).toEqual([]);
    const failed = await reread(p);
    expect(failed).toMatchObject({ loc_status: 'FAILED', loc_payment_attempts: LOAN_MAX_ATTEMPTS, loc_update_reason: 'Payment declined on its last allowed attempt (max retries).' });
    expect(failed.loc_next_attempt_at).toBeUndefined();
    expect(processor.submitted.filter((k) => k.startsWith(p.loc_payment_id))).toEqual([2, 3, 4].map((n) => `${p.loc_payment_id}:${n}`));
    expect((await history(p)).map((r) => r.loc_status)).toEqual(['FAILED', 'RETRY', 'RETRY', 'RETRY']);
    app.clock.advance(30 * DAY);
    expect(await plannedFor(p)).toEqual([]);
    app.clock.set(NOW);
  });

  it('a do_not_retry decline is FAILED at once', async () => {
    const p = await seedRetry();
    processor.script(p.loc_user_id, { decline: 'stolen_card' });
    expect(await runWorker(message(p))).toEqual([]);
    expect(await reread(p)).toMatchObject({ loc_status: 'FAILED', loc_payment_attempts: 2, loc_decline_code: 'stolen_card', loc_decline_class: 'do_not_retry' });
    expect((await history(p))[0]).toMatchObject({ loc_status: 'FAILED', actor: 'system:collections' });
  });

  it('classifies by the dunning table itself: an advice code do_not_try_again on a generic decline, or a revoked-authorization code, is FAILED at once', async () => {
    const advised = await seedRetry();
    const revoked = await seedRetry();
    processor.script(advised.loc_user_id, { decline: 'generic_decline', advice_code: 'do_not_try_again' });
    processor.script(revoked.loc_user_id, { decline: 'revocation_of_all_authorizations' });
    expect(await runWorker(message(advised), message(revoked))).toEqual([]);
    expect(await reread(advised)).toMatchObject({ loc_status: 'FAILED', loc_decline_code: 'generic_decline', loc_decline_class: 'do_not_retry' });
    expect(await reread(revoked)).toMatchObject({ loc_status: 'FAILED', loc_decline_code: 'revocation_of_all_authorizations', loc_decline_class: 'do_not_retry' });
  });

  it('a counted processor error keeps RETRY and moves the next attempt by the 5b wait; a transient one writes nothing and the message is delivered again without a second charge', async () => {
    const p = await seedRetry();
    processor.script(p.loc_user_id, { error: 'counted' }, { error: 'transient' });
    expect(await runWorker(message(p))).toEqual([]);
    const moved = await reread(p);
    expect(moved).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 1, loc_error_count: 1, version: 2 });
    expect(moved.loc_next_attempt_at).toBe(at(DAY));
    expect((await history(p))[0]).toMatchObject({ loc_status: 'RETRY', loc_error_count: 1, loc_update_reason: expect.stringContaining('payments service failed') });
    expect(await plannedFor(p)).toEqual([]);

    app.clock.set(moved.loc_next_attempt_at!);
    expect(await runWorker(message(p))).toEqual([0]);
    expect(await reread(p)).toEqual(moved);
    expect(await history(p)).toHaveLength(2);
    // The redelivery sends the same key; it is approved once.
    expect(await runWorker(message(p))).toEqual([]);
    expect(await reread(p)).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 2 });
    expect(chargesOf(p).map((c) => c.idempotency_key)).toEqual([`${p.loc_payment_id}:2`]);
    app.clock.set(NOW);
  });

  it('an ACH retry goes ACHSENT; an R01 return re-presents on the schedule, an R10 return charges back, and the account\'s next ACH retry is FAILED by the hold', async () => {
    const user = `user-${randomUUID()}`;
    const loan = `loan-${randomUUID().slice(0, 8)}`;
    const p = await seedRetry({ loc_user_id: user, loc_loan_id: loan, loc_payment_method: 'ach', loc_account_last_four: '6789' });
    expect(await runWorker(message(p))).toEqual([]);
    const sent = await reread(p);
    expect(sent).toMatchObject({ loc_status: 'ACHSENT', loc_process: 'RETRY', loc_payment_attempts: 2 });
    const ret = (code: string, payment: LoanPayment) =>
      applyAchEvent(app.deps, {
        event_id: `evt-${randomUUID()}`,
        type: 'returned',
        confirmation_id: payment.loc_confirmation_id!,
        return_code: code,
        amount_cents: payment.loc_amount,
        occurred_at: at(0),
        reference: { kind: 'loan_payment', user_id: user, loan_id: loan, payment_id: payment.loc_payment_id },
      });
    expect(await ret('R01', sent)).toMatchObject({ kind: 'applied', status: 'RETRY' });
    const represent = await reread(p);
    expect(represent).toMatchObject({ loc_status: 'RETRY', loc_return_code: 'R01' });
    expect(represent.loc_next_attempt_at).toBe(formatInstant(new Date(Date.parse(p.loc_first_declined_at!) + 2 * DAY)));
    expect((await history(p))[0]).toMatchObject({ actor: expect.stringMatching(/^ach:evt-/), loc_update_reason: 'ach_returned:R01' });

    app.clock.set(represent.loc_next_attempt_at!);
    expect(await runWorker(message(p))).toEqual([]);
    const again = await reread(p);
    expect(again).toMatchObject({ loc_status: 'ACHSENT', loc_payment_attempts: 3 });
    expect(await ret('R10', again)).toMatchObject({ kind: 'applied', status: 'CHARGED_BACK' });
    expect(await reread(p)).toMatchObject({ loc_status: 'CHARGED_BACK', loc_return_code: 'R10' });

    // Another declined payment of the loan on the same account: its retry meets the hold, nothing is presented.
    const other = await seedRetry({ loc_user_id: user, loc_loan_id: loan, loc_payment_method: 'ach', loc_account_last_four: '6789', loc_next_attempt_at: at(0) });
    const before = processor.submitted.length;
    expect(await runWorker(message(other))).toEqual([]);
    expect(await reread(other)).toMatchObject({ loc_status: 'FAILED', loc_update_reason: 'hold:ach_authorization_required' });
    expect(processor.submitted.length).toBe(before);
    app.clock.set(NOW);
  });

  it('reports a corrupt stored payment as that message\'s batch item failure and processes the rest of the batch', async () => {
    const good = await seedRetry();
    const corrupt = await seedRetry();
    await app.db.client.send(
      new PutItemCommand({
        TableName: app.db.tables.payments,
        Item: marshallItem({ ...corrupt, ...paymentKeys(corrupt, 8), loc_amount: 'forty-two' }),
      }),
    );
    expect(await runWorker(message(corrupt), message(good))).toEqual([0]);
    expect(await reread(good)).toMatchObject({ loc_status: 'COMPLETED' });
    expect(app.simulator.charges().some((c) => c.reference.kind === 'loan_payment' && c.reference.payment_id === corrupt.loc_payment_id)).toBe(false);
    // Planning reads keys only: the corrupt item does not stop a run.
    await expect(createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(), lambdaContext())).resolves.toMatchObject({ truncated: false });
  });

  it('a held user lock skips the retry (delivered again), and concurrent retries of one payment charge its attempt key once', async () => {
    const p = await seedRetry();
    await holdUserLock(app, p.loc_user_id);
    expect(await runWorker(message(p))).toEqual([0]);
    expect(await reread(p)).toMatchObject({ loc_status: 'RETRY', version: 1 });
    await releaseUserLock(app, p.loc_user_id);

    const q = await seedRetry();
    const results = await Promise.all(Array.from({ length: 4 }, () => runWorker(message(q))));
    expect(results.filter((r) => r.length === 0).length).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 3 && (await reread(q)).loc_status === 'RETRY'; i++) await runWorker(message(q));
    expect(await reread(q)).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 2, version: 2 });
    expect(chargesOf(q).map((c) => c.idempotency_key)).toEqual([`${q.loc_payment_id}:2`]);
    expect(await history(q)).toHaveLength(2);
  });

  it('a manual payment racing a retry of the same loan: one charge per attempt key, each with its audit rows', async () => {
    const p = await seedRetry();
    let open!: () => void;
    processor.gate = new Promise((resolve) => (open = resolve));
    const retry = runWorker(message(p));
    const manual = makeLoanPayment(app.deps, {
      user_id: p.loc_user_id,
      loan_id: p.loc_loan_id,
      payment_id: `pay_${randomUUID().replaceAll('-', '')}`,
      amount_cents: 4200,
      payment_method: 'pinless',
      account_last_four: '4242',
      actor: 'auth0|customer',
    });
    await new Promise((r) => setTimeout(r, 50));
    open();
    processor.gate = Promise.resolve();
    const [failures, made] = await Promise.all([retry, manual]);
    expect(failures).toEqual([]);
    expect(made.payment.loc_status).toBe('COMPLETED');
    const keys = app.simulator.charges().filter((c) => c.user_id === p.loc_user_id).map((c) => c.idempotency_key).sort();
    expect(keys).toEqual([`${made.payment.loc_payment_id}:1`, `${p.loc_payment_id}:2`].sort());
    expect(new Set(keys).size).toBe(keys.length);
    expect((await history(made.payment)).map((r) => [r.loc_status, r.actor])).toEqual([
      ['COMPLETED', 'auth0|customer'],
      ['PENDING', 'auth0|customer'],
    ]);
    expect((await history(p)).map((r) => r.loc_status)).toEqual(['COMPLETED', 'RETRY']);
  });
});
