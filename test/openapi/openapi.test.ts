import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { HOLD_CODES } from '../../src/domain/collectible.js';
import type { BillingRecord } from '../../src/domain/records.js';
import { ROUTES as STACK_ROUTES, routeScopes, type ManifestRoute } from '../../src/manifest/index.js';
import { formatInstant } from '../../src/domain/time.js';
import { createAchHandler } from '../../src/handlers/ach-handler.js';
import { createBalanceWebhookHandler } from '../../src/handlers/balance-webhook.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { API_ROUTES } from '../../src/handlers/api/routes.js';
import { routeKeyOf } from '../../src/handlers/api/router.js';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { documentedRouteKeys, openApiDocument, type JsonObject } from '../../src/openapi/document.js';
import { createTestApp, TEST_SECRETS, type TestApp } from '../support/app.js';
import { balanceWebhookEvent, httpEvent, responseOf, type HttpEventOptions } from '../support/http-events.js';
import { achDelivery, achEventBody, nowSeconds, paymentIntentObject, stripeDelivery, stripeEvent } from '../support/webhooks.js';
import { billingRecord, instantAt } from '../handlers/api-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { DAY } from '../support/time.js';
import { SimulatedProcessorReport } from '../../src/adapters/processor/simulator-report.js';
import { createReconciliationJobHandler } from '../../src/handlers/reconciliation-job.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';

/**
 * The OpenAPI document (DESIGN 8): valid OpenAPI 3.1, one operation per route of the route
 * tables, and true to the validators — every documented operation is called on the real handlers
 * over DynamoDB Local, its answers must match the documented response schemas, and inputs the
 * document refuses (unknown or missing body fields, out-of-range path and query values) must be
 * refused by the handler too.
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const doc = openApiDocument();
const paths = doc.paths as Record<string, Record<string, JsonObject>>;

function operationOf(routeKey: string): JsonObject {
  const [method, path] = routeKey.split(' ') as [string, string];
  const operation = paths[path]?.[method.toLowerCase()];
  if (!operation) throw new Error(`${routeKey} is not in the document`);
  return operation;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'openapi.json', components: doc.components } as object);
let compiled = 0;
function validatorOf(schema: JsonObject): ValidateFunction {
  const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')) as JsonObject;
  return ajv.compile({ $id: `schema-${compiled++}`, ...rebased });
}

function explain(validate: ValidateFunction): string {
  return ajv.errorsText(validate.errors, { separator: '\n' });
}

/** One valid request per documented operation, and how to rebuild it with another body. */
interface Case {
  readonly routeKey: string;
  readonly body?: JsonObject;
  readonly build: (body: JsonObject | undefined) => HttpEvent;
  readonly send: (event: HttpEvent) => Promise<ReturnType<typeof responseOf>>;
  readonly status: number;
  /** The error code a 409 case must answer (a documented one). */
  readonly code?: string;
  /** A listing case must return at least one item. */
  readonly nonEmpty?: boolean;
}

let app: TestApp;
let cases: Case[];
const seen: { routeKey: string; status: number; body: unknown }[] = [];

async function sendAndCheck(c: Case, event: HttpEvent) {
  const answer = await c.send(event);
  seen.push({ routeKey: c.routeKey, status: answer.status, body: answer.body });
  const responses = operationOf(c.routeKey).responses as Record<string, { content: { 'application/json': { schema: JsonObject } } }>;
  const documented = responses[String(answer.status)];
  expect(documented, `${c.routeKey} answered ${answer.status}, which the document does not list: ${JSON.stringify(answer.body)}`).toBeDefined();
  const validate = validatorOf(documented!.content['application/json'].schema);
  expect(validate(answer.body), `${c.routeKey} ${answer.status} answer drifts from the document:\n${explain(validate)}\n${JSON.stringify(answer.body)}`).toBe(true);
  return answer;
}

beforeAll(async () => {
  app = await createTestApp({ label: 'openapi' });
  const api = createApiHandler(app.depsFor('api'));
  const ach = createAchHandler(app.depsFor('ach-handler'));
  const balance = createBalanceWebhookHandler(app.depsFor('balance-webhook'));
  const stripe = createStripeWebhookHandler(app.depsFor('stripe-webhook'));
  const viaApi = async (event: HttpEvent) => responseOf(await api(event));
  const nowMs = app.clock.now().getTime();
  const jwt = (method: string, route: string, options: HttpEventOptions = {}) => (body: JsonObject | undefined) =>
    httpEvent(method, { route, timeEpoch: nowMs, ...options, ...(body !== undefined ? { body } : {}) });

  const [paid] = await seedRecords(app, billingRecord(app));
  const [read] = await seedRecords(app, billingRecord(app));
  const [waived] = await seedRecords(app, billingRecord(app));
  const [moved] = await seedRecords(app, billingRecord(app, { billing_date: instantAt(app, 5 * DAY) }));
  const due = instantAt(app, -DAY);
  const [parked] = await seedRecords(app, billingRecord(app, {
    billing_date: due,
    billing_failed_for: `${due}#0`,
    billing_failure_count: 8,
    billing_failed_at: instantAt(app, -3_600_000),
    billing_last_error: 'processor error',
  }));

  const exceptionAt = instantAt(app, -3_600_000);
  const shortPaid = { billing_status: 'ACHSENT' as const, payment_method: 'ach' as const, transaction_id: 'conf-short', payment_attempts: 1, ach_exception: { code: 'amount_mismatch' as const, received_cents: 1200, at: exceptionAt } };
  const [accepted] = await seedRecords(app, billingRecord(app, shortPaid));
  const [unrefunded] = await seedRecords(app, billingRecord(app, shortPaid));

  const sub = (id: string) => ({ subscriptionId: id });
  const loan = { userId: read.user_id, loanId: 'loan-1' };
  const balanceBody = {
    event_id: 'bal-evt-1',
    user_id: read.user_id,
    institution_id: 'ins_1',
    available_balance_cents: 5000,
    current_balance_cents: 5200,
    occurred_at: formatInstant(app.clock.now()),
  };

  // One period per hold of DESIGN 3.1 / 5b: manual pay and retry-billing answer 409 with its code, charging nothing.
  const failedAt = instantAt(app, -3 * DAY);
  const failed = { billing_status: 'FAILED' as const, payment_attempts: 1, first_attempt_date: failedAt, last_attempt_date: failedAt, billing_date: instantAt(app, -4 * DAY) };
  const holds: [string, Partial<BillingRecord>][] = [
    ['ach_authorization_required', { ...failed, payment_method: 'ach', ach_unauthorized: true, ach_blocked: true, ach_return_code: 'R10' }],
    ['ach_account_invalid', { ...failed, payment_method: 'ach', ach_blocked: true, ach_return_code: 'R02' }],
    ['ach_representment_limit', { ...failed, payment_method: 'ach', ach_blocked: true, ach_return_code: 'R01', ach_represented: 2, ach_original_entry_date: instantAt(app, -20 * DAY), payment_attempts: 3 }],
    ['card_disputed', { ...failed, payment_method: 'card', card_disputed: true }],
    ['payment_method_required', { ...failed, payment_method: 'card', decline_code: 'lost_card', decline_class: 'do_not_retry', dunning_first_declined_at: failedAt, dunning_attempts: 1, card_network: 'visa' }],
  ];
  const held = await Promise.all(holds.map(async ([code, overrides]) => [code, (await seedRecords(app, billingRecord(app, overrides)))[0]] as const));
  const holdCases: Case[] = held.flatMap(([code, record]) => [
    {
      routeKey: 'POST /v1/subscriptions/{subscriptionId}/pay',
      body: { reason: 'member asked' },
      build: jwt('POST', '/v1/subscriptions/{subscriptionId}/pay', { pathParameters: sub(record.subscription_id), headers: { 'Idempotency-Key': `openapi-hold-${code}` } }),
      send: viaApi,
      status: 409,
      code,
    },
    { routeKey: 'POST /v1/subscriptions/{subscriptionId}/retry-billing', body: { reason: 'operator retry' }, build: jwt('POST', '/v1/subscriptions/{subscriptionId}/retry-billing', { pathParameters: sub(record.subscription_id) }), send: viaApi, status: 409, code },
  ]);

  // A period whose failed attempt presented its key (the processor may hold the payment): a waive answers 409 attempt_outcome_unknown.
  const presentedBillingDate = instantAt(app, -2 * DAY);
  const [presented] = await seedRecords(app, billingRecord(app, { billing_date: presentedBillingDate, payment_method: 'pinless', billing_failed_for: `${presentedBillingDate}#0`, billing_failure_count: 1, billing_failed_at: failedAt, billing_last_error: 'The payment processor is unavailable.', billing_presented_for: `${presentedBillingDate}#0` }));
  holdCases.push({ routeKey: 'POST /v1/subscriptions/{subscriptionId}/waive', body: { reason: 'operator waive' }, build: jwt('POST', '/v1/subscriptions/{subscriptionId}/waive', { pathParameters: sub(presented.subscription_id) }), send: viaApi, status: 409, code: 'attempt_outcome_unknown' });

  // An ACH exception (DESIGN 4.1) for ?billing=exceptions; the do_not_retry period above is in ?billing=dunning&state=exhausted.
  await seedRecords(app, billingRecord(app, { billing_status: 'ACHSENT', payment_method: 'ach', transaction_id: 'conf-exception', payment_attempts: 1, last_attempt_date: failedAt, ach_exception: { code: 'amount_mismatch', received_cents: 1, at: failedAt } }));

  // Two loans whose last ACH payment from account 6789 came back R10 and R02: a new ACH payment from it is refused.
  const loanHolds: Case[] = [];
  for (const [returnCode, code] of [['R10', 'ach_authorization_required'], ['R02', 'ach_account_invalid']] as const) {
    const heldLoan = { userId: read.user_id, loanId: `loan-held-${returnCode}` };
    await app.deps.payments.create(
      {
        loc_user_id: heldLoan.userId,
        loc_loan_id: heldLoan.loanId,
        loc_payment_id: `pay-returned-${returnCode}`,
        loc_amount: 2500,
        loc_status: 'RETURNED',
        loc_payment_method: 'ach',
        loc_process: 'MANUAL',
        loc_account_last_four: '6789',
        loc_confirmation_id: `conf-loan-${returnCode}`,
        loc_payment_attempts: 1,
        loc_return_code: returnCode,
        loc_update_reason: `ach_returned:${returnCode}`,
        loc_created_date: failedAt,
        loc_last_updated: failedAt,
        version: 2,
      },
      { actor: 'test:seed' },
    );
    loanHolds.push({
      routeKey: 'POST /v1/users/{userId}/loans/{loanId}/payments',
      body: { amount_cents: 2500, payment_method: 'ach', account_last_four: '6789' },
      build: jwt('POST', '/v1/users/{userId}/loans/{loanId}/payments', { pathParameters: heldLoan, headers: { 'Idempotency-Key': `openapi-loan-hold-${returnCode}` } }),
      send: viaApi,
      status: 409,
      code,
    });
  }

  // A reconciliation run with one exception (a debit the processor dropped), for the reconciliation routes.
  const [reconciled] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless' }));
  await runCollectionAttempt(app.depsFor('batch-worker'), { key: reconciled, process: 'SCHEDULED', owner: 'openapi-recon' });
  const reconDate = formatInstant(app.clock.now()).slice(0, 10);
  const report = new SimulatedProcessorReport(app.simulator);
  report.inject({ kind: 'drop', date: reconDate, user_id: reconciled.user_id });
  const quiet = { completed: async () => undefined, exception: async () => undefined };
  await createReconciliationJobHandler(app.depsFor('reconciliation-job', { processorReports: { card: report, ach: report, pinless: report }, reconciliationEvents: quiet }))({ date: reconDate, rails: ['pinless'] });
  const reconException = (await app.deps.reconciliation.getRun(reconDate, 'pinless'))!.exceptions[0]!.exception_id;
  const reconCases: Case[] = [
    { routeKey: 'GET /v1/reconciliation/runs', build: jwt('GET', '/v1/reconciliation/runs', { query: { date: reconDate } }), send: viaApi, status: 200, nonEmpty: true },
    { routeKey: 'GET /v1/reconciliation/runs/{date}/{rail}', build: jwt('GET', '/v1/reconciliation/runs/{date}/{rail}', { pathParameters: { date: reconDate, rail: 'pinless' } }), send: viaApi, status: 200 },
    {
      routeKey: 'POST /v1/reconciliation/exceptions/{id}/resolve',
      body: { resolution: 'written_off', reason: 'the processor confirmed the loss' },
      build: jwt('POST', '/v1/reconciliation/exceptions/{id}/resolve', { pathParameters: { id: reconException } }),
      send: viaApi,
      status: 200,
    },
  ];

  cases = [
    ...reconCases,
    { routeKey: 'GET /v1/users/{userId}/subscriptions', build: jwt('GET', '/v1/users/{userId}/subscriptions', { pathParameters: { userId: read.user_id }, query: { limit: '5' } }), send: viaApi, status: 200 },
    { routeKey: 'GET /v1/subscriptions', build: jwt('GET', '/v1/subscriptions', { query: { billing: 'failing', state: 'parked' } }), send: viaApi, status: 200, nonEmpty: true },
    { routeKey: 'GET /v1/subscriptions', build: jwt('GET', '/v1/subscriptions', { query: { billing: 'exceptions', limit: '10' } }), send: viaApi, status: 200, nonEmpty: true },
    { routeKey: 'GET /v1/subscriptions', build: jwt('GET', '/v1/subscriptions', { query: { billing: 'dunning', state: 'exhausted' } }), send: viaApi, status: 200, nonEmpty: true },
    ...holdCases,
    ...loanHolds,
    { routeKey: 'GET /v1/subscriptions/{subscriptionId}', build: jwt('GET', '/v1/subscriptions/{subscriptionId}', { pathParameters: sub(parked.subscription_id) }), send: viaApi, status: 200 },
    { routeKey: 'POST /v1/subscriptions/{subscriptionId}/pay', body: { reason: 'member asked' }, build: jwt('POST', '/v1/subscriptions/{subscriptionId}/pay', { pathParameters: sub(paid.subscription_id), headers: { 'Idempotency-Key': 'openapi-pay-1' } }), send: viaApi, status: 200 },
    {
      routeKey: 'POST /v1/billing/retry-runs',
      body: { state: 'parked', reason: 'processor outage over', dry_run: true },
      build: jwt('POST', '/v1/billing/retry-runs', { headers: { 'Idempotency-Key': 'openapi-run-1' } }),
      send: viaApi,
      status: 202,
    },
    { routeKey: 'GET /v1/billing/retry-runs', build: jwt('GET', '/v1/billing/retry-runs', { query: { limit: '5' } }), send: viaApi, status: 200, nonEmpty: true },
    {
      routeKey: 'GET /v1/billing/retry-runs/{runId}',
      build: (body) => {
        const created = seen.find((s) => s.routeKey === 'POST /v1/billing/retry-runs' && s.status === 202)?.body as { run_id: string } | undefined;
        return jwt('GET', '/v1/billing/retry-runs/{runId}', { pathParameters: { runId: created?.run_id ?? 'missing' }, query: { limit: '10' } })(body);
      },
      send: viaApi,
      status: 200,
    },
    { routeKey: 'GET /v1/users/{userId}/instruments', build: jwt('GET', '/v1/users/{userId}/instruments', { pathParameters: { userId: read.user_id } }), send: viaApi, status: 200 },
    {
      routeKey: 'POST /v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release',
      body: { reason: 'the member says the account is fine' },
      build: jwt('POST', '/v1/users/{userId}/instruments/{instrumentId}/holds/{code}/release', { pathParameters: { userId: read.user_id, instrumentId: 'ach:acct_1:auth_1', code: 'ach_account_invalid' } }),
      send: viaApi,
      status: 409,
      code: 'hold_not_releasable',
    },
    { routeKey: 'POST /v1/subscriptions/{subscriptionId}/retry-billing', body: { reason: 'processor fixed' }, build: jwt('POST', '/v1/subscriptions/{subscriptionId}/retry-billing', { pathParameters: sub(parked.subscription_id) }), send: viaApi, status: 200 },
    { routeKey: 'GET /v1/subscriptions/{subscriptionId}/history', build: jwt('GET', '/v1/subscriptions/{subscriptionId}/history', { pathParameters: sub(parked.subscription_id) }), send: viaApi, status: 200 },
    { routeKey: 'POST /v1/subscriptions/{subscriptionId}/waive', body: { reason: 'goodwill' }, build: jwt('POST', '/v1/subscriptions/{subscriptionId}/waive', { pathParameters: sub(waived.subscription_id) }), send: viaApi, status: 200 },
    {
      routeKey: 'POST /v1/subscriptions/{subscriptionId}/exception/resolve',
      body: { resolution: 'accept', reason: 'member agreed' },
      build: jwt('POST', '/v1/subscriptions/{subscriptionId}/exception/resolve', { pathParameters: sub(accepted.subscription_id) }),
      send: viaApi,
      status: 200,
    },
    {
      routeKey: 'POST /v1/subscriptions/{subscriptionId}/exception/resolve',
      body: { resolution: 'refunded_retry', reason: 'refunded', refund_id: 're_unknown' },
      build: jwt('POST', '/v1/subscriptions/{subscriptionId}/exception/resolve', { pathParameters: sub(unrefunded.subscription_id) }),
      send: viaApi,
      status: 409,
      code: 'refund_not_found',
    },
    {
      routeKey: 'PUT /v1/subscriptions/{subscriptionId}/billing-date',
      body: { billing_date: instantAt(app, 7 * DAY), reason: 'member asked for payday' },
      build: jwt('PUT', '/v1/subscriptions/{subscriptionId}/billing-date', { pathParameters: sub(moved.subscription_id) }),
      send: viaApi,
      status: 200,
    },
    { routeKey: 'POST /v1/users/{userId}/loans/{loanId}/payments', body: { amount_cents: 2500, payment_method: 'pinless' }, build: jwt('POST', '/v1/users/{userId}/loans/{loanId}/payments', { pathParameters: loan, headers: { 'Idempotency-Key': 'openapi-loan-1' } }), send: viaApi, status: 201 },
    { routeKey: 'GET /v1/users/{userId}/loans/{loanId}/payments', build: jwt('GET', '/v1/users/{userId}/loans/{loanId}/payments', { pathParameters: loan, query: { limit: '10' } }), send: viaApi, status: 200 },
    {
      routeKey: 'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}',
      build: (body) => {
        const created = seen.find((s) => s.routeKey === 'POST /v1/users/{userId}/loans/{loanId}/payments' && s.status === 201)?.body as { loc_payment_id: string } | undefined;
        return jwt('GET', '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}', { pathParameters: { ...loan, paymentId: created?.loc_payment_id ?? 'missing' } })(body);
      },
      send: viaApi,
      status: 200,
    },
    {
      routeKey: 'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history',
      build: (body) => {
        const created = seen.find((s) => s.routeKey === 'POST /v1/users/{userId}/loans/{loanId}/payments' && s.status === 201)?.body as { loc_payment_id: string } | undefined;
        return jwt('GET', '/v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history', { pathParameters: { ...loan, paymentId: created?.loc_payment_id ?? 'missing' }, query: { limit: '10' } })(body);
      },
      send: viaApi,
      status: 200,
    },
    { routeKey: 'POST /webhooks/balance', body: balanceBody, build: (body) => balanceWebhookEvent(body, TEST_SECRETS.balanceWebhook, nowSeconds(app.wallClock.now().getTime())), send: async (event) => responseOf(await balance(event)), status: 202 },
    {
      routeKey: 'POST /webhooks/ach',
      body: achEventBody(read, 'settled', 'conf-unknown', formatInstant(app.clock.now())),
      build: (body) => achDelivery(body, { signedAtMs: app.wallClock.now().getTime() }),
      send: async (event) => responseOf(await ach(event)),
      // The record is still PENDING: an outcome for a submission not recorded yet is 409 not_yet_recorded (DESIGN 4.1).
      status: 409,
      code: 'not_yet_recorded',
    },
    {
      routeKey: 'POST /webhooks/stripe',
      body: stripeEvent('payment_intent.succeeded', paymentIntentObject(read, 'pi_openapi_1'), nowMs),
      build: (body) => stripeDelivery(body, { signedAtMs: app.wallClock.now().getTime() }),
      send: async (event) => responseOf(await stripe(event)),
      status: 200,
    },
  ];
});

describe('GET /openapi.json document', () => {
  it('is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as Parameters<Validator["validate"]>[0]);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('documents every route of the api route table and of the stack, with its scope, and nothing else', () => {
    const tableKeys = API_ROUTES.map(routeKeyOf);
    const stackKeys = STACK_ROUTES.map((r: ManifestRoute) => `${r.method} ${r.path}`);
    expect(new Set(documentedRouteKeys())).toEqual(new Set([...tableKeys, ...stackKeys]));
    for (const route of STACK_ROUTES as readonly ManifestRoute[]) {
      const operation = operationOf(`${route.method} ${route.path}`);
      if (route.scope) expect(operation.security).toEqual(routeScopes(route).map((scope) => ({ bearerJwt: [scope] })));
      else expect(Object.keys((operation.security as JsonObject[])[0]!)[0]).toMatch(/Signature$/);
      const documentedParams = ((operation.parameters ?? []) as JsonObject[]).filter((p) => p.in === 'path').map((p) => p.name);
      expect(documentedParams.sort(), route.path).toEqual([...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort());
    }
  });

  it('declares the bearer JWT and the three webhook signature headers as security schemes', () => {
    const schemes = (doc.components as JsonObject).securitySchemes as Record<string, JsonObject>;
    expect(schemes.bearerJwt).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(schemes.stripeSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'Stripe-Signature' });
    expect(schemes.achSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-ACH-Signature' });
    expect(schemes.balanceSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Balance-Signature' });
  });

  it('has a drift check for every documented operation', () => {
    expect(new Set(cases.map((c) => c.routeKey))).toEqual(new Set(documentedRouteKeys()));
  });

  it('valid requests pass the documented request schema and the handler, and every answer matches its documented response schema', async () => {
    for (const c of cases) {
      const body = (operationOf(c.routeKey).requestBody as { content: { 'application/json': { schema: JsonObject } } } | undefined)?.content['application/json'].schema;
      if (c.body !== undefined) {
        expect(body, `${c.routeKey} takes a body the document does not describe`).toBeDefined();
        const validate = validatorOf(body!);
        expect(validate(c.body), `${c.routeKey}: the document refuses a body the handler accepts:\n${explain(validate)}`).toBe(true);
      }
      const answer = await sendAndCheck(c, c.build(c.body));
      expect(answer.status, `${c.routeKey}: ${JSON.stringify(answer.body)}`).toBe(c.status);
      if (c.code !== undefined) expect(answer.body?.error?.code, `${c.routeKey}: ${JSON.stringify(answer.body)}`).toBe(c.code);
      if (c.nonEmpty) expect((answer.body as { items: unknown[] }).items.length, `${c.routeKey}: ${JSON.stringify(answer.body)}`).toBeGreaterThan(0);
    }
    const history = seen.find((s) => s.routeKey === 'GET /v1/subscriptions/{subscriptionId}/history')!.body as { items: JsonObject[] };
    // The retry wrote an audit row with who and why; its shape is part of the documented answer.
    expect(history.items.some((row) => row.actor === 'operator-1' && row.reason === 'processor fixed')).toBe(true);
    const lists = seen.filter((s) => s.routeKey === 'GET /v1/subscriptions').map((s) => s.body as { items: JsonObject[] });
    expect(lists.some((l) => l.items.some((i) => (i.ach_exception as JsonObject | undefined)?.code === 'amount_mismatch'))).toBe(true);
    expect(lists.some((l) => l.items.some((i) => (i.dunning as JsonObject | undefined)?.state === 'exhausted' && i.decline_class === 'do_not_retry'))).toBe(true);
  }, 120_000);

  it('documents every 409 code DESIGN names (3.1 holds, 5b payment_method_required, 4.1 not_yet_recorded) in the answer schema, and the drift cases answer each', () => {
    const conflictCodes = (routeKey: string): string[] => {
      const schema = (operationOf(routeKey).responses as Record<string, { content: { 'application/json': { schema: { $ref: string } } } }>)['409']!.content['application/json'].schema;
      const name = schema.$ref.split('/').at(-1)!;
      const component = ((doc.components as JsonObject).schemas as Record<string, { properties: { error: { properties: { code: { enum: string[] } } } } }>)[name]!;
      return component.properties.error.properties.code.enum;
    };
    const answered = (routeKey: string) => new Set(seen.filter((s) => s.routeKey === routeKey && s.status === 409).map((s) => (s.body as { error: { code: string } }).error.code));
    const holds = HOLD_CODES;
    for (const routeKey of ['POST /v1/subscriptions/{subscriptionId}/pay', 'POST /v1/subscriptions/{subscriptionId}/retry-billing']) {
      expect(conflictCodes(routeKey)).toEqual(expect.arrayContaining(['locked', ...holds]));
      expect([...answered(routeKey)].sort()).toEqual([...holds].sort());
    }
    expect(conflictCodes('POST /v1/users/{userId}/loans/{loanId}/payments')).toEqual(expect.arrayContaining(['ach_authorization_required', 'ach_account_invalid']));
    expect([...answered('POST /v1/users/{userId}/loans/{loanId}/payments')].sort()).toEqual(['ach_account_invalid', 'ach_authorization_required']);
    expect(conflictCodes('POST /v1/subscriptions/{subscriptionId}/waive')).toEqual(expect.arrayContaining(['locked', 'attempt_outcome_unknown']));
    expect(answered('POST /v1/subscriptions/{subscriptionId}/waive')).toContain('attempt_outcome_unknown');
    expect(conflictCodes('POST /v1/subscriptions/{subscriptionId}/exception/resolve')).toEqual(expect.arrayContaining(['refund_not_found', 'no_exception', 'illegal_transition']));
    expect(answered('POST /v1/subscriptions/{subscriptionId}/exception/resolve')).toContain('refund_not_found');
    expect(conflictCodes('POST /webhooks/ach')).toContain('not_yet_recorded');
    expect(answered('POST /webhooks/ach')).toEqual(new Set(['not_yet_recorded']));
    const billing = (operationOf('GET /v1/subscriptions').parameters as { name: string; schema: { enum?: string[] } }[]).find((p) => p.name === 'billing')!;
    expect(billing.schema.enum).toEqual(['failing', 'dunning', 'exceptions']);
  });

  it('bodies the document refuses (an unknown field, a missing required field) are refused by the handler with a documented 400', async () => {
    for (const c of cases) {
      if (c.body === undefined) continue;
      const schema = (operationOf(c.routeKey).requestBody as { content: { 'application/json': { schema: JsonObject } } }).content['application/json'].schema;
      const validate = validatorOf(schema);
      const variants: { what: string; body: JsonObject }[] = [];
      if (schema.additionalProperties === false) variants.push({ what: 'an unknown field', body: { ...c.body, not_a_field: 1 } });
      for (const name of (schema.required ?? []) as string[]) {
        const { [name]: _dropped, ...rest } = c.body;
        variants.push({ what: `no ${name}`, body: rest });
      }
      for (const variant of variants) {
        if (c.routeKey === 'POST /webhooks/stripe') continue; // Stripe's envelope is open: data objects are validated per type.
        expect(validate(variant.body), `${c.routeKey} with ${variant.what}: the document should refuse it`).toBe(false);
        const answer = await sendAndCheck(c, c.build(variant.body));
        expect(answer.status, `${c.routeKey} with ${variant.what}: ${JSON.stringify(answer.body)}`).toBe(400);
      }
    }
  });

  it('a body without a field the document calls optional is not refused as invalid by the handler', async () => {
    for (const c of cases) {
      if (c.body === undefined) continue;
      const schema = (operationOf(c.routeKey).requestBody as { content: { 'application/json': { schema: JsonObject } } }).content['application/json'].schema;
      const required = new Set((schema.required ?? []) as string[]);
      for (const name of Object.keys((schema.properties ?? {}) as JsonObject)) {
        if (required.has(name) || !(name in c.body)) continue;
        const { [name]: _dropped, ...rest } = c.body;
        const answer = await sendAndCheck(c, c.build(rest));
        // It may now conflict (a period already waived, say), but the body itself is fine.
        expect(answer.body?.error?.code, `${c.routeKey} without ${name}: ${JSON.stringify(answer.body)}`).not.toBe('invalid_body');
      }
    }
  });

  it('path and query values outside the documented schema are refused with a documented 400', async () => {
    for (const c of cases) {
      const event = c.build(c.body);
      for (const parameter of (operationOf(c.routeKey).parameters ?? []) as { name: string; in: string; schema: JsonObject }[]) {
        if (parameter.in === 'header') continue;
        const validate = validatorOf(parameter.schema);
        const bad = [typeof parameter.schema.maxLength === 'number' ? 'x'.repeat(parameter.schema.maxLength + 1) : undefined, 'no spaces! ', '-1'].find((v) => v !== undefined && !validate(v));
        expect(bad, `${c.routeKey} ${parameter.name}: no value the document refuses`).toBeDefined();
        const mutated = structuredClone(event);
        if (parameter.in === 'path') mutated.pathParameters = { ...mutated.pathParameters, [parameter.name]: bad! };
        else mutated.queryStringParameters = { ...mutated.queryStringParameters, [parameter.name]: bad! };
        const answer = await sendAndCheck(c, mutated);
        expect(answer.status, `${c.routeKey} ${parameter.in} ${parameter.name}=${bad}: ${JSON.stringify(answer.body)}`).toBe(400);
      }
    }
  });
});
