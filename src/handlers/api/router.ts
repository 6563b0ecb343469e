import type { AppDeps } from '../../runtime/deps.js';
import type { Logger } from '../../runtime/logger.js';
import { HttpError, type HttpEvent, type HttpResult } from '../shared/http.js';

export const SCOPES = { read: 'billing:read', write: 'billing:write', operate: 'billing:operate' } as const;
export type Scope = (typeof SCOPES)[keyof typeof SCOPES];

export type Method = 'GET' | 'POST' | 'PUT';

/** What one route handler gets: the event, the deps, the matched path params and the caller. */
export interface RouteContext {
  readonly event: HttpEvent;
  readonly deps: AppDeps;
  readonly params: Readonly<Record<string, string | undefined>>;
  /** The JWT `sub` on /v1 routes; absent on webhooks. */
  readonly actor: string | undefined;
  /** Lock owner name for this invocation. */
  readonly owner: string;
  readonly log: Logger;
  /** Adds user_id / subscription_id to this invocation's log lines once they are known. */
  annotate(fields: { user_id?: string; subscription_id?: string }): void;
}

export interface Route {
  readonly method: Method;
  /** Path template as API Gateway writes it, e.g. `/v1/subscriptions/{subscriptionId}`. */
  readonly path: string;
  /** Required JWT scope; undefined for the signed webhooks, which carry no JWT. */
  readonly scope: Scope | undefined;
  readonly handle: (ctx: RouteContext) => Promise<HttpResult>;
}

export type RouteMatch =
  | { readonly kind: 'found'; readonly route: Route; readonly params: Record<string, string | undefined> }
  | { readonly kind: 'method_not_allowed'; readonly allow: readonly Method[] }
  | { readonly kind: 'not_found' };

export function routeKeyOf(route: Route): string {
  return `${route.method} ${route.path}`;
}

/**
 * By `routeKey` when API Gateway matched a declared route; by method and raw path when it sent
 * `$default` (the local gateway, a catch-all stage) or a route key this table does not know.
 */
export function matchRoute(routes: readonly Route[], event: HttpEvent): RouteMatch {
  const routeKey = typeof event.routeKey === 'string' ? event.routeKey : '$default';
  if (routeKey !== '$default') {
    const route = routes.find((r) => routeKeyOf(r) === routeKey);
    if (route) return { kind: 'found', route, params: { ...(event.pathParameters ?? {}) } };
  }
  const method = String(event.requestContext?.http?.method ?? '').toUpperCase();
  const segments = pathSegments(event.rawPath ?? event.requestContext?.http?.path ?? '');
  if (!segments) return { kind: 'not_found' };
  const allow: Method[] = [];
  for (const route of routes) {
    const params = matchTemplate(route.path, segments);
    if (!params) continue;
    if (route.method === method) return { kind: 'found', route, params };
    allow.push(route.method);
  }
  return allow.length > 0 ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
}

/** Decoded segments of a path ('/a/b/' → ['a','b']); undefined for a malformed escape. */
function pathSegments(path: string): string[] | undefined {
  const trimmed = path.replace(/\/+$/, '');
  const parts = trimmed.split('/').slice(1);
  try {
    return parts.map((p) => decodeURIComponent(p));
  } catch {
    return undefined;
  }
}

function matchTemplate(template: string, segments: readonly string[]): Record<string, string> | undefined {
  const parts = template.split('/').slice(1);
  if (parts.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const segment = segments[i]!;
    if (part.startsWith('{') && part.endsWith('}')) {
      if (segment === '') return undefined;
      params[part.slice(1, -1)] = segment;
    } else if (part !== segment) {
      return undefined;
    }
  }
  return params;
}

/** JWT scopes from the authorizer's `scopes`, or from the `scope` claim as a space-separated string. */
export function scopesOf(event: HttpEvent): Set<string> {
  const jwt = event.requestContext?.authorizer?.jwt;
  const scopes = new Set<string>();
  if (Array.isArray(jwt?.scopes)) for (const s of jwt.scopes) if (typeof s === 'string') scopes.add(s);
  const claim = jwt?.claims?.scope;
  const words = typeof claim === 'string' ? claim.split(/\s+/) : Array.isArray(claim) ? claim : [];
  for (const s of words) if (typeof s === 'string' && s !== '') scopes.add(s);
  return scopes;
}

/**
 * 401 without an authorizer context or a subject, 403 without the route's scope.
 * Answers the caller's `sub`, the actor of audited actions.
 */
export function authorize(event: HttpEvent, scope: Scope): string {
  const jwt = event.requestContext?.authorizer?.jwt;
  const sub = jwt?.claims?.sub;
  if (!jwt || typeof jwt !== 'object' || typeof sub !== 'string' || sub.trim() === '') {
    throw new HttpError(401, 'unauthorized', 'a valid bearer token is required');
  }
  if (!scopesOf(event).has(scope)) throw new HttpError(403, 'forbidden', `this action requires the ${scope} scope`);
  return sub;
}
