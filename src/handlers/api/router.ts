import type { AppDeps } from '../../runtime/deps.js';
import type { Logger } from '../../runtime/logger.js';
import { idSchema } from '../../domain/ids.js';
import { safeParseCold } from '../../domain/lazy-schema.js';
import { MEMBER_SCOPE } from '../../manifest/index.js';
import { HttpError, type HttpEvent, type HttpResult } from '../shared/http.js';

export const SCOPES = { read: 'billing:read', write: 'billing:write', operate: 'billing:operate' } as const;
export type Scope = (typeof SCOPES)[keyof typeof SCOPES];

/**
 * Who is calling a /v1 route: staff (a staff scope decided) or a member (only `billing:self`
 * reached a member route: the token's own user, read from the configured claim).
 */
export type Caller =
  | { readonly kind: 'staff'; readonly sub: string }
  | { readonly kind: 'member'; readonly sub: string; readonly userId: string };

export type Method = 'GET' | 'POST' | 'PUT';

/** What one route handler gets: the event, the deps, the matched path params and the caller. */
export interface RouteContext {
  readonly event: HttpEvent;
  readonly deps: AppDeps;
  readonly params: Readonly<Record<string, string | undefined>>;
  /** The JWT `sub` on /v1 routes; absent on webhooks. */
  readonly actor: string | undefined;
  /** Staff or a member; absent on webhooks. A member reaches only its own user's resources (404 otherwise). */
  readonly caller?: Caller;
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
  /** A member route: `billing:self` reaches it for the token's own user. */
  readonly member?: boolean;
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

/** The JWT claims API Gateway's authorizer passed on. */
function claimsOf(event: HttpEvent): Record<string, unknown> | undefined {
  const jwt = event.requestContext?.authorizer?.jwt;
  return jwt && typeof jwt === 'object' && jwt.claims && typeof jwt.claims === 'object' ? (jwt.claims as Record<string, unknown>) : undefined;
}

/**
 * The caller of a /v1 route (DESIGN 8, 15): 401 without claims or a subject; staff when the token
 * carries the route's staff scope (it decides even beside `billing:self`); a member when only
 * `billing:self` reaches a member route (its user id from `userIdClaim`, 401 when that claim is
 * not an id); 403 otherwise, and 403 when the token's client may not use the scope that decided.
 */
export function authorizeCaller(
  event: HttpEvent,
  route: { readonly scope: Scope; readonly member?: boolean | undefined },
  settings: Pick<AppDeps['settings'], 'userIdClaim' | 'clientScopes'>,
): Caller {
  const claims = claimsOf(event);
  const sub = claims?.sub;
  if (!claims || typeof sub !== 'string' || sub.trim() === '') throw new HttpError(401, 'unauthorized', 'a valid bearer token is required');
  const scopes = scopesOf(event);
  const decided = scopes.has(route.scope) ? route.scope : route.member && scopes.has(MEMBER_SCOPE) ? MEMBER_SCOPE : undefined;
  if (!decided) throw new HttpError(403, 'forbidden', `this action requires the ${route.scope} scope`);
  checkClientScope(claims, decided, settings.clientScopes);
  if (decided !== MEMBER_SCOPE) return { kind: 'staff', sub };
  const userId = safeParseCold(idSchema, claims[settings.userIdClaim ?? 'sub']);
  if (!userId.success) throw new HttpError(401, 'unauthorized', 'the token names no user');
  return { kind: 'member', sub, userId: userId.data };
}

/** The HTTP API's authorizer holds one audience list per route, so which client may use which scope is checked here. */
function checkClientScope(claims: Record<string, unknown>, scope: string, clientScopes: Readonly<Record<string, readonly string[]>> | undefined): void {
  if (!clientScopes) return;
  const client = typeof claims.client_id === 'string' ? claims.client_id : typeof claims.azp === 'string' ? claims.azp : undefined;
  const allowed = client !== undefined && Object.hasOwn(clientScopes, client) ? clientScopes[client]! : [];
  if (!allowed.includes(scope)) throw new HttpError(403, 'client_scope_not_allowed', `this client may not use the ${scope} scope`);
}
