import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import * as z from '../../domain/zod.js';
import { InvalidPageRequestError } from '../../runtime/stored-items.js';
import {
  AlreadyExistsError,
  ConcurrentModificationError,
  DomainError,
  InternalFaultError,
  IdempotencyKeyReusedError,
  LockedError,
  NotFoundError,
  PaymentHoldError,
  PreconditionFailedError,
  ProcessorError,
  TransientError,
} from '../../domain/errors.js';
import { safeParseCold } from '../../domain/lazy-schema.js';
import { InvalidMoneyError } from '../../domain/money.js';
import { InvalidInstantError } from '../../domain/time.js';
import type { Logger } from '../../runtime/logger.js';

export type HttpEvent = APIGatewayProxyEventV2 & {
  requestContext: APIGatewayProxyEventV2['requestContext'] & {
    authorizer?: { jwt?: { claims?: Record<string, string | number | boolean | string[]>; scopes?: string[] | null } };
  };
};
export type HttpResult = APIGatewayProxyStructuredResultV2;

/** A 4xx answer raised by request parsing or auth; carries the stable error code. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return { statusCode: status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: { code, message, ...(details !== undefined ? { details } : {}) } };
}

/** The raw body as API Gateway delivered it (base64-decoded when flagged). */
export function rawBody(event: HttpEvent): string {
  if (event.body === undefined || event.body === null) return '';
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

/** Parses and validates a JSON body; malformed JSON or schema violations are a 400 with the zod issues. */
export function parseJsonBody<T extends z.ZodMiniType>(event: HttpEvent, schema: T): z.infer<T> {
  const text = rawBody(event);
  let data: unknown;
  try {
    data = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_json', 'the request body is not valid JSON');
  }
  return parseWith(schema, data, 'invalid_body');
}

export function parseWith<T extends z.ZodMiniType>(schema: T, data: unknown, code = 'invalid_request'): z.infer<T> {
  const parsed = safeParseCold(schema, data);
  if (!parsed.success) {
    throw new HttpError(400, code, 'the request is invalid', parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message, code: i.code })));
  }
  return parsed.data;
}

/** Case-insensitive header lookup (API Gateway v2 lower-cases them, but be lenient). */
export function header(event: HttpEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [k, v] of Object.entries(event.headers ?? {})) if (k.toLowerCase() === wanted) return v;
  return undefined;
}

/** What the mapping needs to know about the request beyond the error itself. */
export interface ErrorContext {
  /**
   * A read that carried a page token (`?next=`): a forged token can decode to a start key DynamoDB
   * refuses (ValidationException), which is still the caller's input, not a fault.
   */
  readonly pageTokenGiven?: boolean;
}

/** The body of every 500: a generic message and the reference under which the log holds the error. */
export function internalErrorBody(reference: string) {
  return errorBody('internal_error', `An internal error occurred. Reference: ${reference}`, { reference });
}

/**
 * The one error-to-response mapping (DESIGN 8), by class and stable code, never by message text:
 * - client errors: 400 (validation, preconditions, page tokens), 404;
 * - conflicts (every other DomainError: locked, illegal_transition, unbilled_period,
 *   concurrent_modification, already_exists, ...): 409 with the error's code;
 * - a transient dependency failure: 503 with Retry-After; a processor error: 502;
 * - internal faults (InternalFaultError: a corrupt item, an invalid transaction, an interruption,
 *   a lost lock) and anything unrecognised: 500 with a generic message and a reference id; the full
 *   error is logged under that reference. No table name, key or item content reaches the client.
 */
export function errorResponse(error: unknown, logger: Logger, context: ErrorContext = {}): HttpResult {
  if (error instanceof HttpError) return json(error.status, errorBody(error.code, error.message, error.details));
  if (error instanceof z.$ZodError) {
    return json(400, errorBody('invalid_request', 'the request is invalid', error.issues.map((i) => ({ path: i.path.map(String), message: i.message }))));
  }
  if (error instanceof InvalidPageRequestError) return json(400, errorBody('invalid_cursor', error.message));
  if (context.pageTokenGiven && sdkErrorName(error) === 'ValidationException') {
    return json(400, errorBody('invalid_cursor', 'the page token is not valid for this listing'));
  }
  if (error instanceof PreconditionFailedError) return json(400, errorBody(error.code, error.message));
  if (error instanceof InvalidMoneyError || error instanceof InvalidInstantError) return json(400, errorBody(error.code, error.message));
  if (error instanceof NotFoundError) return json(404, errorBody(error.code, error.message));
  if (error instanceof IdempotencyKeyReusedError) return json(422, errorBody(error.code, error.message));
  if (error instanceof InternalFaultError) return internalError(error, logger);
  if (error instanceof TransientError) return json(503, errorBody('unavailable', 'a dependency is briefly unavailable; retry'), { 'retry-after': '1' });
  if (error instanceof ProcessorError) {
    logger.warn({ err: error }, 'payment processor error');
    return json(502, errorBody('processor_error', 'the payment processor could not take the payment; retry with the same Idempotency-Key'));
  }
  if (error instanceof LockedError) return json(409, errorBody('locked', 'the subscription is being billed right now; try again shortly'));
  // Store conflicts name the table and key in their message: that stays in the log.
  if (error instanceof ConcurrentModificationError) return conflict(error, 'the subscription changed while this request was processed; retry', logger);
  if (error instanceof AlreadyExistsError) return conflict(error, 'it already exists', logger);
  if (error instanceof PaymentHoldError) {
    const named = { ...(error.decidedBy !== undefined ? { decided_by: error.decidedBy } : {}), ...(error.instrumentId !== undefined ? { instrument_id: error.instrumentId } : {}) };
    return json(409, { error: { ...errorBody(error.code, error.message).error, ...named } });
  }
  // Domain conflicts (illegal_transition, unbilled_period, ...) are written for the caller.
  if (error instanceof DomainError) return json(409, errorBody(error.code, error.message));
  return internalError(error, logger);
}

function conflict(error: DomainError, message: string, logger: Logger): HttpResult {
  logger.info({ code: error.code, detail: error.message }, 'conflict');
  return json(409, errorBody(error.code, message));
}

function internalError(error: unknown, logger: Logger): HttpResult {
  const reference = randomUUID();
  logger.error({ err: error, reference, fault: error instanceof DomainError ? error.code : sdkErrorName(error) ?? 'unhandled' }, 'internal error');
  return json(500, internalErrorBody(reference));
}

function sdkErrorName(error: unknown): string | undefined {
  const name = typeof error === 'object' && error !== null ? (error as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name : undefined;
}
