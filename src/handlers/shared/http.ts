import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import * as z from 'zod';
import {
  AlreadyExistsError,
  ConcurrentModificationError,
  DomainError,
  IllegalTransitionError,
  LockedError,
  NotFoundError,
  PreconditionFailedError,
  TransientError,
  UnbilledPeriodError,
} from '../../domain/errors.js';
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
export function parseJsonBody<T extends z.ZodType>(event: HttpEvent, schema: T): z.infer<T> {
  const text = rawBody(event);
  let data: unknown;
  try {
    data = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid_json', 'the request body is not valid JSON');
  }
  return parseWith(schema, data, 'invalid_body');
}

export function parseWith<T extends z.ZodType>(schema: T, data: unknown, code = 'invalid_request'): z.infer<T> {
  const parsed = schema.safeParse(data);
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

/** The one error-to-response mapping: typed domain errors → 404/409/400; unknown → 500 with a reference. */
export function errorResponse(error: unknown, logger: Logger): HttpResult {
  if (error instanceof HttpError) return json(error.status, errorBody(error.code, error.message, error.details));
  if (error instanceof z.ZodError) {
    return json(400, errorBody('invalid_request', 'the request is invalid', error.issues.map((i) => ({ path: i.path.map(String), message: i.message }))));
  }
  if (error instanceof NotFoundError) return json(404, errorBody(error.code, error.message));
  if (error instanceof LockedError) return json(409, errorBody('locked', 'the subscription is being billed right now; try again shortly'));
  if (error instanceof UnbilledPeriodError) return json(409, errorBody(error.code, error.message));
  if (error instanceof IllegalTransitionError) return json(409, errorBody(error.code, error.message));
  if (error instanceof ConcurrentModificationError || error instanceof AlreadyExistsError) return json(409, errorBody(error.code, error.message));
  if (error instanceof PreconditionFailedError) return json(400, errorBody(error.code, error.message));
  if (error instanceof InvalidMoneyError || error instanceof InvalidInstantError) return json(400, errorBody(error.code, error.message));
  if (error instanceof TransientError) return json(503, errorBody('unavailable', 'a dependency is briefly unavailable; retry'), { 'retry-after': '1' });
  if (error instanceof DomainError) return json(409, errorBody(error.code, error.message));
  const reference = randomUUID();
  logger.error({ err: error, reference }, 'unhandled error');
  return json(500, errorBody('internal_error', `An internal error occurred. Reference: ${reference}`));
}
