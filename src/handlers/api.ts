import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../runtime/deps.js';
import { API_ROUTES } from './api/routes.js';
import { assertOwnPath, projectForMember } from './api/member-view.js';
import { authorizeCaller, matchRoute, routeKeyOf, type RouteContext } from './api/router.js';
import { errorBody, errorResponse, json, type HttpEvent, type HttpResult } from './shared/http.js';

/**
 * The api Lambda (DESIGN 8): route → authorize (JWT scope) → validate → one use case → answer.
 * Every rejection is a 4xx; only an infrastructure failure can answer 5xx. Errors become answers in
 * one place, `errorResponse` (shared/http.ts).
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
        const caller = match.route.scope ? authorizeCaller(event, { scope: match.route.scope, member: match.route.member }, deps.settings) : undefined;
        // Ownership first: before any read, lock or Idempotency-Key lookup.
        if (caller) assertOwnPath(caller, match.params);
        const ctx: RouteContext = {
          event,
          deps,
          params: match.params,
          actor: caller?.sub,
          ...(caller ? { caller } : {}),
          owner: `api:${requestId}`,
          get log() {
            return log;
          },
          annotate(fields) {
            Object.assign(known, fields);
            log = base.child(known);
          },
        };
        result = projectForMember(await match.route.handle(ctx), caller);
      }
    } catch (error) {
      const method = String(event?.requestContext?.http?.method ?? '').toUpperCase();
      result = errorResponse(error, log, { pageTokenGiven: method === 'GET' && event?.queryStringParameters?.next !== undefined });
    }
    log.info({ route, status: result.statusCode, duration_ms: Date.now() - started }, 'api request');
    return result;
  };
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

