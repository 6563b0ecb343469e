import { randomBytes, timingSafeEqual } from 'node:crypto';
import * as z from '../../domain/zod.js';
import { ProcessorError, ProcessorOutageError, ProcessorThrottledError } from '../../domain/errors.js';
import type { PaymentRequest, PaymentResult } from '../../domain/ports/processor.js';
import type { ClientCredentials } from '../payments-service/client-credentials.js';
import type { PaymentSimulator } from './simulator.js';

/**
 * The simulator as our payments and accounts services see a caller (docs/security.md): an OAuth
 * 2.0 client-credentials token endpoint for the one client it knows, and bearer tokens checked on
 * every call: none, unknown, expired or issued before a revocation is a 401. The simulator's
 * `"auth": "revoked"` refuses the client at the token endpoint and every token it issued.
 */
export class SimulatedServicesAuth {
  private readonly tokens = new Map<string, number>();

  constructor(
    private readonly simulator: Pick<PaymentSimulator, 'current'>,
    private readonly client: ClientCredentials,
    private readonly wallNowMs: () => number = Date.now,
    readonly tokenLifetimeS = 3600,
  ) {}

  /** `POST /oauth/token`: HTTP Basic client authentication, form body `grant_type=client_credentials`. */
  token(authorization: string | undefined, form: string): { status: number; body: unknown } {
    if (this.revoked() || !this.knowsClient(authorization)) return { status: 401, body: { error: 'invalid_client' } };
    if (new URLSearchParams(form).get('grant_type') !== 'client_credentials') return { status: 400, body: { error: 'unsupported_grant_type' } };
    const token = randomBytes(24).toString('base64url');
    this.tokens.set(token, this.wallNowMs() + this.tokenLifetimeS * 1000);
    return { status: 200, body: { access_token: token, token_type: 'Bearer', expires_in: this.tokenLifetimeS } };
  }

  /** Whether a call's `Authorization` header carries a token this issuer gave and that still holds. */
  accepts(authorization: string | undefined): boolean {
    if (this.revoked()) {
      this.tokens.clear();
      return false;
    }
    const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    const expiresAt = token === undefined ? undefined : this.tokens.get(token);
    if (expiresAt === undefined) return false;
    if (expiresAt <= this.wallNowMs()) {
      this.tokens.delete(token!);
      return false;
    }
    return true;
  }

  private revoked(): boolean {
    return this.simulator.current().auth === 'revoked';
  }

  private knowsClient(authorization: string | undefined): boolean {
    const basic = /^Basic (\S+)$/.exec(authorization ?? '')?.[1];
    if (!basic) return false;
    const [id, secret] = Buffer.from(basic, 'base64').toString('utf8').split(':').map((part) => safeDecode(part));
    return id === this.client.client_id && secret !== undefined && sameText(secret, this.client.client_secret);
  }
}

function safeDecode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The payment request as the payments service reads `POST /payments` (the fields the simulator uses are checked). */
const paymentBodySchema = z.looseObject({
  idempotency_key: z.string().check(z.minLength(1)),
  user_id: z.string().check(z.minLength(1)),
  amount_cents: z.int().check(z.positive()),
  rail: z.enum(['ach', 'pinless']),
});

export interface ServicesRequest {
  readonly method: string;
  /** Path and query under the service's base URL, e.g. `/payments`. */
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: string;
}

const refused = { status: 401, body: { error: { code: 'invalid_token', message: 'a bearer token from the token endpoint is required' } } };

/**
 * The payments and accounts services' contract (src/adapters/payments-service/http-clients.ts)
 * answered by the simulator behind the same credential check: what a caller over HTTP meets.
 */
export async function simulatedServicesAnswer(simulator: PaymentSimulator, auth: SimulatedServicesAuth, request: ServicesRequest): Promise<{ status: number; body: unknown }> {
  const method = request.method.toUpperCase();
  const path = request.path.split('?')[0]!;
  if (path === '/oauth/token') return method === 'POST' ? auth.token(request.authorization, request.body) : { status: 405, body: { error: 'method_not_allowed' } };
  if (!auth.accepts(request.authorization)) return refused;
  try {
    if (method === 'POST' && path === '/payments') {
      const parsed = paymentBodySchema.safeParse(safeJson(request.body));
      if (!parsed.success) return { status: 400, body: { error: { code: 'invalid_request', message: 'not a payment request' } } };
      return { status: 200, body: paymentAnswer(await simulator.submit(parsed.data as unknown as PaymentRequest)) };
    }
    const account = /^\/accounts\/([^/]+)$/.exec(path);
    if (method === 'GET' && account) return { status: 200, body: await simulator.getAccount(decodeURIComponent(account[1]!)) };
    const refund = /^\/refunds\/([^/]+)$/.exec(path);
    if (method === 'GET' && refund) {
      const found = await simulator.findRefund({ refund_id: decodeURIComponent(refund[1]!), rail: 'ach' });
      return found ? { status: 200, body: found } : { status: 404, body: { error: { code: 'not_found', message: 'no such refund' } } };
    }
    return { status: 404, body: { error: { code: 'not_found', message: `no route ${method} ${path}` } } };
  } catch (error) {
    if (error instanceof ProcessorThrottledError) return { status: 429, body: { error: { code: 'rate_limited', message: 'too many requests' } } };
    if (error instanceof ProcessorOutageError) return refused;
    if (error instanceof ProcessorError) return { status: 503, body: { error: { code: 'unavailable', message: error.message } } };
    throw error;
  }
}

/** The simulator's result in the service's answer shape: the card's network named as its brand. */
function paymentAnswer(result: PaymentResult): unknown {
  if (result.outcome !== 'declined') return result;
  const { card_network, ...decline } = result;
  return { ...decline, ...(card_network ? { card_brand: card_network } : {}) };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
