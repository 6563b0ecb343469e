import * as z from '../domain/zod.js';
import { achEventSchema } from '../domain/ach-outcomes.js';
import { instantSchema } from '../domain/time.js';
import { stripeEventEnvelopeSchema } from '../adapters/stripe/events.js';
import { balanceEventSchema } from '../domain/balance-events.js';
import * as loans from '../handlers/api/loans.js';
import { idempotencyKeySchema, pageQuerySchema } from '../handlers/api/request.js';
import { API_ROUTES } from '../handlers/api/routes.js';
import { routeKeyOf, type Scope } from '../handlers/api/router.js';
import { MEMBER_SCOPE, routeScopes } from '../manifest/index.js';
import * as actions from '../handlers/api/subscription-actions.js';
import * as retryRuns from '../handlers/api/retry-runs.js';
import * as subscriptions from '../handlers/api/subscriptions.js';
import { retryRunRequestSchema } from '../domain/retry-runs.js';
import { RESPONSE_COMPONENTS, type ResponseComponent } from './responses.js';
import { INTERNAL, UNAVAILABLE, PAYMENT_CONFLICT, readErrors, actionErrors } from './common-responses.js';
import { OPERATOR_OPERATIONS } from './operator-operations.js';
import { INSTRUMENT_OPERATIONS } from './instrument-operations.js';
import { RECONCILIATION_OPERATIONS } from './reconciliation-operations.js';
import { publishedEventWebhooks } from './events.js';

/**
 * The OpenAPI 3.1 document of the HTTP API (DESIGN 8), generated from the zod schemas the
 * handlers validate with (request side) and from the domain's record schemas (answers). Served by
 * the local runtime at GET /openapi.json; never imported by a Lambda handler, so nothing of it
 * is bundled.
 */

export type JsonObject = Record<string, unknown>;

type SecurityKind = 'jwt' | 'stripe' | 'ach' | 'balance';

interface HeaderParameter {
  readonly name: string;
  readonly required: boolean;
  readonly description: string;
  readonly schema: z.ZodMiniType;
}

/** What one route documents beside what the route table already says (method, path, scope). */
export interface OperationSpec {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: 'subscriptions' | 'operator' | 'loans' | 'webhooks';
  readonly path?: z.ZodMiniObject;
  readonly query?: z.ZodMiniObject;
  readonly headers?: readonly HeaderParameter[];
  /** The body schema the handler parses; `required: false` when an empty body is accepted. */
  readonly body?: { readonly schema: z.ZodMiniType; readonly required: boolean; readonly description?: string };
  /** Status → component name (or a union of them) and what it means. */
  readonly responses: Readonly<Record<string, { readonly description: string; readonly schema: ResponseComponent | readonly ResponseComponent[] }>>;
  /** Only for routes outside the api Lambda's table (the Stripe and ACH webhooks). */
  readonly method?: 'GET' | 'POST' | 'PUT';
  readonly security?: SecurityKind;
}

const idempotencyHeader: HeaderParameter = {
  name: 'Idempotency-Key',
  required: true,
  description: 'Visible ASCII, 1-255 characters. A repeat with the same key answers what the first request did; nothing is charged twice.',
  schema: idempotencyKeySchema,
};

const signatureHeader = (name: string, secret: string): HeaderParameter => ({
  name,
  required: true,
  description: `\`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">\` with ${secret}; 5-minute tolerance, checked before the body is read.`,
  schema: z.string().check(z.minLength(1)),
});

/** Every route of the HTTP API, by route key (`METHOD /path`, as API Gateway names it). */
export const OPERATIONS: Readonly<Record<string, OperationSpec>> = {
  ...INSTRUMENT_OPERATIONS,
  ...RECONCILIATION_OPERATIONS,
  'GET /v1/users/{userId}/subscriptions': {
    operationId: 'listUserSubscriptions',
    summary: "A user's billing periods, newest first",
    tag: 'subscriptions',
    path: subscriptions.userParams,
    query: pageQuerySchema,
    responses: { '200': { description: 'One page of periods', schema: 'SubscriptionPage' }, ...readErrors },
  },
  'GET /v1/subscriptions': {
    operationId: 'listFailingSubscriptions',
    summary: 'Periods with a live billing failure (`billing=failing`, retrying or parked), in dunning (`billing=dunning`, retrying or exhausted) or with an exception (`billing=exceptions`)',
    description:
      'A page can hold fewer than `limit` items and still have `next` set: keep paging until `next` is null. ' +
      '`billing=exceptions` lists periods whose ACH or Stripe outcome did not match (`ach_exception`: a settlement for another amount; ' +
      '`card_exception`: a success for another amount or currency, or a dispute inquiry), oldest first; `state` is refused there. ' +
      '`billing=dunning` lists declined periods (each with `dunning`), retrying ones soonest next attempt first, then exhausted ones.',
    tag: 'operator',
    query: subscriptions.subscriptionsQuerySchema,
    responses: { '200': { description: 'One page of failing, dunning or exception periods', schema: 'SubscriptionPage' }, ...readErrors },
  },
  'GET /v1/subscriptions/{subscriptionId}': {
    operationId: 'getSubscription',
    summary: 'One billing period by subscription id',
    tag: 'subscriptions',
    path: subscriptions.subscriptionParams,
    responses: { '200': { description: 'The period', schema: 'Subscription' }, ...readErrors },
  },
  'GET /v1/subscriptions/{subscriptionId}/history': {
    operationId: 'getSubscriptionHistory',
    summary: "A period's audit history: who did what, why, and the decision context",
    tag: 'subscriptions',
    path: subscriptions.subscriptionParams,
    query: pageQuerySchema,
    responses: { '200': { description: 'One page of audit rows', schema: 'HistoryPage' }, ...readErrors },
  },
  'POST /v1/subscriptions/{subscriptionId}/pay': {
    operationId: 'paySubscription',
    summary: 'Manual pay of a due period (user or support)',
    tag: 'subscriptions',
    path: actions.subscriptionParams,
    headers: [idempotencyHeader],
    body: { schema: actions.optionalReasonBody, required: false },
    responses: {
      '200': { description: 'What the attempt did', schema: 'PayResult' },
      ...actionErrors,
      '409': PAYMENT_CONFLICT,
      '502': { description: 'The processor could not take the payment; retry with the same Idempotency-Key', schema: 'Error' },
    },
  },
  'POST /v1/subscriptions/{subscriptionId}/retry-billing': {
    operationId: 'retryBilling',
    summary: 'Operator retry: clears the billing failure and attempts the period now',
    tag: 'operator',
    path: actions.subscriptionParams,
    body: { schema: actions.optionalReasonBody, required: false, description: 'The reason goes on the audit row with the caller as actor' },
    description: 'A hold (DESIGN 3.1) is checked before the clear: it answers 409 with its code and changes nothing.',
    responses: { '200': { description: 'billed, failed (with the new failure), still_due, or not_billed (nothing charged and nothing owed now: the member is inactive, the period cancelled or not yet due)', schema: 'RetryBillingResult' }, ...actionErrors, '409': PAYMENT_CONFLICT },
  },
  'POST /v1/subscriptions/{subscriptionId}/waive': {
    operationId: 'waive',
    summary: 'Operator waive of a due period (reason required)',
    tag: 'operator',
    path: actions.subscriptionParams,
    body: { schema: actions.waiveBody, required: true },
    description:
      'A period whose current idempotency key the processor may hold (an attempt reached the processor and its outcome is not recorded) ' +
      'answers 409 attempt_outcome_unknown and changes nothing: retry-billing resolves it with the same key, then the waive can follow.',
    responses: {
      '200': { description: 'The waived period', schema: 'SubscriptionResult' },
      ...actionErrors,
      '409': { description: 'locked, illegal_transition, or attempt_outcome_unknown: nothing changed', schema: 'WaiveConflict' },
    },
  },
  'PUT /v1/subscriptions/{subscriptionId}/billing-date': {
    operationId: 'changeBillingDate',
    summary: "Operator change of a period's due date",
    description: 'Delete-then-put in one transaction; 409 unbilled_period when the period is already due and unbilled.',
    tag: 'operator',
    path: actions.subscriptionParams,
    body: { schema: actions.billingDateBody, required: true },
    responses: { '200': { description: 'The moved period', schema: 'SubscriptionResult' }, ...actionErrors },
  },
  'POST /v1/billing/retry-runs': {
    operationId: 'createRetryRun',
    summary: 'Bulk retry: retry-billing for every parked (or exhausted) period selected, asynchronously',
    description:
      'Selects the periods from the failing index (parked) or the dunning index (exhausted), or from the named users\' periods, stores the run ' +
      'and sends one queue message per period; each then runs retry-billing (lock, clear, attempt, audit row with actor, reason and run_id). ' +
      'A held period (DESIGN 3.1) is skipped with its hold code. `dry_run` selects and stores, charges nothing. ' +
      'The same Idempotency-Key with the same body answers the same run (nothing new is selected or charged); with another body 422 idempotency_key_reused; ' +
      'while the first request is still creating the run, 409 request_in_progress.',
    tag: 'operator',
    headers: [idempotencyHeader],
    body: { schema: retryRunRequestSchema, required: true, description: 'The reason goes on every audit row of the run' },
    responses: {
      '202': { description: 'The run, accepted (or replayed): its selected periods', schema: 'RetryRunCreated' },
      ...readErrors,
      '409': { description: 'request_in_progress: the first request with this key is still creating the run', schema: 'Error' },
      '422': { description: 'idempotency_key_reused: this key created a run for a different request', schema: 'Error' },
    },
  },
  'GET /v1/billing/retry-runs/{runId}': {
    operationId: 'getRetryRun',
    summary: 'A bulk retry run: status, counts and per-item outcomes (paged)',
    tag: 'operator',
    path: retryRuns.retryRunParams,
    query: retryRuns.retryRunQuerySchema,
    responses: { '200': { description: 'The run and one page of its items', schema: 'RetryRun' }, ...readErrors },
  },
  'GET /v1/users/{userId}/loans/{loanId}/payments': {
    operationId: 'listLoanPayments',
    summary: "A loan's payments, newest first",
    tag: 'loans',
    path: loans.loanParams,
    query: loans.listQuery,
    responses: { '200': { description: 'One page of payments', schema: 'LoanPaymentPage' }, ...readErrors },
  },
  'POST /v1/users/{userId}/loans/{loanId}/payments': {
    operationId: 'createLoanPayment',
    summary: 'A loan payment, keyed by Idempotency-Key',
    tag: 'loans',
    path: loans.loanParams,
    headers: [idempotencyHeader],
    body: { schema: loans.newPaymentBody, required: true },
    responses: {
      '201': { description: 'Created', schema: 'LoanPayment' },
      '200': { description: 'A repeat of the same Idempotency-Key: the payment it created', schema: 'LoanPayment' },
      ...actionErrors,
      '409': { description: 'An ACH hold of the account (ach_authorization_required, ach_account_invalid) a reused Idempotency-Key, or daily_debit_limit (past the member\'s daily cap on debits people start): nothing written or charged', schema: 'LoanPaymentConflict' },
    },
  },
  'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}': {
    operationId: 'getLoanPayment',
    summary: 'One loan payment',
    tag: 'loans',
    path: loans.paymentParams,
    responses: { '200': { description: 'The payment', schema: 'LoanPayment' }, ...readErrors },
  },
  'GET /v1/users/{userId}/loans/{loanId}/payments/{paymentId}/history': {
    operationId: 'getLoanPaymentHistory',
    summary: "A loan payment's audit rows, newest first",
    tag: 'loans',
    path: loans.paymentParams,
    query: loans.historyQuery,
    responses: { '200': { description: 'One page of audit rows', schema: 'LoanPaymentHistoryPage' }, ...readErrors },
  },
  'POST /webhooks/balance': {
    operationId: 'balanceWebhook',
    summary: 'Balance update from the bank-data provider (the balance-webhook Lambda; enqueued for the webhook-balance-worker)',
    description: 'Each event is claimed by its event_id: a replayed id answers 200 duplicate and enqueues nothing.',
    tag: 'webhooks',
    method: 'POST',
    security: 'balance',
    headers: [signatureHeader('X-Balance-Signature', 'BALANCE_WEBHOOK_SECRET')],
    body: { schema: balanceEventSchema, required: true },
    responses: {
      '200': { description: 'A replay of an event id already enqueued: nothing enqueued again', schema: 'Duplicate' },
      '202': { description: 'Verified, claimed and enqueued', schema: 'Accepted' },
      '400': { description: 'Bad signature or body', schema: 'Error' },
      '409': { description: 'event_in_progress: another delivery of this event id holds its claim; deliver it again later', schema: 'Error' },
      '500': INTERNAL,
      '503': UNAVAILABLE,
    },
  },
  'POST /webhooks/ach': {
    operationId: 'achWebhook',
    summary: 'ACH settlement, return, refund and chargeback outcomes (the ach-handler Lambda)',
    description: 'Each event is claimed by its event_id (a replayed id answers 200 duplicate without effect). Answers 200 for everything the sender must not repeat (applied, replays, unknown references), 409 for what it must deliver again.',
    tag: 'webhooks',
    method: 'POST',
    security: 'ach',
    headers: [signatureHeader('X-ACH-Signature', 'ACH_WEBHOOK_SECRET')],
    body: { schema: achEventSchema, required: true },
    responses: {
      '200': { description: 'Applied, ignored, or a duplicate of an event id already processed', schema: 'AchResult' },
      '400': { description: 'Bad signature or body', schema: 'Error' },
      '409': { description: '`not_yet_recorded` (DESIGN 4.1: the submission is not recorded yet) or the record kept changing; the sender delivers it again', schema: 'AchConflict' },
      '500': INTERNAL,
    },
  },
  'POST /webhooks/stripe': {
    operationId: 'stripeWebhook',
    summary: 'Stripe events (the stripe-webhook Lambda)',
    tag: 'webhooks',
    method: 'POST',
    security: 'stripe',
    headers: [{ name: 'Stripe-Signature', required: true, description: "Stripe's signature header (`t=...,v1=...`), verified with STRIPE_WEBHOOK_SECRET and a 300 s tolerance.", schema: z.string().check(z.minLength(1)) }],
    body: { schema: stripeEventEnvelopeSchema, required: true, description: 'A Stripe event; the data object is validated per event type' },
    responses: {
      '200': { description: 'Processed, or a duplicate delivery', schema: 'StripeResult' },
      '400': { description: 'Bad signature or event', schema: 'Error' },
      '409': { description: 'Another delivery of this event is being processed; Stripe retries', schema: 'Error' },
      '500': INTERNAL,
    },
  },
  ...OPERATOR_OPERATIONS,
};

/** Schemas a JSON Schema cannot express from zod alone (transforms): what the input must look like. */
const ANNOTATIONS = new Map<z.ZodMiniType, JsonObject>([
  [instantSchema, { format: 'date-time', description: 'RFC 3339 instant, e.g. 2026-12-01T12:00:00Z' }],
]);

/** JSON Schema (2020-12, the dialect of OpenAPI 3.1) of what a request may send. */
export function inputJsonSchema(schema: z.ZodMiniType): JsonObject {
  return strip(z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any', override: annotate }) as JsonObject);
}

/** JSON Schema of what the API answers. */
export function outputJsonSchema(schema: z.ZodMiniType): JsonObject {
  return strip(z.toJSONSchema(schema, { io: 'output', target: 'draft-2020-12', unrepresentable: 'any', override: annotate }) as JsonObject);
}

function annotate(ctx: { zodSchema: unknown; jsonSchema: JsonObject }): void {
  const extra = ANNOTATIONS.get(ctx.zodSchema as z.ZodMiniType);
  if (extra) Object.assign(ctx.jsonSchema, extra);
}

function strip(schema: JsonObject): JsonObject {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function responseSchema(names: ResponseComponent | readonly ResponseComponent[]): JsonObject {
  const ref = (name: ResponseComponent) => ({ $ref: `#/components/schemas/${name}` });
  return typeof names === 'string' ? ref(names) : { oneOf: names.map(ref) };
}

function objectParameters(where: 'path' | 'query', schema: z.ZodMiniObject | undefined): JsonObject[] {
  if (!schema) return [];
  const json = inputJsonSchema(schema);
  const properties = (json.properties ?? {}) as Record<string, JsonObject>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: property,
  }));
}

/** The routes the document covers: the api Lambda's table plus the webhooks served by their own Lambdas. */
export function documentedRouteKeys(): string[] {
  return Object.keys(OPERATIONS);
}

export interface DocumentOptions {
  /** The server the console and the Try-it of a reader call; default the local runtime's. */
  readonly serverUrl?: string;
}

export function openApiDocument(options: DocumentOptions = {}): JsonObject {
  const routes = new Map(API_ROUTES.map((route) => [routeKeyOf(route), route]));
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const [routeKey, spec] of Object.entries(OPERATIONS)) {
    const [method, path] = routeKey.split(' ') as [string, string];
    const route = routes.get(routeKey);
    if (!route && !spec.method) throw new Error(`${routeKey} is documented but not in the api route table`);
    const scope: Scope | undefined = route?.scope;
    const parameters = [
      ...objectParameters('path', spec.path),
      ...objectParameters('query', spec.query),
      ...(spec.headers ?? []).map((h) => ({ name: h.name, in: 'header', required: h.required, description: h.description, schema: inputJsonSchema(h.schema) })),
    ];
    const operation: JsonObject = {
      operationId: spec.operationId,
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      tags: [spec.tag],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(spec.body
        ? {
            requestBody: {
              required: spec.body.required,
              ...(spec.body.description ? { description: spec.body.description } : {}),
              content: { 'application/json': { schema: inputJsonSchema(spec.body.schema) } },
            },
          }
        : {}),
      responses: Object.fromEntries(
        Object.entries(spec.responses).map(([status, r]) => [status, { description: r.description, content: { 'application/json': { schema: responseSchema(r.schema) } } }]),
      ),
      // Alternatives: the staff scope, or billing:self on a member route (the token's own user only).
      security: scope ? routeScopes(route!).map((one) => ({ bearerJwt: [one] })) : [{ [`${spec.security ?? 'balance'}Signature`]: [] }],
      ...(scope ? { 'x-required-scope': scope, ...(route?.member ? { 'x-member-scope': MEMBER_SCOPE } : {}) } : {}),
    };
    (paths[path] ??= {})[method.toLowerCase()] = operation;
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Billing API',
      version: '1.0.0',
      description:
        'The billing backend\'s HTTP API: /v1 (JWT bearer, scopes billing:read, billing:write, billing:operate) and the signed webhooks. Money is integer cents (`amount_cents`) plus a two-decimal `amount` string. Lists are `{"items":[...],"next":<token>|null}`; errors are `{"error":{"code","message","details"?}}`.',
    },
    servers: [{ url: options.serverUrl ?? 'http://127.0.0.1:3000', description: 'The local runtime (npm start); in AWS, the HTTP API stage URL' }],
    tags: [
      { name: 'subscriptions', description: 'Billing periods and their history' },
      { name: 'operator', description: 'The failing, dunning and exceptions lists and the audited operator actions' },
      { name: 'loans', description: 'Loan payments' },
      { name: 'webhooks', description: 'Signed deliveries from the payment providers' },
      { name: 'events', description: 'What the billing bus carries (EventBridge, not HTTP): order a period\'s events by (sequence, ordinal)' },
    ],
    paths,
    // What the billing bus carries (DESIGN 11), for its consumers: ordering is in each entry.
    webhooks: publishedEventWebhooks(outputJsonSchema),
    components: {
      schemas: Object.fromEntries(Object.entries(RESPONSE_COMPONENTS).map(([name, schema]) => [name, outputJsonSchema(schema)])),
      securitySchemes: {
        bearerJwt: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A JWT from the configured issuer, checked by the HTTP API\'s JWT authorizer. Each operation lists the scope it needs: billing:read (reads), billing:write (pay, loan payments), billing:operate (operator actions). billing:self is a member\'s app: it reaches only the token\'s own user (its id from the USER_ID_CLAIM claim, default sub) on the operations that list it, another user\'s resource answers 404, and answers leave out data_* and show staff actors as staff. Locally, LOCAL_API_TOKEN carries every staff scope and POST /local/tokens {"user_id"} mints a member token.',
        },
        stripeSignature: { type: 'apiKey', in: 'header', name: 'Stripe-Signature', description: 'Stripe webhook signature over the raw body (STRIPE_WEBHOOK_SECRET)' },
        achSignature: { type: 'apiKey', in: 'header', name: 'X-ACH-Signature', description: 'HMAC-SHA256 over "<t>.<raw body>" (ACH_WEBHOOK_SECRET)' },
        balanceSignature: { type: 'apiKey', in: 'header', name: 'X-Balance-Signature', description: 'HMAC-SHA256 over "<t>.<raw body>" (BALANCE_WEBHOOK_SECRET)' },
      },
    },
  };
}
