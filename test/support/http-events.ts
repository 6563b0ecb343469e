import { randomUUID } from 'node:crypto';
import type { HttpEvent } from '../../src/handlers/shared/http.js';
import { signPayload } from '../../src/handlers/shared/signature.js';

/**
 * API Gateway HTTP API (payload 2.0) events as the JWT authorizer delivers them, for handler tests.
 * `routeKey` is the declared route (path template) unless `defaultRoute` asks for `$default`.
 */

export const ALL_SCOPES = ['billing:read', 'billing:write', 'billing:operate'] as const;

export interface HttpEventOptions {
  /** Route template, e.g. `/v1/subscriptions/{subscriptionId}`; `path` fills it from `pathParameters`. */
  readonly route?: string;
  readonly pathParameters?: Record<string, string>;
  /** Raw path; derived from `route` + `pathParameters` when absent. */
  readonly path?: string;
  readonly query?: Record<string, string>;
  readonly headers?: Record<string, string>;
  /** A string is sent as is; anything else is JSON-encoded. */
  readonly body?: unknown;
  readonly base64?: boolean;
  /** JWT auth: `null` sends no authorizer context at all. */
  readonly auth?: JwtAuth | null;
  /** Send `routeKey: "$default"` (the local gateway, a catch-all route). */
  readonly defaultRoute?: boolean;
  readonly requestId?: string;
  readonly timeEpoch?: number;
}

export interface JwtAuth {
  readonly sub?: string;
  /** Goes to `authorizer.jwt.scopes`. */
  readonly scopes?: readonly string[];
  /** Goes to the `scope` claim as a space-separated string (Cognito access tokens). */
  readonly scopeClaim?: string;
  readonly claims?: Record<string, string | number | boolean | string[]>;
}

export const operatorAuth: JwtAuth = { sub: 'operator-1', scopes: [...ALL_SCOPES] };
export const readerAuth: JwtAuth = { sub: 'reader-1', scopes: ['billing:read'] };

function fillTemplate(route: string, params: Record<string, string>): string {
  return route.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name] ?? `{${name}}`;
    try {
      return encodeURIComponent(value);
    } catch {
      return value; // a lone surrogate cannot be percent-encoded; send it raw as a broken client would
    }
  });
}

export function httpEvent(method: string, options: HttpEventOptions = {}): HttpEvent {
  const route = options.route ?? options.path ?? '/';
  const rawPath = options.path ?? fillTemplate(route, options.pathParameters ?? {});
  const query = options.query;
  const rawQueryString = query ? new URLSearchParams(query).toString() : '';
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    accept: 'application/json',
    host: 'api.billing.example.com',
    'user-agent': 'vitest',
    'x-forwarded-for': '203.0.113.10',
    'x-forwarded-port': '443',
    'x-forwarded-proto': 'https',
    ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}),
    ...Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
  };
  const auth = options.auth === undefined ? operatorAuth : options.auth;
  const timeEpoch = options.timeEpoch ?? Date.now();
  const event: HttpEvent = {
    version: '2.0',
    routeKey: options.defaultRoute ? '$default' : `${method} ${route}`,
    rawPath,
    rawQueryString,
    headers,
    ...(query ? { queryStringParameters: { ...query } } : {}),
    ...(options.pathParameters && !options.defaultRoute ? { pathParameters: { ...options.pathParameters } } : {}),
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123defg',
      domainName: 'api.billing.example.com',
      domainPrefix: 'api',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.10', userAgent: 'vitest' },
      requestId: options.requestId ?? randomUUID(),
      routeKey: options.defaultRoute ? '$default' : `${method} ${route}`,
      stage: '$default',
      time: new Date(timeEpoch).toUTCString(),
      timeEpoch,
      ...(auth
        ? {
            authorizer: {
              jwt: {
                claims: {
                  iss: 'https://cognito-idp.us-east-2.amazonaws.com/us-east-2_example',
                  aud: 'billing-api',
                  iat: Math.floor(timeEpoch / 1000) - 60,
                  exp: Math.floor(timeEpoch / 1000) + 3600,
                  ...(auth.sub !== undefined ? { sub: auth.sub } : {}),
                  ...(auth.scopeClaim !== undefined ? { scope: auth.scopeClaim } : {}),
                  ...auth.claims,
                },
                scopes: auth.scopes ? [...auth.scopes] : null,
              },
            },
          }
        : {}),
    },
    isBase64Encoded: options.base64 ?? false,
    ...(body !== undefined ? { body: options.base64 ? Buffer.from(body, 'utf8').toString('base64') : body } : {}),
  } as HttpEvent;
  return event;
}

/** A signed `POST /webhooks/balance` delivery (no JWT: the signature is the authentication). */
export function balanceWebhookEvent(body: unknown, secret: string, tSeconds: number, options: { signature?: string; defaultRoute?: boolean } = {}): HttpEvent {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return httpEvent('POST', {
    route: '/webhooks/balance',
    body: raw,
    auth: null,
    headers: { 'x-balance-signature': options.signature ?? signPayload(raw, secret, tSeconds) },
    ...(options.defaultRoute ? { defaultRoute: true } : {}),
  });
}

/** Parses a handler answer. */
export function responseOf(result: { statusCode?: number; body?: string; headers?: Record<string, unknown> }): { status: number; body: any; headers: Record<string, unknown> } {
  return { status: result.statusCode ?? 0, body: result.body ? JSON.parse(result.body) : undefined, headers: result.headers ?? {} };
}
