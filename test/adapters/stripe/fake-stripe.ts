import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** The form-encoded body, decoded. */
  readonly form: URLSearchParams;
}

export type Reply = { readonly status: number; readonly body: unknown };

/** A local stand-in for api.stripe.com: records each request and answers with the scripted reply. */
export class FakeStripe {
  readonly requests: RecordedRequest[] = [];
  reply: (request: RecordedRequest) => Reply = () => ({ status: 500, body: { error: { type: 'api_error', message: 'no reply scripted' } } });
  private server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        const request: RecordedRequest = {
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          form: new URLSearchParams(Buffer.concat(chunks).toString('utf8')),
        };
        this.requests.push(request);
        const { status, body } = this.reply(request);
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${this.requests.length}` });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** The real SDK, pointed at this server, without retries so each call is one request. */
  client(port = this.port): Stripe {
    return new Stripe('sk_test_fake', { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0, telemetry: false, timeout: 5_000 });
  }
}

export function stripeError(status: number, error: Record<string, unknown>): Reply {
  return { status, body: { error } };
}
