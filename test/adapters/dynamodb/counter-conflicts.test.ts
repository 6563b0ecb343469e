import { randomUUID } from 'node:crypto';
import { TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ACH_RATE_PARTITION } from '../../../src/adapters/dynamodb/ach-rate-counters.js';
import { achDebitTally } from '../../../src/domain/ach-return-rates.js';
import { historyRowOf } from '../../../src/domain/billing-record.js';
import type { LoanPayment } from '../../../src/domain/loan-payments.js';
import { formatInstant } from '../../../src/domain/time.js';
import { dynamoStores } from '../../../src/runtime/compose.js';
import { createTestApp, type TestApp } from '../../support/app.js';
import { makeRecord } from '../../support/billing-fixtures.js';
import { HOUR } from '../../support/time.js';
import { clientWithTransactionConflicts, type ConflictingClient } from '../../support/transaction-conflicts.js';

/**
 * DESIGN 13 (issue 32 item 5): the ACH return-rate and gauge counters are written in the money
 * write's own transaction; on billing day many such transactions run at once. Each write takes a
 * counter shard at random, and a transaction cancelled only by a conflict is sent again, so no
 * commit is lost to a counter item and the counters stay exact.
 */

const NOW = new Date('2026-12-01T12:00:00.000Z');
const at = (offsetMs: number) => formatInstant(new Date(NOW.getTime() + offsetMs));
/** Transactions started at once: more than DESIGN 13's rate keeps in one 20 ms window at 1,000 debits/s. */
const CONCURRENT = 32;

describe('counter items under concurrent commits (DynamoDB Local, with the service conflicts emulated)', () => {
  let app: TestApp;
  let conflicting: ConflictingClient;
  beforeAll(async () => {
    app = await createTestApp({ label: 'counter-conflicts', now: at(0) });
    conflicting = clientWithTransactionConflicts(app.db.endpoint, 20);
  });

  const stores = () => dynamoStores({ client: conflicting.client, tables: app.db.tables });

  it('the emulation cancels transactions that meet on one item (what a single counter item did to commits)', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        conflicting.client.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              { Put: { TableName: app.db.tables.billingActivity, Item: { user_id: { S: `user-${randomUUID()}` }, billing_date: { S: at(0) } } } },
              { Update: { TableName: app.db.tables.billingActivity, Key: { user_id: { S: ACH_RATE_PARTITION }, billing_date: { S: 'DAY#2026-11-30#000' } }, UpdateExpression: 'ADD debits :one', ExpressionAttributeValues: { ':one': { N: '1' } } } },
            ],
          }),
        ),
      ),
    );
    expect(results.filter((r) => r.status === 'rejected').length).toBeGreaterThan(0);
  });

  it('period commits that each count an ACH debit and move the failing gauge: none cancelled, both counters exact', async () => {
    const billing = stores().billing;
    const before = { rates: await app.deps.billing.achRateCounts('2026-12-01', '2026-12-01'), failing: await app.deps.billing.countFailing() };
    const conflictsBefore = conflicting.conflicts();
    // A new record with a live failure is in the failing gauge (retrying): its create adds one.
    const records = Array.from({ length: CONCURRENT }, () =>
      makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-2 * HOUR), payment_method: 'ach', billing_failed_for: `${at(-72 * HOUR)}#1`, billing_failure_count: 2, billing_failed_at: at(-HOUR), billing_next_attempt_at: at(HOUR), billing_last_error: 'The payment processor is unavailable.' }),
    );

    const results = await Promise.allSettled(records.map((record) => billing.commit({ writes: [{ kind: 'create', record }], history: [historyRowOf(record)], achRates: achDebitTally(NOW) })));

    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    // Transactions did meet on counter shards, and were sent again.
    expect(conflicting.conflicts()).toBeGreaterThan(conflictsBefore);
    const rates = await app.deps.billing.achRateCounts('2026-12-01', '2026-12-01');
    expect(rates.debits - before.rates.debits).toBe(CONCURRENT);
    const failing = await app.deps.billing.countFailing();
    expect(failing.retrying - before.failing.retrying).toBe(CONCURRENT);
  }, 180_000);

  it('loan payment debits counted at once: none cancelled, the counter exact', async () => {
    const payments = stores().payments;
    const before = await app.deps.payments.achRateCounts('2026-12-01', '2026-12-01');
    const created = await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const payment: LoanPayment = { loc_user_id: `user-${randomUUID()}`, loc_loan_id: 'loan-c', loc_payment_id: `pay-c${i}`, loc_amount: 700, loc_payment_method: 'ach', loc_account_last_four: '6789', loc_status: 'PENDING', loc_process: 'MANUAL', loc_payment_attempts: 0, loc_update_reason: 'created', loc_created_date: at(-HOUR), loc_last_updated: at(-HOUR), version: 0 };
        await app.deps.payments.create(payment, { actor: 'test', reason: 'fixture' });
        return payment;
      }),
    );

    const sent = (p: LoanPayment): LoanPayment => ({ ...p, loc_status: 'ACHSENT', loc_payment_attempts: 1, loc_confirmation_id: `conf-${p.loc_payment_id}`, loc_update_reason: 'submitted', loc_last_updated: at(0), version: 1 });
    const results = await Promise.allSettled(created.map((p) => payments.update(sent(p), 0, { actor: 'test', reason: 'submitted' }, achDebitTally(NOW))));

    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    expect((await app.deps.payments.achRateCounts('2026-12-01', '2026-12-01')).debits - before.debits).toBe(CONCURRENT);
  }, 180_000);
});
