import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { ROUTES, routeScopes, type ManifestRoute as ApiRoute } from '../manifest/index.js';
import type { Logger } from '../runtime/logger.js';
import { LOCAL_ACCOUNT, lambdaContext, type FunctionName } from './lambda-shapes.js';
import { verifyMemberToken } from './member-tokens.js';

export type HttpHandler = (event: APIGatewayProxyEventV2, context?: Context) => Promise<APIGatewayProxyResultV2>;

export interface GatewayRequest {
  readonly method: string;
  /** Path plus optional query string, as on the request line. */
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  readonly sourceIp?: string;
}

export interface GatewayResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Routes served before API Gateway's (the local control surface and health). */
export type ControlRoutes = (request: GatewayRequest, path: string) => Promise<GatewayResponse | undefined>;

export interface GatewayOptions {
  readonly apiToken: string;
  readonly operatorSub: string;
  readonly logger: Logger;
  readonly control: ControlRoutes;
  /** The HTTP-triggered functions by name; absent ones answer 503 until they exist. */
  readonly handlers: Partial<Record<ApiRoute['target'], HttpHandler>>;
  /** API Gateway's payload limit (6 MB, Lambda's); smaller in tests. */
  readonly maxBodyBytes?: number;
}

export const ALL_SCOPES = ['billing:read', 'billing:write', 'billing:operate'] as const;
const MAX_BODY_BYTES = 6 * 1024 * 1024;
/** Beyond this a too-large body is not drained: the connection is dropped. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
const API_ID = 'local';

interface CompiledRoute {
  readonly route: ApiRoute;
  readonly routeKey: string;
  readonly pattern: RegExp;
  readonly params: readonly string[];
}

/** The HTTP API route templates of docs/design.md (the same list the CDK stack deploys), as matchers. */
export const COMPILED_ROUTES: readonly CompiledRoute[] = (ROUTES as readonly ApiRoute[]).map((route) => {
  const params: string[] = [];
  const source = route.path
    .split('/')
    .map((segment) => {
      const m = /^\{(\w+)\}$/.exec(segment);
      if (!m) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      params.push(m[1]!);
      return '([^/]+)';
    })
    .join('/');
  return { route, routeKey: `${route.method} ${route.path}`, pattern: new RegExp(`^${source}$`), params };
});

export function matchRoute(method: string, path: string): { route: CompiledRoute; pathParameters: Record<string, string> } | 'method_not_allowed' | undefined {
  let pathMatched = false;
  for (const compiled of COMPILED_ROUTES) {
    const m = compiled.pattern.exec(path);
    if (!m) continue;
    pathMatched = true;
    if (compiled.route.method !== method) continue;
    const pathParameters: Record<string, string> = {};
    compiled.params.forEach((name, i) => {
      pathParameters[name] = safeDecode(m[i + 1]!);
    });
    return { route: compiled, pathParameters };
  }
  return pathMatched ? 'method_not_allowed' : undefined;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

const apiGatewayMessage = (status: number, message: string): GatewayResponse => ({
  status,
  headers: { 'content-type': 'application/json', 'apigw-requestid': randomUUID() },
  body: JSON.stringify({ message }),
});

/**
 * API Gateway (HTTP API, payload v2) on one port: matches the HTTP API route templates, runs the
 * JWT authorizer's checks (the local token carries every scope; a missing or wrong token is 401,
 * a missing scope 403, before any function runs), builds the v2 event and maps the result back.
 */
export class LocalGateway {
  private server: Server | undefined;
  private draining = false;
  private inFlight = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(private readonly options: GatewayOptions) {}

  /** Binds first, so a taken port fails before anything else starts. */
  async listen(port: number, host: string): Promise<string> {
    const server = createServer((req, res) => void this.serve(req, res));
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const address = server.address() as AddressInfo;
    return `http://${host}:${address.port}`;
  }

  /** On stop: requests that arrive from now on answer 503 `stopping`; those in flight run to their answer. */
  beginDrain(): void {
    this.draining = true;
  }

  /** Resolves once no request is in flight. */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), 2_000).unref();
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.draining) {
      res.writeHead(503, { 'content-type': 'application/json', connection: 'close', 'retry-after': '5' });
      res.end(JSON.stringify({ error: { code: 'stopping', message: 'the local runtime is stopping' } }));
      return;
    }
    this.inFlight += 1;
    try {
      await this.answer(req, res);
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    let response: GatewayResponse;
    let closeAfter = false;
    try {
      const body = await readBody(req, this.options.maxBodyBytes ?? MAX_BODY_BYTES);
      if (body === undefined) {
        // The rest of the body was read and dropped, so closing does not reset the connection
        // under the answer; the client's next request opens a new one.
        closeAfter = true;
        response = apiGatewayMessage(413, 'Request Entity Too Large');
      } else {
        response = await this.dispatch({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body, sourceIp: req.socket.remoteAddress ?? '127.0.0.1' });
      }
    } catch (error) {
      this.options.logger.error({ err: error }, 'gateway failure');
      response = apiGatewayMessage(500, 'Internal Server Error');
    }
    res.writeHead(response.status, closeAfter ? { ...response.headers, connection: 'close' } : response.headers);
    res.end(response.body);
    this.options.logger.debug({ method: req.method, path: req.url?.split('?')[0], status: response.status, ms: Date.now() - started }, 'http');
  }

  /** One request through the gateway, without a socket (the ACH pump delivers its webhooks this way). */
  async dispatch(request: GatewayRequest): Promise<GatewayResponse> {
    const url = new URL(request.url, 'http://local');
    const path = url.pathname;
    const control = await this.options.control(request, path);
    if (control) return control;

    const matched = matchRoute(request.method.toUpperCase(), path);
    if (matched === undefined) return apiGatewayMessage(404, 'Not Found');
    if (matched === 'method_not_allowed') return apiGatewayMessage(404, 'Not Found');
    const { route, pathParameters } = matched;

    const headers = lowerCaseHeaders(request.headers);
    let authorizer: Record<string, unknown> | undefined;
    if (route.route.scope) {
      const token = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1]?.trim();
      const nowS = Math.floor(Date.now() / 1000);
      const member = token && token !== this.options.apiToken ? verifyMemberToken(this.options.apiToken, token, nowS) : undefined;
      if (!token || (token !== this.options.apiToken && !member)) return apiGatewayMessage(401, 'Unauthorized');
      const scopes: string[] = member ? [member.scope] : [...ALL_SCOPES];
      // As the JWT authorizer: any of the route's scopes lets the request in; the api decides which applies.
      if (!routeScopes(route.route).some((scope) => scopes.includes(scope))) return apiGatewayMessage(403, 'Forbidden');
      authorizer = {
        jwt: {
          claims: member ?? { sub: this.options.operatorSub, scope: scopes.join(' '), iss: 'local', aud: 'billing-api', iat: nowS, exp: nowS + 3600 },
          scopes,
        },
        principalId: '',
        integrationLatency: 0,
      };
    }

    const handler = this.options.handlers[route.route.target];
    if (!handler) return apiGatewayMessage(503, 'Service Unavailable');
    const event = buildHttpEvent(request, url, route.routeKey, pathParameters, headers, authorizer);
    const context = lambdaContext(route.route.target as FunctionName, event.requestContext.requestId);
    try {
      return toGatewayResponse(await handler(event, context));
    } catch (error) {
      this.options.logger.error({ err: error, function: route.route.target, requestId: event.requestContext.requestId }, 'function error');
      return apiGatewayMessage(500, 'Internal Server Error');
    }
  }
}

/** Names are kept verbatim (`__proto__`, `constructor`), as API Gateway keeps them: no prototype. */
function lowerCaseHeaders(raw: GatewayRequest['headers']): Record<string, string> {
  const headers = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  }
  return headers;
}

export function buildHttpEvent(
  request: GatewayRequest,
  url: URL,
  routeKey: string,
  pathParameters: Record<string, string>,
  headers: Record<string, string>,
  authorizer: Record<string, unknown> | undefined,
): APIGatewayProxyEventV2 {
  // API Gateway keeps every key verbatim (`__proto__`, `constructor`, `toString`) and joins repeats with commas.
  const query = Object.create(null) as Record<string, string>;
  for (const [k, v] of url.searchParams) query[k] = Object.hasOwn(query, k) ? `${query[k]},${v}` : v;
  const now = new Date();
  const cookies = headers.cookie ? headers.cookie.split(';').map((c) => c.trim()).filter(Boolean) : undefined;
  const eventHeaders = Object.assign(Object.create(null) as Record<string, string>, headers);
  delete eventHeaders.cookie;
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.startsWith('?') ? url.search.slice(1) : '',
    headers: eventHeaders,
    requestContext: {
      accountId: LOCAL_ACCOUNT,
      apiId: API_ID,
      domainName: headers.host ?? '127.0.0.1',
      domainPrefix: (headers.host ?? '127').split('.')[0]!,
      http: {
        method: request.method.toUpperCase(),
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: request.sourceIp ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: false,
  };
  if (cookies) event.cookies = cookies;
  if (Object.keys(query).length > 0) event.queryStringParameters = query;
  if (Object.keys(pathParameters).length > 0) event.pathParameters = pathParameters;
  if (request.body !== '') event.body = request.body;
  if (authorizer) (event.requestContext as unknown as Record<string, unknown>).authorizer = authorizer;
  return event;
}

/** API Gateway's payload v2 response mapping (a bare value becomes a 200 JSON answer). */
export function toGatewayResponse(result: APIGatewayProxyResultV2): GatewayResponse {
  if (typeof result === 'string' || result === null || result === undefined || typeof result !== 'object' || !('statusCode' in result)) {
    return { status: 200, headers: { 'content-type': 'application/json' }, body: typeof result === 'string' ? result : JSON.stringify(result ?? null) };
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k.toLowerCase()] = String(v);
  const raw = result.body ?? '';
  const body = result.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  return { status: result.statusCode ?? 200, headers, body };
}

/** The body, or `undefined` when it is over `limit` (then the rest is read and dropped, up to DRAIN_LIMIT_BYTES). */
async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > Math.max(limit, DRAIN_LIMIT_BYTES)) {
      // Not worth draining: drop the connection.
      req.socket.destroy();
      return undefined;
    }
    if (size <= limit) chunks.push(chunk as Buffer);
  }
  return size > limit ? undefined : Buffer.concat(chunks).toString('utf8');
}
