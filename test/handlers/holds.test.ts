import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { achDelivery, achEventBody } from '../support/webhooks.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord, callerFor, type Caller } from './api-fixtures.js';
import { parseBody } from './webhook-events.js';
import { DAY } from '../support/time.js';

/**
 * Holds bind every path (DESIGN 3.1): manual pay and retry-billing may skip the waits, never an
 * unauthorized or account-error ACH return, the R01/R09 re-presentment limit or an open dispute.
 * Driven through the real api, ach-handler and webhook-balance-worker handlers on DynamoDB Local.
 */

let app: TestApp;
let call: Caller;

beforeAll(async () => {
  app = await createTestApp({ label: 'holds', settings: { balanceThresholdCents: 0 } });
  call = callerFor(app);
});

beforeEach(() => {
  app.simulator.configure({ default: 'approve' });
});

const SUB = '/v1/subscriptions/{subscriptionId}';
const chargesOf = (userId: string) => app.simulator.charges().filter((c) => c.user_id === userId);
/** The period's own rows: a refused person request adds only its PAYMENT_REFUSED audit row. */
const historyCount = async (record: BillingRecord) => (await app.deps.billing.history(record.subscription_id)).items.filter((r) => r.billing_event !== 'PAYMENT_REFUSED').length;
const current = async (record: BillingRecord) => (await app.deps.billing.get(record))!;
const pay = (record: BillingRecord, key = `pay-${randomUUID()}`) =>
  call('POST', { route: `${SUB}/pay`, pathParameters: { subscriptionId: record.subscription_id }, headers: { 'Idempotency-Key': key } });
const retryBilling = (record: BillingRecord) =>
  call('POST', { route: `${SUB}/retry-billing`, pathParameters: { subscriptionId: record.subscription_id }, body: { reason: 'customer called' } });

async function achOutcome(record: BillingRecord, type: string, extra: Record<string, unknown> = {}) {
  const body = achEventBody(record, type, record.transaction_id, formatInstant(app.clock.now()), extra);
  return parseBody(await createAchHandler(app.depsFor('ach-handler'))(achDelivery(body, { signedAtMs: app.wallClock.now().getTime() })));
}

/** An ACH period submitted by the scheduled run, then returned with `code`. */
async function returnedAchPeriod(code: string): Promise<BillingRecord> {
  const [seeded] = await seedRecords(app, billingRecord(app, { payment_method: 'ach' }));
  expect((await pay(seeded)).body.outcome).toBe('submitted');
  expect(await achOutcome(await current(seeded), 'returned', { return_code: code })).toMatchObject({ status: 'applied' });
  app.clock.advance(2 * DAY);
  return current(seeded);
}

/** Asserts the request was refused with `code` and that nothing was written or charged. */
async function expectRefused(answer: Awaited<ReturnType<Caller>>, record: BillingRecord, code: string, chargesBefore: number, rowsBefore: number) {
  expect(answer.status).toBe(409);
  expect(answer.body.error.code).toBe(code);
  expect(chargesOf(record.user_id)).toHaveLength(chargesBefore);
  expect(await current(record)).toEqual(record);
  expect(await historyCount(record)).toBe(rowsBefore);
  // The refusal itself is audited, naming the rule (DESIGN 3.2).
  const newest = (await app.deps.billing.history(record.subscription_id)).items[0];
  expect(newest).toMatchObject({ billing_event: 'PAYMENT_REFUSED', decided_by: answer.body.error.decided_by });
  expect(newest?.decided_by).toBeDefined();
}

describe('holds bind the person-initiated paths (DESIGN 3.1)', () => {
  it('manual pay after an R10 (unauthorized) return answers 409 ach_authorization_required and charges nothing', async () => {
    const record = await returnedAchPeriod('R10');
    expect(record).toMatchObject({ billing_status: 'FAILED', ach_unauthorized: true, ach_return_code: 'R10' });
    await expectRefused(await pay(record), record, 'ach_authorization_required', 1, await historyCount(record));
  });

  it('manual pay after an R02 (account closed) return answers 409 ach_account_invalid and charges nothing', async () => {
    const record = await returnedAchPeriod('R02');
    expect(record).toMatchObject({ billing_status: 'FAILED', ach_blocked: true, ach_return_code: 'R02' });
    await expectRefused(await pay(record), record, 'ach_account_invalid', 1, await historyCount(record));
  });

  it('retry-billing after an R29 return answers 409 before the clear: no audit row, no charge', async () => {
    const record = await returnedAchPeriod('R29');
    await expectRefused(await retryBilling(record), record, 'ach_authorization_required', 1, await historyCount(record));
  });

  it('retry-billing after an R03 return answers 409 ach_account_invalid', async () => {
    const record = await returnedAchPeriod('R03');
    await expectRefused(await retryBilling(record), record, 'ach_account_invalid', 1, await historyCount(record));
  });

  it('manual pay and retry-billing do not present an R01 entry a fourth time (two re-presentments, counted over every path)', async () => {
    const record = await returnedAchPeriod('R01');
    // Re-presentment 1 by a manual pay (skips the daily wait), re-presentment 2 by retry-billing.
    expect((await pay(record)).body).toMatchObject({ outcome: 'submitted' });
    expect(await achOutcome(await current(record), 'returned', { return_code: 'R01' })).toMatchObject({ effect: 'represent' });
    expect((await retryBilling(record)).body).toMatchObject({ outcome: 'billed', subscription: { billing_status: 'ACHSENT' } });
    expect(await achOutcome(await current(record), 'returned', { return_code: 'R09' })).toMatchObject({ effect: 'blocked' });
    expect(chargesOf(record.user_id)).toHaveLength(3);

    const limited = await current(record);
    expect(limited).toMatchObject({ billing_status: 'FAILED', ach_represented: 2, ach_blocked: true, payment_attempts: 3 });
    const rows = await historyCount(limited);
    await expectRefused(await pay(limited), limited, 'ach_representment_limit', 3, rows);
    await expectRefused(await retryBilling(limited), limited, 'ach_representment_limit', 3, rows);
  });

  it('an R01 entry is not re-presented by a person after 180 days from the original entry', async () => {
    const record = await returnedAchPeriod('R01');
    app.clock.advance(181 * DAY);
    const late = await current(record);
    await expectRefused(await pay(late), late, 'ach_representment_limit', 1, await historyCount(late));
  });

  it('manual pay and retry-billing of a disputed card period answer 409 card_disputed', async () => {
    const [record] = await seedRecords(app, billingRecord(app, {
      payment_method: 'card',
      billing_status: 'FAILED',
      card_disputed: true,
      transaction_id: 'pi_disputed',
      payment_attempts: 1,
      last_attempt_date: formatInstant(new Date(app.clock.now().getTime() - 3 * DAY)),
    }));
    const rows = await historyCount(record);
    await expectRefused(await pay(record), record, 'card_disputed', 0, rows);
    await expectRefused(await retryBilling(record), record, 'card_disputed', 0, rows);
  });

  it('a repeated Idempotency-Key after a hold still answers 409 (a hold is never a replayed success)', async () => {
    const record = await returnedAchPeriod('R07');
    const key = `pay-${randomUUID()}`;
    expect((await pay(record, key)).status).toBe(409);
    expect((await pay(record, key)).status).toBe(409);
    expect(chargesOf(record.user_id)).toHaveLength(1);
  });

  it('the balance webhook honours an account-error hold: nothing presented, nothing written', async () => {
    const record = await returnedAchPeriod('R04');
    const rows = await historyCount(record);
    const message = {
      event_id: randomUUID(),
      user_id: record.user_id,
      institution_id: 'ins_1',
      available_balance_cents: 1_000_000,
      current_balance_cents: 1_000_000,
      occurred_at: formatInstant(app.clock.now()),
    };
    const response = await createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'))(sqsEvent([sqsRecord(message)]), lambdaContext());
    expect(response.batchItemFailures).toEqual([]);
    expect(await current(record)).toEqual(record);
    expect(await historyCount(record)).toBe(rows);
    expect(chargesOf(record.user_id)).toHaveLength(1);
  });
});
