import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACH_EVENT_TYPES } from '../../src/domain/ach-outcomes.js';
import { collectionMessageSchema, collectionProcessSchema } from '../../src/domain/collections.js';
import { membershipEventSchema } from '../../src/domain/use-cases/membership/apply-membership-event.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createBatchWorkerHandler } from '../../src/handlers/batch-worker.js';
import { createMembershipsConsumerHandler } from '../../src/handlers/memberships-consumer.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { balanceEventSchema, createBalanceWorkerHandler } from '../../src/handlers/webhook-balance-worker.js';
import type { HttpEvent, HttpResult } from '../../src/handlers/shared/http.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { kinesisEvent, kinesisRecord, sqsEvent, sqsRecord } from '../support/aws-events.js';
import { balanceWebhookEvent, httpEvent, operatorAuth, readerAuth, type JwtAuth } from '../support/http-events.js';
import { dueRecord, tableItemCounts } from '../support/ledger.js';
import { seedRecords } from '../support/seed.js';
import { MEMBERSHIP_EVENT_TYPES, PAYMENT_METHODS } from '../support/unions.js';
import { achDelivery, achEventBody, paymentIntentObject, stripeDelivery, stripeEvent } from '../support/webhooks.js';
import { countWrites, type WriteCounter } from '../support/write-counter.js';

/**
 * Fuzzing every edge (DESIGN 8, 10): generated API requests, webhook bodies, SQS messages and
 * Kinesis records, valid, near-valid and garbage. No input answers 5xx or throws out of a
 * handler; every rejection is a structured 4xx `{"error":{"code","message"}}` or a batch item
 * failure, and a rejected input writes nothing to any data table.
 */

const NOW = '2026-12-01T12:00:00.000Z';
const RUNS = Math.round(Number(process.env.RELIABILITY_SCALE ?? '1') * 250);

let app: TestApp;
let writes: WriteCounter;
const statusTally = new Map<number, number>();
const known = { subscriptionIds: [] as string[], userIds: [] as string[], billingDates: [] as string[] };

afterAll(() => {
  if (process.env.RELIABILITY_REPORT) console.log({ statuses: Object.fromEntries(statusTally) });
});

beforeAll(async () => {
  app = await createTestApp({ label: 'fuzz', now: NOW });
  writes = countWrites(app.db.client, app.db.tables.locks);
  for (const rail of PAYMENT_METHODS) {
    const [r] = await seedRecords(app, dueRecord(app.clock.now(), rail));
    known.subscriptionIds.push(r.subscription_id);
    known.userIds.push(r.user_id);
    known.billingDates.push(r.billing_date);
  }
  const [achsent] = await seedRecords(app, dueRecord(app.clock.now(), 'ach', { billing_status: 'ACHSENT', payment_attempts: 1, transaction_id: 'sim_known' }));
  known.userIds.push(achsent.user_id);
  known.billingDates.push(achsent.billing_date);
});

/** A valid object with one field removed, retyped or added. */
function nearValid(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(valid);
  return fc.oneof(
    fc.constantFrom(...keys).map((k) => {
      const copy = { ...valid };
      delete copy[k];
      return copy;
    }),
    fc.tuple(fc.constantFrom(...keys), fc.anything({ maxDepth: 2 })).map(([k, v]) => ({ ...valid, [k]: v })),
    fc.tuple(fc.constantFrom(...keys), fc.constantFrom('', ' ', '-1', 'x'.repeat(5000), '2026-13-45T99:00:00Z', 'NaN', '\u0000', '💥')).map(([k, v]) => ({ ...valid, [k]: v })),
    fc.tuple(fc.string(), fc.anything({ maxDepth: 1 })).map(([k, v]) => ({ ...valid, [k]: v })),
  );
}

/** Valid, near-valid or garbage text for a body whose valid form is `valid`. */
function bodyText(valid: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<string> {
  return fc.oneof(
    valid.map((v) => JSON.stringify(v)),
    valid.chain(nearValid).map((v) => JSON.stringify(v) ?? 'null'),
    fc.json(),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.constantFrom('', '{', '[]', 'null', '{"a":', '\u0000', '{"__proto__":{"x":1}}'),
  );
}

function isStructuredError(result: HttpResult): boolean {
  try {
    const body = JSON.parse(result.body ?? '');
    return typeof body?.error?.code === 'string' && body.error.code !== '' && typeof body.error.message === 'string';
  } catch {
    return false;
  }
}

/** Runs one HTTP call and checks the edge contract: no 5xx, a rejection is structured and wrote no data. */
async function expectEdgeContract(call: () => Promise<HttpResult>, describeInput: () => unknown): Promise<HttpResult> {
  writes.reset();
  const result = await call();
  const status = result.statusCode ?? 0;
  statusTally.set(status, (statusTally.get(status) ?? 0) + 1);
  const where = JSON.stringify(describeInput()).slice(0, 600);
  expect(status, `${where} → ${result.body}`).toBeGreaterThanOrEqual(200);
  expect(status, `${where} → ${result.body}`).toBeLessThan(500);
  if (status >= 400) {
    expect(isStructuredError(result), `${where} → ${result.body}`).toBe(true);
    expect(writes.data(), `${where} → ${status} but wrote data`).toBe(0);
  }
  return result;
}

const segmentArb = fc.oneof(
  fc.constant('__known_sub__'),
  fc.constant('__known_user__'),
  fc.uuid(),
  fc.string({ maxLength: 40 }),
  fc.constantFrom('..', '%', '%E0%A4%A', 'a#b', ' ', 'x'.repeat(300), 'ü', 'a/b', 'null', '{subscriptionId}'),
);

/** The routes as declared, plus paths no route has. */
const ROUTES: readonly (readonly [string, string])[] = [
  ['GET', '/v1/users/{a}/subscriptions'],
  ['GET', '/v1/subscriptions'],
  ['GET', '/v1/subscriptions/{a}'],
  ['GET', '/v1/subscriptions/{a}/history'],
  ['POST', '/v1/subscriptions/{a}/pay'],
  ['POST', '/v1/subscriptions/{a}/retry-billing'],
  ['POST', '/v1/subscriptions/{a}/waive'],
  ['PUT', '/v1/subscriptions/{a}/billing-date'],
  ['GET', '/v1/users/{a}/loans/{b}/payments'],
  ['POST', '/v1/users/{a}/loans/{b}/payments'],
  ['GET', '/v1/users/{a}/loans/{b}/payments/{c}'],
  ['POST', '/webhooks/balance'],
  ['GET', '/v1'],
  ['GET', '/'],
  ['GET', '/v2/subscriptions/{a}'],
];

const routeArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ROUTES) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'), fc.constantFrom(...ROUTES.map((r) => r[1]))) },
);

const authArb: fc.Arbitrary<JwtAuth | null> = fc.constantFrom<JwtAuth | null>(
  operatorAuth,
  operatorAuth,
  operatorAuth,
  operatorAuth,
  readerAuth,
  null,
  { sub: '', scopes: ['billing:read', 'billing:write', 'billing:operate'] },
  { sub: 'x', scopes: [] },
  { sub: 'writer', scopeClaim: 'billing:write billing:read' },
);

const apiRequestArb = fc.record({
  route: routeArb,
  segments: fc.array(fc.oneof({ weight: 3, arbitrary: fc.constant('__known__') }, { weight: 2, arbitrary: segmentArb }), { minLength: 3, maxLength: 3 }),
  encode: fc.boolean(),
  declaredRoute: fc.boolean(),
  query: fc.option(
    fc.dictionary(
      fc.constantFrom('limit', 'next', 'billing', 'state', 'status', 'x'),
      fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('0', '1', '20', '100', '1000', '-1', 'failing', 'retrying', 'parked', 'eyJ4IjoxfQ', 'PENDING')),
      { maxKeys: 3 },
    ),
    { nil: undefined },
  ),
  idempotencyKey: fc.option(fc.oneof(fc.string({ maxLength: 300 }), fc.uuid()), { nil: undefined }),
  body: fc.option(
    bodyText(
      fc.oneof(
        fc.record({ reason: fc.string({ maxLength: 50 }) }),
        fc.record({ billing_date: fc.date({ min: new Date('2026-01-01'), max: new Date('2028-01-01'), noInvalidDate: true }).map((d) => d.toISOString()), reason: fc.constant('fuzz') }),
        fc.record({ amount_cents: fc.integer({ min: -5, max: 100_000 }), payment_method: fc.constantFrom(...PAYMENT_METHODS) }),
      ),
    ),
    { nil: undefined },
  ),
  base64: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  auth: authArb,
});

type ApiInput = typeof apiRequestArb extends fc.Arbitrary<infer T> ? T : never;

function apiEvent(input: ApiInput): HttpEvent {
  const [method, template] = input.route;
  const pick = (list: string[]) => list[input.segments.join('').length % list.length]!;
  const knownFor = (name: string) => (name === 'a' ? (template.includes('/users/') ? pick(known.userIds) : pick(known.subscriptionIds)) : name === 'b' ? 'loan-1' : 'pay_unknown');
  const fill = (name: string, seg: string) => (seg === '__known__' ? knownFor(name) : seg === '__known_sub__' ? known.subscriptionIds[0]! : seg === '__known_user__' ? known.userIds[0]! : seg);
  const names = ['a', 'b', 'c'];
  const params: Record<string, string> = {};
  let path = template;
  names.forEach((name, i) => {
    const value = fill(name, input.segments[i]!);
    params[name] = value;
    path = path.replace(`{${name}}`, input.encode ? encodeURIComponent(value) : value);
  });
  return httpEvent(method, {
    ...(input.declaredRoute ? { route: template, pathParameters: params, path } : { path, defaultRoute: true }),
    ...(input.query ? { query: input.query } : {}),
    headers: input.idempotencyKey !== undefined ? { 'idempotency-key': input.idempotencyKey } : {},
    ...(input.body !== undefined ? { body: input.body } : {}),
    base64: input.base64,
    auth: input.auth,
  });
}

describe('fuzzing the edges', () => {
  it('API requests: no 5xx, every rejection a structured 4xx that wrote nothing', async () => {
    const api = createApiHandler(app.depsFor('api'));
    await fc.assert(
      fc.asyncProperty(apiRequestArb, async (input) => {
        await expectEdgeContract(() => api(apiEvent(input)), () => input);
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it('signed webhook bodies (Stripe, ACH, balance): no 5xx, rejections structured and without writes', async () => {
    const stripe = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
    const ach = createAchHandler(app.depsFor('ach-handler'));
    const balance = createBalanceWebhookHandler(app.depsFor('balance-webhook'));
    const nowMs = () => app.clock.now().getTime();
    const record = (await app.deps.billing.get({ user_id: known.userIds[2]!, billing_date: known.billingDates[2]! }))!;
    const achsent = (await app.deps.billing.get({ user_id: known.userIds[3]!, billing_date: known.billingDates[3]! }))!;
    const stripeValid = fc.constantFrom(
      'payment_intent.succeeded',
      'payment_intent.payment_failed',
      'charge.refunded',
      'charge.dispute.created',
      'checkout.session.completed',
      'customer.created',
    ).map((type) => stripeEvent(type, paymentIntentObject(record, `pi_${randomUUID().slice(0, 6)}`), nowMs()) as Record<string, unknown>);
    const achValid = fc.constantFrom(...ACH_EVENT_TYPES).map(
      (type) => achEventBody(achsent, type as 'settled', 'sim_other', formatInstant(app.clock.now()), type === 'returned' ? { return_code: 'R01' } : {}) as Record<string, unknown>,
    );
    const balanceValid = fc.record({
      event_id: fc.constant('bal_fuzz'),
      user_id: fc.constantFrom(...known.userIds),
      institution_id: fc.constant('ins_1'),
      available_balance_cents: fc.integer(),
      current_balance_cents: fc.integer(),
      occurred_at: fc.constant(NOW),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          bodyText(stripeValid).map((raw) => ({ kind: 'stripe' as const, raw })),
          bodyText(achValid).map((raw) => ({ kind: 'ach' as const, raw })),
          bodyText(balanceValid).map((raw) => ({ kind: 'balance' as const, raw })),
        ),
        async (input) => {
          const signedAtMs = app.wallClock.now().getTime();
          const seconds = Math.floor(signedAtMs / 1000);
          const call =
            input.kind === 'stripe'
              ? () => stripe(stripeDelivery(undefined, { signedAtMs, raw: input.raw }))
              : input.kind === 'ach'
                ? () => ach(achDelivery(undefined, { signedAtMs, raw: input.raw }))
                : () => balance(balanceWebhookEvent(input.raw, TEST_SECRETS.balanceWebhook, seconds));
          await expectEdgeContract(call, () => input);
        },
      ),
      { numRuns: RUNS },
    );
    // None of this moved the ACHSENT record: every ACH body named another confirmation.
    expect((await app.deps.billing.get(achsent))?.version).toBe(achsent.version);
  });

  it('SQS messages to the batch-worker and webhook-balance-worker: never thrown, a bad body is a batch item failure that wrote nothing', async () => {
    const batch = createBatchWorkerHandler(app.depsFor('batch-worker'));
    const balance = createBalanceWorkerHandler(app.depsFor('webhook-balance-worker'));
    const collectionValid = fc.record({
      user_id: fc.constantFrom(...known.userIds, 'user-nobody'),
      billing_date: fc.constantFrom(...known.billingDates),
      subscription_id: fc.constantFrom(...known.subscriptionIds),
      process: fc.constantFrom(...collectionProcessSchema.options),
      enqueued_at: fc.constant(NOW),
    });
    const balanceValid = fc.record({
      event_id: fc.uuid(),
      user_id: fc.constantFrom('user-nobody', 'user-else'),
      institution_id: fc.constant('ins_1'),
      available_balance_cents: fc.integer(),
      current_balance_cents: fc.integer(),
      occurred_at: fc.constant(NOW),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(bodyText(collectionValid).map((body) => ({ to: 'batch' as const, body })), bodyText(balanceValid).map((body) => ({ to: 'balance' as const, body }))),
        async ({ to, body }) => {
          writes.reset();
          const event = sqsEvent([sqsRecord(body)]);
          const out = await (to === 'batch' ? batch(event) : balance(event));
          let parsed: unknown;
          try {
            parsed = JSON.parse(body);
          } catch {
            parsed = Symbol('invalid');
          }
          const valid = (to === 'batch' ? collectionMessageSchema : balanceEventSchema).safeParse(parsed).success;
          if (!valid) {
            expect(out.batchItemFailures, body).toEqual([{ itemIdentifier: event.Records[0]!.messageId }]);
            expect(writes.data(), body).toBe(0);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('Kinesis records to the memberships-consumer: never thrown, an undecodable record is a batch item failure that wrote nothing', async () => {
    const consumer = createMembershipsConsumerHandler(app.depsFor('memberships-consumer'));
    const valid = fc.record({
      event_id: fc.uuid(),
      type: fc.constantFrom(...MEMBERSHIP_EVENT_TYPES),
      user_id: fc.constant(`user-${randomUUID()}`),
      occurred_at: fc.constant(NOW),
      months: fc.integer({ min: 1, max: 12 }),
    });
    const before = await tableItemCounts(app);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          bodyText(valid).map((text) => ({ data: Buffer.from(text, 'utf8').toString('base64') })),
          fc.string({ maxLength: 60 }).map((data) => ({ data })),
        ),
        async ({ data }) => {
          writes.reset();
          const record = kinesisRecord('x', { partitionKey: 'fuzz' });
          record.kinesis.data = data;
          const out = await consumer(kinesisEvent([record]));
          let decoded: unknown;
          try {
            decoded = JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
          } catch {
            decoded = Symbol('invalid');
          }
          if (!membershipEventSchema.safeParse(decoded).success) {
            expect(out.batchItemFailures, data).toEqual([{ itemIdentifier: record.kinesis.sequenceNumber }]);
            expect(writes.data(), data).toBe(0);
          }
        },
      ),
      { numRuns: RUNS },
    );
    // Valid events here are for a user with no records (a NEW without a plan is invalid): nothing to write.
    expect(await tableItemCounts(app)).toMatchObject({ billingActivity: before.billingActivity, billingActivityHistory: before.billingActivityHistory });
  });
});
