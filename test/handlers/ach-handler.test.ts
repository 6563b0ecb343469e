import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { ConcurrentModificationError } from '../../src/domain/errors.js';
import type { BillingStore } from '../../src/domain/ports/billing-store.js';
import type { BillingRecord } from '../../src/domain/records.js';
import type { LoanPayment } from '../../src/domain/loan-payments.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import type { AppDeps } from '../../src/runtime/deps.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { loanPayment, seedLoanPayment } from '../support/loan-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { parseBody, webhookEvent } from './webhook-events.js';
import { DAY } from '../support/time.js';

const BILLING_DATE = '2026-12-01T00:00:00.000000000Z';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'ach' });
});

beforeEach(() => {
  app.clock.set('2026-12-03T12:00:00.000Z');
  app.simulator.configure({ default: 'approve' });
});

/** The sender's wall-clock seconds: signatures are checked against wall time, not the business clock (DESIGN 9). */
function nowSeconds(): number {
  return Math.floor(app.wallClock.now().getTime() / 1000);
}

/** A signed delivery, as the ACH provider sends it through API Gateway. */
function signedEvent(body: unknown, options: { secret?: string; t?: number; base64?: boolean; raw?: string } = {}) {
  const raw = options.raw ?? JSON.stringify(body);
  const signature = signPayload(raw, options.secret ?? TEST_SECRETS.achWebhook, options.t ?? nowSeconds());
  return webhookEvent('/webhooks/ach', raw, { 'X-ACH-Signature': signature }, { base64: options.base64 ?? false });
}

function achBody(type: string, record: Pick<BillingRecord, 'user_id' | 'billing_date' | 'transaction_id'>, extra: Record<string, unknown> = {}) {
  return {
    event_id: `ach-evt-${randomUUID()}`,
    type,
    confirmation_id: record.transaction_id,
    amount_cents: 1999,
    occurred_at: formatInstant(app.clock.now()),
    reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
    ...extra,
  };
}

/** A period whose ACH debit the processor accepted (ACHSENT with its confirmation id). */
function achSentPeriod(overrides: Partial<BillingRecord> = {}): BillingRecord {
  return {
    user_id: `user-${randomUUID()}`,
    billing_date: BILLING_DATE,
    subscription_id: randomUUID(),
    amount_cents: 1999,
    billing_status: 'ACHSENT',
    transaction_id: `conf-${randomUUID()}`,
    last_run_date: '2026-12-01T00:00:00.000000001Z',
    created_date: '2026-11-01T00:00:00.000000000Z',
    process: 'SCHEDULED',
    term: 'MONTHLY',
    tier: 'plus:v3',
    payment_method: 'ach',
    account_last_four: '6789',
    payment_attempts: 1,
    first_attempt_date: '2026-12-01T00:00:00.000000000Z',
    last_attempt_date: '2026-12-01T00:00:00.000000000Z',
    version: 2,
    ...overrides,
  };
}

async function current(record: BillingRecord): Promise<BillingRecord> {
  const found = await app.deps.billing.get(record);
  expect(found).toBeDefined();
  return found!;
}

async function historyCount(record: BillingRecord): Promise<number> {
  return (await app.deps.billing.history(record.subscription_id, { limit: 100 })).items.length;
}

const handle = (deps: AppDeps = app.depsFor('ach-handler')) => createAchHandler(deps);

describe('ach-handler: subscription outcomes', () => {
  it('settles an ACHSENT record and writes its audit row in the same change', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle()(signedEvent(achBody('settled', record)));
    expect(result.statusCode).toBe(200);
    expect(parseBody(result)).toEqual({ status: 'applied', effect: 'settled', record_status: 'COMPLETED' });
    const after = await current(record);
    expect(after).toMatchObject({ billing_status: 'COMPLETED', updated_event: 'ACH_SETTLED', version: 3 });
    expect(after.completed_date).toBeDefined();
    const history = await app.deps.billing.history(record.subscription_id);
    expect(history.items[0]).toMatchObject({ billing_status: 'COMPLETED', updated_event: 'ACH_SETTLED', version: 3 });
  });

  it('reads a base64-encoded body (the signature is over the decoded bytes)', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle()(signedEvent(achBody('settled', record), { base64: true }));
    expect(result.statusCode).toBe(200);
    expect((await current(record)).billing_status).toBe('COMPLETED');
  });

  it('answers a replay with 200 (duplicate by its id, ignored by the record under another id) and writes nothing', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const body = achBody('settled', record);
    expect((await handle()(signedEvent(body))).statusCode).toBe(200);
    const rows = await historyCount(record);
    expect(parseBody(await handle()(signedEvent(body)))).toEqual({ status: 'duplicate' });
    // Past the claim's TTL, or resent under a new id: the record's state still fences it.
    const replay = await handle()(signedEvent({ ...body, event_id: `ach-evt-${randomUUID()}` }));
    expect(replay.statusCode).toBe(200);
    expect(parseBody(replay)).toEqual({ status: 'ignored', reason: 'already_applied' });
    expect((await current(record)).version).toBe(3);
    expect(await historyCount(record)).toBe(rows);
  });

  it('ignores an outcome for an older confirmation (a newer attempt owns the record)', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle()(signedEvent(achBody('returned', { ...record, transaction_id: 'conf-old' }, { return_code: 'R01' })));
    expect(parseBody(result)).toEqual({ status: 'ignored', reason: 'confirmation_mismatch' });
    expect(await current(record)).toMatchObject({ billing_status: 'ACHSENT', version: 2 });
  });

  it('answers 200 ignored for a reference it does not know (the provider would retry a 404 forever)', async () => {
    const result = await handle()(signedEvent(achBody('settled', { user_id: 'nobody', billing_date: BILLING_DATE, transaction_id: 'conf-x' })));
    expect(result.statusCode).toBe(200);
    expect(parseBody(result)).toEqual({ status: 'ignored', reason: 'not_found' });
  });

  it('R01: FAILED with the first re-presentment granted and the original entry date remembered', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle()(signedEvent(achBody('returned', record, { return_code: 'R01' })));
    expect(parseBody(result)).toMatchObject({ status: 'applied', effect: 'represent', record_status: 'FAILED' });
    expect(await current(record)).toMatchObject({
      billing_status: 'FAILED',
      updated_event: 'ACH_RETURNED',
      ach_represented: 1,
      ach_original_entry_date: record.last_attempt_date,
    });
  });

  it.each(['R02', 'R03', 'R04'])('%s: FAILED and ACH blocked for the record', async (code) => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle()(signedEvent(achBody('returned', record, { return_code: code })));
    expect(parseBody(result)).toMatchObject({ status: 'applied', effect: 'blocked' });
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', updated_event: 'ACH_RETURNED', ach_blocked: true });
  });

  it.each(['R05', 'R07', 'R10', 'R11', 'R29'])('%s: unauthorized, chargeback semantics', async (code) => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle()(signedEvent(achBody('returned', record, { return_code: code })));
    expect(parseBody(result)).toMatchObject({ status: 'applied', effect: 'unauthorized' });
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', updated_event: 'ACH_CHARGEBACK', ach_unauthorized: true });
  });

  it('refunds a COMPLETED record', async () => {
    const [record] = await seedRecords(app, achSentPeriod({ billing_status: 'COMPLETED', completed_date: '2026-12-02T00:00:00.000000000Z' }));
    const result = await handle()(signedEvent(achBody('refunded', record)));
    expect(parseBody(result)).toMatchObject({ status: 'applied', effect: 'refunded', record_status: 'REFUNDED' });
    expect(await current(record)).toMatchObject({ billing_status: 'REFUNDED', updated_event: 'REFUNDED' });
  });

  it('a chargeback of a COMPLETED record leaves it FAILED, unauthorized, and out of automatic retries', async () => {
    const [record] = await seedRecords(app, achSentPeriod({ billing_status: 'COMPLETED' }));
    const result = await handle()(signedEvent(achBody('chargeback', record)));
    expect(parseBody(result)).toMatchObject({ status: 'applied', effect: 'unauthorized', record_status: 'FAILED' });
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', updated_event: 'ACH_CHARGEBACK', ach_unauthorized: true });
    app.clock.advance(2 * DAY);
    const retry = await runCollectionAttempt(app.deps, { key: record, process: 'RETRY', owner: 'test' });
    expect(retry).toMatchObject({ kind: 'held', refusal: { code: 'ach_authorization_required', decided_by: 'nacha.unauthorized_return' } });
  });
});

describe('ach-handler: re-presentment limit', () => {
  it('re-presents an R01 twice through the daily retry and blocks ACH on the third return', async () => {
    const [record] = await seedRecords(app, achSentPeriod({ billing_status: 'PENDING', transaction_id: undefined, payment_attempts: 0, first_attempt_date: undefined, last_attempt_date: undefined }));
    app.clock.set('2026-12-01T12:00:00.000Z');
    const first = await runCollectionAttempt(app.deps, { key: record, process: 'SCHEDULED', owner: 'test' });
    expect(first.kind).toBe('submitted');

    for (let returnNumber = 1; returnNumber <= 3; returnNumber++) {
      const submitted = await current(record);
      expect(submitted.billing_status).toBe('ACHSENT');
      app.clock.advance(2 * DAY);
      const result = await handle()(signedEvent(achBody('returned', submitted, { return_code: 'R01' })));
      expect(parseBody(result)).toMatchObject({ status: 'applied', effect: returnNumber < 3 ? 'represent' : 'blocked' });
      app.clock.advance(DAY + 1);
      const retry = await runCollectionAttempt(app.deps, { key: record, process: 'RETRY', owner: 'test' });
      if (returnNumber < 3) {
        expect(retry.kind).toBe('submitted');
      } else {
        expect(retry).toMatchObject({ kind: 'held', refusal: { code: 'ach_representment_limit', decided_by: 'nacha.representment_limit' } });
      }
    }
    expect(await current(record)).toMatchObject({ billing_status: 'FAILED', ach_represented: 2, ach_blocked: true, payment_attempts: 3 });
    // Three entries in all: the original and two re-presentments.
    expect(app.simulator.charges().filter((c) => c.user_id === record.user_id)).toHaveLength(3);
  });
});

describe('ach-handler: loan payments', () => {
  const seedPayment = (overrides: Partial<LoanPayment> = {}) =>
    seedLoanPayment(app, loanPayment(app, { loc_status: 'ACHSENT', loc_confirmation_id: `conf-${randomUUID()}`, loc_created_date: '2026-12-01T00:00:00.000000000Z', loc_last_updated: '2026-12-01T00:00:00.000000000Z', ...overrides }));

  const loanBody = (type: string, p: LoanPayment, extra: Record<string, unknown> = {}) => ({
    event_id: `ach-evt-${randomUUID()}`,
    type,
    confirmation_id: p.loc_confirmation_id,
    amount_cents: p.loc_amount,
    occurred_at: formatInstant(app.clock.now()),
    reference: { kind: 'loan_payment', user_id: p.loc_user_id, loan_id: p.loc_loan_id, payment_id: p.loc_payment_id },
    ...extra,
  });

  const stored = async (p: LoanPayment) => (await app.deps.payments.get(p.loc_user_id, p.loc_loan_id, p.loc_payment_id))!;

  it('settles an ACHSENT payment; a replay is a no-op', async () => {
    const payment = await seedPayment();
    const body = loanBody('settled', payment);
    expect(parseBody(await handle()(signedEvent(body)))).toMatchObject({ status: 'applied', record_status: 'COMPLETED' });
    expect(await stored(payment)).toMatchObject({ loc_status: 'COMPLETED', loc_update_reason: 'ach_settled', version: 2 });
    expect(parseBody(await handle()(signedEvent(body)))).toEqual({ status: 'duplicate' });
    expect(parseBody(await handle()(signedEvent({ ...body, event_id: `ach-evt-${randomUUID()}` })))).toEqual({ status: 'ignored', reason: 'already_applied' });
    expect((await stored(payment)).version).toBe(2);
  });

  it('R01 with re-presentments left → RETRY; an account error → RETURNED', async () => {
    const retryable = await seedPayment();
    expect(parseBody(await handle()(signedEvent(loanBody('returned', retryable, { return_code: 'R01' }))))).toMatchObject({ record_status: 'RETRY' });
    expect(await stored(retryable)).toMatchObject({ loc_status: 'RETRY', loc_update_reason: 'ach_returned:R01' });

    const exhausted = await seedPayment({ loc_payment_attempts: 3 });
    expect(parseBody(await handle()(signedEvent(loanBody('returned', exhausted, { return_code: 'R09' }))))).toMatchObject({ record_status: 'RETURNED' });

    const closed = await seedPayment();
    expect(parseBody(await handle()(signedEvent(loanBody('returned', closed, { return_code: 'R02' }))))).toMatchObject({ record_status: 'RETURNED' });
  });

  it('a chargeback of a COMPLETED payment → CHARGED_BACK; a refund is not a loan outcome', async () => {
    const payment = await seedPayment({ loc_status: 'COMPLETED' });
    expect(parseBody(await handle()(signedEvent(loanBody('refunded', payment))))).toEqual({ status: 'ignored', reason: 'unsupported' });
    expect(parseBody(await handle()(signedEvent(loanBody('chargeback', payment))))).toMatchObject({ record_status: 'CHARGED_BACK' });
    expect((await stored(payment)).loc_status).toBe('CHARGED_BACK');
  });
});

describe('ach-handler: signatures and bodies', () => {
  async function expectRejected(event: ReturnType<typeof signedEvent>, record: BillingRecord, code: string) {
    const result = await handle()(event);
    expect(result.statusCode).toBe(400);
    expect((parseBody(result).error as { code: string }).code).toBe(code);
    expect(await current(record)).toMatchObject({ billing_status: 'ACHSENT', version: record.version });
    expect(await historyCount(record)).toBe(1);
  }

  it('refuses a signature made with another secret', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    await expectRejected(signedEvent(achBody('settled', record), { secret: 'not-the-secret' }), record, 'invalid_signature');
  });

  it('refuses a timestamp more than five minutes old or ahead', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    await expectRejected(signedEvent(achBody('settled', record), { t: nowSeconds() - 301 }), record, 'invalid_signature');
    await expectRejected(signedEvent(achBody('settled', record), { t: nowSeconds() + 301 }), record, 'invalid_signature');
  });

  it('accepts a timestamp just inside the tolerance', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    expect((await handle()(signedEvent(achBody('settled', record), { t: nowSeconds() - 299 }))).statusCode).toBe(200);
  });

  it('refuses a body changed after signing', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const signed = signedEvent(achBody('refunded', record));
    const forged = { ...signed, body: signed.body!.replace('"refunded"', '"settled"') };
    await expectRejected(forged, record, 'invalid_signature');
  });

  it('refuses a missing or malformed signature header before reading the body', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    await expectRejected(webhookEvent('/webhooks/ach', 'not json at all', {}), record, 'invalid_signature');
    await expectRejected(webhookEvent('/webhooks/ach', 'not json at all', { 'x-ach-signature': 'garbage' }), record, 'invalid_signature');
  });

  it('refuses a signed body that is not JSON', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    await expectRejected(signedEvent(undefined, { raw: '{"event_id":' }), record, 'invalid_json');
  });

  it.each([
    ['a return without a return code', { return_code: undefined }],
    ['an unknown type', { type: 'reversed' }],
    ['a fractional amount', { amount_cents: 19.5 }],
    ['a reference without its key', { reference: { kind: 'subscription', user_id: 'u1' } }],
    ['an occurred_at that is not RFC3339', { occurred_at: 'yesterday' }],
  ])('refuses %s with the zod issues', async (_label, change) => {
    const [record] = await seedRecords(app, achSentPeriod());
    const body = { ...achBody('returned', record, { return_code: 'R01' }), ...change };
    const result = await handle()(signedEvent(body));
    expect(result.statusCode).toBe(400);
    const error = parseBody(result).error as { code: string; details: unknown[] };
    expect(error.code).toBe('invalid_body');
    expect(error.details.length).toBeGreaterThan(0);
    expect((await current(record)).version).toBe(record.version);
  });
});

describe('ach-handler: concurrent writers', () => {
  /** A store whose reads are each followed by another writer's change to the same record. */
  function racingStore(races: number): BillingStore {
    const inner = app.depsFor('ach-handler').billing;
    let left = races;
    return Object.assign(Object.create(inner) as BillingStore, {
      get: async (key: Parameters<BillingStore['get']>[0]) => {
        const read = await inner.get(key);
        if (read && left-- > 0) {
          const bumped = { ...read, version: read.version + 1, last_run_date: formatInstant(app.clock.now(), 500_000 + left) };
          await app.deps.billing.commit({ writes: [{ kind: 'update', read, record: bumped }], history: [historyRowOf(bumped)] });
        }
        return read;
      },
    });
  }

  it('re-reads and applies once after a version conflict', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle({ ...app.depsFor('ach-handler'), billing: racingStore(1) })(signedEvent(achBody('settled', record)));
    expect(result.statusCode).toBe(200);
    expect(await current(record)).toMatchObject({ billing_status: 'COMPLETED', version: 4 });
  });

  it('answers 409 when the record keeps changing, so the sender retries', async () => {
    const [record] = await seedRecords(app, achSentPeriod());
    const result = await handle({ ...app.depsFor('ach-handler'), billing: racingStore(2) })(signedEvent(achBody('settled', record)));
    expect(result.statusCode).toBe(409);
    expect((parseBody(result).error as { code: string }).code).toBe(new ConcurrentModificationError('x').code);
    expect(await current(record)).toMatchObject({ billing_status: 'ACHSENT', version: 4 });
  });
});
