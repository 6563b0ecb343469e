import { randomUUID } from 'node:crypto';
import * as z from '../domain/zod.js';
import { processorSettingsSchema, simulatedRefundSchema, type PaymentSimulator } from '../adapters/processor/simulator.js';
import { FaultTargetsExhaustedError, processorFaultSchema, type SimulatedProcessorReport } from '../adapters/processor/simulator-report.js';
import { idSchema } from '../domain/ids.js';
import { DETAIL_TYPES } from '../domain/published-events.js';
import { RECONCILIATION_EVENT_TYPES } from '../domain/reconciliation/schemas.js';
import { membershipEventSchema } from '../domain/use-cases/membership/apply-membership-event.js';
import { formatInstant, InvalidInstantError, instantSchema, parseDurationMs, toDate } from '../domain/time.js';
import { internalErrorBody } from '../handlers/shared/http.js';
import type { Logger } from '../runtime/logger.js';
import type { BusEvent } from './event-bus.js';
import { ClockBackwardsError, type SimulatedClock } from './clock.js';
import type { GatewayRequest, GatewayResponse } from './gateway.js';
import type { LocalQueueStats } from './queue-stats.js';
import type { ServicesRequest } from '../adapters/processor/simulator-services.js';

/** What the control surface drives; the runtime implements it. */
export interface LocalControl {
  readonly clock: SimulatedClock;
  readonly simulator: PaymentSimulator;
  readonly logger: Logger;
  health(): { ready: boolean; parts: Record<string, boolean> };
  runCollections(): Promise<unknown>;
  /** Puts the raw event on the stream; resolves when the consumer applied it or gave up on it. */
  putMembership(rawBody: string, userId: string): Promise<{ status: 'applied' | 'failed'; shard_id: string; sequence_number: string; attempts: number } | undefined>;
  /** Runs the ACH pump (after a clock change). */
  afterClockChange(): Promise<unknown>;
  /** A member token for `userId` (`POST /local/tokens`): scope billing:self, its own user only. */
  mintToken(userId: string): { token: string; expiresInS: number };
  /** The events published on the local bus, oldest first (docs/design.md section 11). */
  listEvents(filter: { userId?: string | undefined; detailType?: string | undefined }): BusEvent[];
  /** Reconciliation (DESIGN 9, 14): the simulator's report with its faults, and an on-demand run of a day. */
  readonly processorReport: SimulatedProcessorReport;
  runReconciliation(date: string): Promise<unknown>;
  /** The simulator as the payments and accounts services answer over HTTP, token endpoint and bearer check included (under PAYMENTS_SERVICE_PREFIX). */
  paymentsService(request: ServicesRequest): Promise<{ status: number; body: unknown }>;
  /** Each work queue: messages sent to it since start, what it holds now, and its DLQ's depth. */
  queueStats(): Promise<Record<string, LocalQueueStats>>;
}

/** Where the simulated payments and accounts services answer on the local gateway. */
export const PAYMENTS_SERVICE_PREFIX = '/local/payments-service';

const durationSchema = z.pipe(z.string(), z.transform((value, ctx) => {
  try {
    const ms = parseDurationMs(value);
    if (ms <= 0) throw new InvalidInstantError('the duration must be positive');
    return ms;
  } catch (error) {
    ctx.issues.push({ code: 'custom', message: error instanceof InvalidInstantError ? error.message : 'not an ISO-8601 duration such as PT15M', input: value });
    return z.NEVER;
  }
}));

/** `{"now": RFC3339}` or `{"advance": ISO-8601 duration}`, exactly one of them. */
export const clockBodySchema = z.strictObject({ now: z.optional(instantSchema), advance: z.optional(durationSchema) }).check(z.superRefine((body, ctx) => {
    if ((body.now === undefined) === (body.advance === undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give exactly one of "now" (RFC3339) or "advance" (ISO-8601 duration, e.g. PT15M)' });
    }
  }));

const json = (status: number, body: unknown): GatewayResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

const error = (status: number, code: string, message: string, details?: unknown): GatewayResponse =>
  json(status, { error: { code, message, ...(details !== undefined ? { details } : {}) } });

class BadRequest extends Error {
  constructor(readonly response: GatewayResponse) {
    super('bad request');
  }
}

function parseBody<T extends z.ZodMiniType>(request: GatewayRequest, schema: T): z.infer<T> {
  let data: unknown;
  try {
    data = request.body === '' ? undefined : JSON.parse(request.body);
  } catch {
    throw new BadRequest(error(400, 'invalid_json', 'the request body is not valid JSON'));
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    throw new BadRequest(
      error(400, 'invalid_body', 'the request is invalid', parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message, code: i.code }))),
    );
  }
  return parsed.data;
}

function parseQuery<T extends z.ZodMiniType>(request: GatewayRequest, schema: T): z.infer<T> {
  const params = new URL(request.url, 'http://local').searchParams;
  const query: Record<string, string> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    if (values.length > 1) throw new BadRequest(error(400, 'invalid_query', `give ${key} at most once`));
    query[key] = values[0]!;
  }
  const parsed = schema.safeParse(query);
  if (!parsed.success) {
    throw new BadRequest(
      error(400, 'invalid_query', 'the query is invalid', parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message, code: i.code }))),
    );
  }
  return parsed.data;
}

const ROUTES: Record<string, readonly string[]> = {
  '/health': ['GET'],
  '/local/clock': ['GET', 'POST'],
  '/local/collections/run': ['POST'],
  '/local/memberships': ['POST'],
  '/local/processor': ['GET', 'PUT'],
  '/local/processor/charges': ['GET'],
  '/local/processor/presentments': ['GET'],
  '/local/processor/refunds': ['POST'],
  '/local/processor/stats': ['GET'],
  '/local/events': ['GET'],
  '/local/tokens': ['POST'],
  '/local/processor/report': ['GET'],
  '/local/processor/faults': ['POST'],
  '/local/reconciliation/run': ['POST'],
  '/local/queues': ['GET'],
};

const tokenBodySchema = z.strictObject({ user_id: idSchema });
const dateSchema = z.strictObject({ date: z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD')) });

/** `?user_id=` and `?detail_type=` of GET /local/events (a period event's or a reconciliation event's type): each optional, each at most once. */
const eventsQuerySchema = z.strictObject({
  user_id: z.optional(z.string().check(z.minLength(1))),
  detail_type: z.optional(z.enum([...DETAIL_TYPES, ...Object.values(RECONCILIATION_EVENT_TYPES)])),
});

/** `?user_id=` of GET /local/processor/presentments: optional, at most once. */
const presentmentsQuerySchema = z.strictObject({ user_id: z.optional(z.string().check(z.minLength(1))) });

/**
 * The local-only control surface (docs/design.md, local runtime; never deployed): health, the simulated clock, a
 * synchronous collections run, membership events onto the stream, and the payment simulator.
 */
export function controlRoutes(control: LocalControl) {
  return async (request: GatewayRequest, path: string): Promise<GatewayResponse | undefined> => {
    if (path.startsWith(`${PAYMENTS_SERVICE_PREFIX}/`)) return paymentsService(control, request, path);
    const methods = ROUTES[path];
    if (!methods) return path.startsWith('/local/') ? error(404, 'not_found', `no local route ${path}`) : undefined;
    const method = request.method.toUpperCase();
    if (!methods.includes(method)) return error(405, 'method_not_allowed', `${method} is not allowed on ${path}; use ${methods.join(' or ')}`);
    const health = control.health();
    if (path === '/health') return json(health.ready ? 200 : 503, { status: health.ready ? 'ok' : 'starting', parts: health.parts, now: formatInstant(control.clock.now()) });
    if (!health.ready) return error(503, 'starting', 'the local runtime is still starting; poll GET /health');
    try {
      return await route(control, request, path, method);
    } catch (caught) {
      if (caught instanceof BadRequest) return caught.response;
      if (caught instanceof ClockBackwardsError) {
        return error(409, 'clock_backwards', caught.message, { now: formatInstant(caught.current), requested: formatInstant(caught.requested) });
      }
      // As the API: the error stays in the log under a reference; the answer carries no internals.
      const reference = randomUUID();
      control.logger.error({ err: caught, path, reference }, 'control route failed');
      return json(500, internalErrorBody(reference));
    }
  };
}

/** The processor's log of presentments, one user's or all, with instants as RFC3339. */
function presentments(control: LocalControl, request: GatewayRequest): GatewayResponse {
  const query = parseQuery(request, presentmentsQuerySchema);
  const items = control.simulator.presentments().filter((p) => query.user_id === undefined || p.user_id === query.user_id);
  return json(200, { items: items.map((p) => ({ ...p, at: formatInstant(new Date(p.at)), ...(p.bank ? { bank: { ...p.bank, at: formatInstant(new Date(p.bank.at)) } } : {}) })) });
}

/** Once ready, the simulated services' answer to an HTTP caller; the path under the prefix is the service's own. */
async function paymentsService(control: LocalControl, request: GatewayRequest, path: string): Promise<GatewayResponse> {
  if (!control.health().ready) return error(503, 'starting', 'the local runtime is still starting; poll GET /health');
  const authorization = Object.entries(request.headers).find(([name]) => name.toLowerCase() === 'authorization')?.[1];
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const answer = await control.paymentsService({
    method: request.method,
    path: path.slice(PAYMENTS_SERVICE_PREFIX.length) + query,
    authorization: Array.isArray(authorization) ? authorization[0] : authorization,
    body: request.body,
  });
  return json(answer.status, answer.body);
}

async function route(control: LocalControl, request: GatewayRequest, path: string, method: string): Promise<GatewayResponse> {
  switch (path) {
    case '/local/clock': {
      if (method === 'GET') return json(200, { now: formatInstant(control.clock.now()) });
      const body = parseBody(request, clockBodySchema);
      const now = body.now !== undefined ? control.clock.set(toDate(body.now)) : control.clock.advance(body.advance!);
      control.logger.info({ now: formatInstant(now) }, 'simulated clock changed');
      await control.afterClockChange();
      return json(200, { now: formatInstant(now) });
    }
    case '/local/collections/run':
      return json(200, await control.runCollections());
    case '/local/memberships': {
      const event = parseBody(request, membershipEventSchema);
      const settled = await control.putMembership(request.body, event.user_id);
      if (!settled) return error(504, 'timeout', 'the memberships consumer did not settle the record in time; it is still on the stream');
      return json(200, { ...settled, event_id: event.event_id, user_id: event.user_id, type: event.type });
    }
    case '/local/processor': {
      if (method === 'GET') return json(200, control.simulator.current());
      const settings = parseBody(request, processorSettingsSchema);
      control.simulator.configure(settings);
      control.logger.info({ default: settings.default, users: Object.keys(settings.users).length }, 'processor simulator configured');
      return json(200, control.simulator.current());
    }
    case '/local/processor/refunds': {
      const refund = control.simulator.refund(parseBody(request, simulatedRefundSchema));
      control.logger.info({ refund_id: refund.refund_id, transaction_id: refund.transaction_id }, 'simulated refund made');
      return json(201, refund);
    }
    case '/local/events': {
      const query = parseQuery(request, eventsQuerySchema);
      return json(200, { items: control.listEvents({ userId: query.user_id, detailType: query.detail_type }) });
    }
    case '/local/processor/stats':
      return json(200, control.simulator.stats());
    case '/local/tokens': {
      const body = parseBody(request, tokenBodySchema);
      const minted = control.mintToken(body.user_id);
      return json(201, { token: minted.token, token_type: 'Bearer', expires_in: minted.expiresInS, scope: 'billing:self', user_id: body.user_id });
    }
    case '/local/processor/charges':
      return json(200, {
        items: control.simulator.charges().map((c) => ({
          idempotency_key: c.idempotency_key,
          user_id: c.user_id,
          amount_cents: c.amount_cents,
          rail: c.rail,
          confirmation_id: c.confirmation_id,
          reference: c.reference,
          outcome: c.outcome,
          ...(c.reinitiated ? { reinitiated: true, entry_description: c.entry_description } : {}),
        })),
      });
    case '/local/processor/presentments':
      return presentments(control, request);
    case '/local/processor/report': {
      const { date } = parseQuery(request, dateSchema);
      const from = `${date}T00:00:00Z`;
      const to = new Date(Date.parse(from) + 86_400_000).toISOString();
      const items = [];
      for (const rail of ['card', 'ach', 'pinless'] as const) items.push(...(await control.processorReport.page(rail, from, to, null)).items.map((m) => ({ rail, ...m })));
      return json(200, { date, items });
    }
    case '/local/processor/faults': {
      const fault = parseBody(request, processorFaultSchema);
      try {
        return json(200, { injected: control.processorReport.inject(fault) });
      } catch (caught) {
        if (caught instanceof FaultTargetsExhaustedError) return error(409, caught.code, caught.message);
        throw caught;
      }
    }
    case '/local/reconciliation/run':
      return json(200, await control.runReconciliation(parseBody(request, dateSchema).date));
    case '/local/queues': return json(200, { queues: await control.queueStats() });
    default:
      return error(404, 'not_found', `no local route ${path}`);
  }
}
