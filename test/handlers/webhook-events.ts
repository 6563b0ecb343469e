import { randomUUID } from 'node:crypto';
import type { HttpEvent } from '../../src/handlers/shared/http.js';

/**
 * A `POST` as API Gateway HTTP API (payload v2) delivers it to a webhook Lambda: lower-cased
 * headers, the raw body as a string, base64-encoded when `base64` is set (binary content types).
 */
export function webhookEvent(path: string, body: string, headers: Record<string, string>, options: { base64?: boolean } = {}): HttpEvent {
  const requestId = randomUUID();
  const lowered = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    version: '2.0',
    routeKey: `POST ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      host: 'api.example.test',
      'user-agent': 'webhook-sender/1.0',
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
      ...lowered,
    },
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'api.example.test',
      domainPrefix: 'api',
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'webhook-sender/1.0' },
      requestId,
      routeKey: `POST ${path}`,
      stage: '$default',
      time: '01/Dec/2026:12:00:00 +0000',
      timeEpoch: Date.UTC(2026, 11, 1, 12),
    },
    body: options.base64 ? Buffer.from(body, 'utf8').toString('base64') : body,
    isBase64Encoded: options.base64 === true,
  };
}

export function parseBody(result: { body?: string | undefined }): Record<string, unknown> {
  return JSON.parse(result.body ?? 'null') as Record<string, unknown>;
}
