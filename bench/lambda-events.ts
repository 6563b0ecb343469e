import { randomUUID } from 'node:crypto';
import type { ScheduledEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import type { HttpEvent } from '../src/handlers/shared/http.js';

/** Minimal Lambda event shapes for driving the handlers in process. */

export function scheduledEvent(time: string): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '123456789012',
    time,
    region: 'us-east-1',
    resources: [],
    detail: {},
  };
}

export function sqsEvent(bodies: readonly { id: string; body: string }[]): SQSEvent {
  return {
    Records: bodies.map(
      (m): SQSRecord => ({
        messageId: m.id,
        receiptHandle: m.id,
        body: m.body,
        attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'bench', ApproximateFirstReceiveTimestamp: '0' },
        messageAttributes: {},
        md5OfBody: '',
        eventSource: 'aws:sqs',
        eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:bench',
        awsRegion: 'us-east-1',
      }),
    ),
  };
}

/** An HTTP API (payload 2.0) event as the JWT authorizer delivers it, with every billing scope. */
export function apiEvent(method: string, path: string, headers: Record<string, string>, body?: string): HttpEvent {
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: '123456789012',
      apiId: 'bench',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'autocannon' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
      authorizer: { jwt: { claims: { sub: 'bench-operator' }, scopes: ['billing:read', 'billing:write', 'billing:operate'] } },
    },
    isBase64Encoded: false,
    ...(body !== undefined ? { body } : {}),
  } as HttpEvent;
}
