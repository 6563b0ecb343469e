import { beforeAll, describe, expect, it } from 'vitest';
import type { CollectionMessage, LoanPaymentRetryMessage } from '../../src/domain/collections.js';
import { LOAN_MAX_ATTEMPTS } from '../../src/domain/loan-retries.js';
import { RETRY_LOANS, SEED_PROCESSOR_USERS, seedDemoData } from '../../src/local/seed.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createCollectionsJobHandler } from '../../src/handlers/collections-job.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, scheduledEvent, sqsEvent, sqsRecord } from '../support/aws-events.js';

/** The demo data's RETRY loan payments: the first collections run retries both, one to COMPLETED, one to FAILED. */

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'seed' });
  await seedDemoData({ billing: app.deps.billing, payments: app.deps.payments }, app.clock.now(), { users: 20 });
  app.simulator.configure({ default: 'approve', users: { ...SEED_PROCESSOR_USERS } });
});

const get = (ids: { user_id: string; loan_id: string; payment_id: string }) => app.deps.payments.get(ids.user_id, ids.loan_id, ids.payment_id);

describe('seed data: loan payments in RETRY', () => {
  it('are due at the seed time: the first collections run retries both; the approved one completes, the declined one ends FAILED on its last retry', async () => {
    expect(await get(RETRY_LOANS.approved)).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: 1 });
    expect(await get(RETRY_LOANS.declined)).toMatchObject({ loc_status: 'RETRY', loc_payment_attempts: LOAN_MAX_ATTEMPTS - 1 });

    app.clock.advance(1000);
    await createCollectionsJobHandler(app.depsFor('collections-job'))(scheduledEvent(), lambdaContext());
    const loanMessages = app.collectionsQueue.bodies<CollectionMessage>().filter((m): m is LoanPaymentRetryMessage => m.kind === 'loan_payment_retry');
    expect(loanMessages.map((m) => m.payment_id).sort()).toEqual([RETRY_LOANS.approved.payment_id, RETRY_LOANS.declined.payment_id]);

    const response = await createBatchWorkerHandler(app.depsFor('batch-worker'))(sqsEvent(loanMessages.map((m) => sqsRecord(m))), lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    expect(await get(RETRY_LOANS.approved)).toMatchObject({ loc_status: 'COMPLETED', loc_payment_attempts: 2, loc_process: 'RETRY' });
    expect(await get(RETRY_LOANS.declined)).toMatchObject({
      loc_status: 'FAILED',
      loc_payment_attempts: LOAN_MAX_ATTEMPTS,
      loc_decline_code: 'insufficient_funds',
      loc_update_reason: 'Payment declined on its last allowed attempt (max retries).',
    });
    const history = await app.deps.payments.listHistory(RETRY_LOANS.declined.user_id, RETRY_LOANS.declined.loan_id, RETRY_LOANS.declined.payment_id);
    expect(history.items.map((r) => `${r.loc_status} ${r.actor}`)).toEqual(['FAILED system:collections', 'RETRY system:seed']);
  });
});

describe('seed data: something in every list', () => {
  it('seeds a card period in dunning (retrying, insufficient funds) and a card period with an amount_mismatch exception', async () => {
    const dunning = (await app.deps.billing.listDunning('retrying', { limit: 100 })).items.filter((r) => r.user_id.startsWith('seed-user-'));
    expect(dunning.map((r) => [r.user_id, r.decline_code, r.decline_class])).toContainEqual(['seed-user-0019', 'insufficient_funds', 'retry_later']);
    const exceptions = (await app.deps.billing.listExceptions({ limit: 100 })).items.filter((r) => r.user_id.startsWith('seed-user-'));
    expect(exceptions.map((r) => [r.user_id, r.billing_status, r.card_exception?.code])).toEqual([['seed-user-0020', 'PENDING', 'amount_mismatch']]);
    expect(exceptions[0]!.card_exception!.received_cents).toBeLessThan(exceptions[0]!.amount_cents);
  });
});
