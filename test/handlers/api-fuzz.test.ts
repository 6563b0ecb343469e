import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../src/handlers/api.js';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import { signPayload } from '../../src/handlers/shared/signature.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { httpEvent, type JwtAuth } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { PAYMENT_METHODS } from '../support/unions.js';
import { billingRecord, instantAt } from './api-fixtures.js';
import { DAY } from '../support/time.js';
import { ROUTES } from '../../src/manifest/index.js';

/**
 * No input makes the API answer 5xx (DESIGN 8): random and near-valid requests against the real
 * adapters on DynamoDB Local, on real records, must all be answered 2xx or 4xx with a JSON body.
 */

let app: TestApp;
let handler: (event: HttpEvent) => Promise<{ statusCode?: number; body?: string }>;
let realIds: string[] = [];
let realUsers: string[] = [];

beforeAll(async () => {
  app = await createTestApp({ label: 'api-fuzz' });
  handler = createApiHandler(app.depsFor('api')) as typeof handler;
  const records = await seedRecords(
    app,
    billingRecord(app),
    billingRecord(app, { billing_date: instantAt(app, 5 * DAY) }),
    billingRecord(app, { billing_status: 'FAILED', payment_attempts: 1, payment_method: 'ach' }),
    billingRecord(app, { billing_status: 'COMPLETED', payment_attempts: 1 }),
    billingRecord(app, { billing_status: 'PAUSED', paused_months: 2 }),
  );
  realIds = records.map((r) => r.subscription_id);
  realUsers = records.map((r) => r.user_id);
});

/** Every route the api function serves, from the route table: a new route is fuzzed without an edit here. */
const TEMPLATES = ROUTES.filter((route) => route.target === 'api').map((route) => [route.method, route.path] as const);

const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', 'a/b', 'a#b', '%', '%2F', '..', 'x'.repeat(129), 'x'.repeat(5000), 'null', 'constructor', '__proto__', '\u0000', '\ud800'),
);
/** Real ids (seeded before the arbitraries are drawn), plausible ids and junk. */
const idLike = fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((n) => realIds[n % realIds.length]!) },
  { weight: 1, arbitrary: fc.nat().map((n) => realUsers[n % realUsers.length]!) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/) },
  { weight: 1, arbitrary: weirdString },
);
const instantLike = fc.oneof(
  fc.date({ min: new Date('0001-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2026-02-30T00:00:00Z', '2026-12-20T00:00:00+25:00', '2026-12-20', '9999-12-31T23:59:59.999999999Z', '0000-01-01T00:00:00Z', '2027-01-01T00:00:00Z'),
  weirdString,
);
const centsLike = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -1, 1e21, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2), fc.string(), fc.constant(null));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const validBody = fc.oneof(
  fc.record({ amount_cents: fc.integer({ min: 1, max: 1_000_000 }), payment_method: fc.constantFrom('ach', 'pinless') }),
  fc.record({ reason: fc.constantFrom('goodwill', 'customer called') }),
  fc.record({
    event_id: fc.stringMatching(/^[A-Za-z0-9_-]{1,80}$/),
    user_id: fc.stringMatching(/^[a-z0-9-]{1,20}$/),
    institution_id: fc.constant('ins_1'),
    available_balance_cents: fc.integer(),
    current_balance_cents: fc.integer(),
    occurred_at: fc.constant('2026-12-01T11:00:00Z'),
  }),
);

const nearValidBody = fc.oneof(
  { weight: 2, arbitrary: validBody },
  fc.record({ reason: maybe(fc.oneof(weirdString, fc.integer())) }, { requiredKeys: [] }),
  fc.record({ billing_date: instantLike, reason: maybe(weirdString) }, { requiredKeys: [] }),
  fc.record(
    {
      amount_cents: centsLike,
      payment_method: fc.oneof(fc.constantFrom(...PAYMENT_METHODS), weirdString),
      account_last_four: maybe(fc.oneof(fc.stringMatching(/^\d{4}$/), weirdString)),
      intended_installment_id: maybe(idLike),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      event_id: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,80}$/), weirdString),
      user_id: idLike,
      institution_id: weirdString,
      available_balance_cents: centsLike,
      current_balance_cents: centsLike,
      calc_available_balance_cents: maybe(centsLike),
      occurred_at: instantLike,
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);
const bodyText = fc.oneof(
  nearValidBody.map((b) => JSON.stringify(b) ?? ''),
  weirdString,
  fc.constantFrom('{', '{"reason":', 'null', '[]', '1e999', '"str"', '{"__proto__":{"x":1}}'),
);

const queryArb = fc.dictionary(
  fc.constantFrom('limit', 'next', 'billing', 'state', 'status', 'junk'),
  fc.oneof(
    fc.constantFrom('1', '20', '100', '101', '0', '-1', 'failing', 'parked', 'retrying', 'ACHSENT', 'e30', 'bm90LWpzb24', '!!'),
    fc.base64String(),
    weirdString,
  ),
  { maxKeys: 4 },
);

const authArb = fc.oneof(
  fc.constant(null),
  { weight: 4, arbitrary: fc.constant({ sub: 'fuzzer', scopes: ['billing:read', 'billing:write', 'billing:operate'] }) },
  fc.record({
    sub: maybe(weirdString),
    scopes: maybe(fc.array(fc.oneof(fc.constantFrom('billing:read', 'billing:write', 'billing:operate'), weirdString), { maxLength: 4 })),
    scopeClaim: maybe(weirdString),
  }),
);

const requestArb = fc.record({
  template: fc.constantFrom(...TEMPLATES),
  method: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'get', 'BREW')),
  params: fc.record({ userId: idLike, subscriptionId: idLike, loanId: idLike, paymentId: idLike, runId: idLike }),
  defaultRoute: fc.boolean(),
  // Mostly the path the template gives; sometimes a broken one.
  rawPath: fc.oneof({ weight: 5, arbitrary: fc.constant(undefined) }, fc.oneof(weirdString.map((s) => `/v1/${s}`), fc.constantFrom('/', '', '/v1', '/v1/subscriptions/', '/webhooks/balance/', '//v1//subscriptions'))),
  query: maybe(queryArb),
  body: maybe(bodyText),
  base64: fc.nat(4).map((n) => n === 0),
  idempotencyKey: maybe(fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,12}$/), weirdString)),
  signature: fc.oneof(fc.constant('valid'), fc.constant('none'), weirdString, fc.integer({ min: -1000, max: 1000 }).map((skew) => `skew:${skew}`)),
  auth: authArb,
});

type FuzzRequest = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

function toEvent(r: FuzzRequest): HttpEvent {
  const templateMethod: string = r.template[0];
  const route: string = r.template[1];
  const method = r.method ?? templateMethod;
  const headers: Record<string, string> = {};
  if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
  const body = r.body as string | undefined;
  const t = Math.floor(app.wallClock.now().getTime() / 1000);
  if (r.signature === 'valid') headers['x-balance-signature'] = signPayload(body ?? '', TEST_SECRETS.balanceWebhook, t);
  else if (typeof r.signature === 'string' && r.signature.startsWith('skew:')) {
    headers['x-balance-signature'] = signPayload(body ?? '', TEST_SECRETS.balanceWebhook, t + Number(r.signature.slice(5)));
  } else if (r.signature !== 'none') headers['x-balance-signature'] = r.signature;
  return httpEvent(method, {
    route,
    pathParameters: r.params,
    ...(r.rawPath !== undefined ? { path: r.rawPath } : {}),
    ...(r.query !== undefined ? { query: r.query } : {}),
    ...(body !== undefined ? { body } : {}),
    base64: r.base64,
    headers,
    auth: r.auth as JwtAuth | null,
    defaultRoute: r.defaultRoute,
    timeEpoch: app.clock.now().getTime(),
  });
}

describe('api handler under random and near-valid requests', () => {
  it('never answers 5xx and always answers a JSON body', async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArb, async (request) => {
        const result = await handler(toEvent(request));
        const status = result.statusCode ?? 0;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status >= 500 || status < 200) throw new Error(`answered ${status}: ${result.body}`);
        expect(() => JSON.parse(result.body ?? '')).not.toThrow();
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 500) },
    );
    if (process.env.FUZZ_STATS) console.log([...statuses].sort());
    // The run reached the use cases, not only the validators.
    const reached = [...statuses].filter(([s]) => s < 300).reduce((n, [, c]) => n + c, 0);
    expect(reached).toBeGreaterThan(10);
  }, 240_000);

  it('answers 4xx, never 5xx, to structurally odd events', async () => {
    const odd: Partial<HttpEvent>[] = [
      { routeKey: '$default', requestContext: {} as HttpEvent['requestContext'] },
      { routeKey: 'GET /v1/subscriptions/{subscriptionId}', requestContext: { requestId: 'r' } as HttpEvent['requestContext'] },
      { routeKey: 'GET /v1/subscriptions/{subscriptionId}', pathParameters: {}, requestContext: { authorizer: { jwt: { claims: { sub: 'x' }, scopes: ['billing:read'] } } } as unknown as HttpEvent['requestContext'] },
      { routeKey: 'POST /webhooks/balance', requestContext: { http: { method: 'POST' } } as HttpEvent['requestContext'] },
      { routeKey: 'NOPE /x', rawPath: '/x', requestContext: { http: { method: 'NOPE' } } as HttpEvent['requestContext'] },
    ];
    for (const event of odd) {
      const result = await handler(event as HttpEvent);
      expect(result.statusCode).toBeGreaterThanOrEqual(400);
      expect(result.statusCode).toBeLessThan(500);
    }
  });
});
