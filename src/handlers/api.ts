import { randomUUID } from 'node:crypto';
import { InvalidPageRequestError } from '../adapters/dynamodb/errors.js';
import { ProcessorError } from '../domain/errors.js';
import type { AppDeps } from '../runtime/deps.js';
import type { Logger } from '../runtime/logger.js';
import { API_ROUTES } from './api/routes.js';
import { authorize, matchRoute, routeKeyOf, type RouteContext } from './api/router.js';
import { errorBody, errorResponse, json, type HttpEvent, type HttpResult } from './shared/http.js';
import { lambdaEntry } from './shared/lambda.js';

/**
 * The api Lambda (DESIGN 8): route → authorize (JWT scope) → validate → one use case → answer.
 * Every rejection is a 4xx; only an infrastructure failure can answer 5xx.
 */
export function createApiHandler(deps: AppDeps): (event: HttpEvent) => Promise<HttpResult> {
  return async (event) => {
    const started = Date.now();
    const requestId = stringOr(event?.requestContext?.requestId, randomUUID());
    const base = deps.logger.child({ request_id: requestId, function: 'api' });
    const known: { user_id?: string; subscription_id?: string } = {};
    let log = base;
    let route = 'unmatched';
    let result: HttpResult;
    try {
      const match = matchRoute(API_ROUTES, event);
      if (match.kind === 'not_found') {
        result = json(404, errorBody('not_found', 'no such route'));
      } else if (match.kind === 'method_not_allowed') {
        result = json(405, errorBody('method_not_allowed', 'this method is not allowed on this path'), { allow: match.allow.join(', ') });
      } else {
        route = routeKeyOf(match.route);
        const actor = match.route.scope ? authorize(event, match.route.scope) : undefined;
        const ctx: RouteContext = {
          event,
          deps,
          params: match.params,
          actor,
          owner: `api:${requestId}`,
          get log() {
            return log;
          },
          annotate(fields) {
            Object.assign(known, fields);
            log = base.child(known);
          },
        };
        result = await match.route.handle(ctx);
      }
    } catch (error) {
      result = apiErrorResponse(error, event, log);
    }
    log.info({ route, status: result.statusCode, duration_ms: Date.now() - started }, 'api request');
    return result;
  };
}

/** The shared mapping plus what only the API meets: bad page tokens (400) and processor errors (502). */
function apiErrorResponse(error: unknown, event: HttpEvent, log: Logger): HttpResult {
  if (error instanceof InvalidPageRequestError) return json(400, errorBody('invalid_cursor', error.message));
  // A forged token can decode to a key DynamoDB refuses as a start key: still the caller's input.
  if (isValidationException(error) && event.queryStringParameters?.next !== undefined) return json(400, errorBody('invalid_cursor', 'the page token is not valid for this listing'));
  if (error instanceof ProcessorError) {
    log.warn({ err: error }, 'payment processor error');
    return json(502, errorBody('processor_error', 'the payment processor could not take the payment; retry with the same Idempotency-Key'));
  }
  return errorResponse(error, log);
}

function isValidationException(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'ValidationException';
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

export const handler = lambdaEntry('api', createApiHandler);
