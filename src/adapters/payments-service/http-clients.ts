import * as z from '../../domain/zod.js';
import { lazySchema, safeParseCold } from '../../domain/lazy-schema.js';
import { cardNetworkOf } from '../../domain/declines.js';
import { ProcessorError, ProcessorOutageError, ProcessorThrottledError, TransientError } from '../../domain/errors.js';
import { accountSnapshotSchema } from '../../domain/records.js';
import type { AccountDirectory, AccountSnapshot } from '../../domain/ports/account-directory.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult, ProcessorRefund, RefundQuery } from '../../domain/ports/processor.js';
import type { ServiceCredentials } from './client-credentials.js';

/**
 * The in-house payments service (ACH and pinless rails) and accounts service, over HTTPS JSON.
 * Their contract is ours: POST /payments with an Idempotency-Key header and the `instrument_id` it
 * debits answers `{"outcome":"approved"|"submitted"|"declined", "instrument_id", ...}`;
 * GET /accounts/{userId} answers a snapshot with the user's instruments (`instruments.ach`
 * `{account_id, authorization_id, authorized_at}`, `instruments.pinless` `{fingerprint, brand}`).
 * A decline names its reason in Stripe's decline-code vocabulary (`decline_code`: `lost_card`,
 * `insufficient_funds`, ...), with the debit network's raw response code (`network_decline_code`),
 * its advice code if any, and the card's brand (`card_brand`) when the service knows it; a pinless
 * card whose brand is not said gets every network's reattempt ceiling (dunning.ts).
 * GET /refunds/{refundId} answers a refund (`refundAnswerSchema`), or 404 when the service knows none.
 * Every call carries `Authorization: Bearer <token>` from the client-credentials grant (docs/security.md).
 */

const paymentAnswerSchema = lazySchema(() => z.discriminatedUnion('outcome', [
  // `instrument_id`: the instrument debited, as the request named it (DESIGN 3.2).
  z.object({ outcome: z.literal('approved'), confirmation_id: z.string().check(z.minLength(1)), instrument_id: z.optional(z.string().check(z.minLength(1))) }),
  z.object({ outcome: z.literal('submitted'), confirmation_id: z.string().check(z.minLength(1)), instrument_id: z.optional(z.string().check(z.minLength(1))) }),
  z.object({
    outcome: z.literal('declined'),
    confirmation_id: z.optional(z.string()),
    decline_code: z.string().check(z.minLength(1), z.maxLength(64)),
    message: z.string().check(z.minLength(1)),
    advice_code: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
    network_advice_code: z.optional(z.string().check(z.minLength(1), z.maxLength(16))),
    network_decline_code: z.optional(z.string().check(z.minLength(1), z.maxLength(16))),
    card_brand: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  }),
]));

const refundAnswerSchema = lazySchema(() => z.object({
  refund_id: z.string().check(z.minLength(1)),
  transaction_id: z.string().check(z.minLength(1)),
  amount_cents: z.int().check(z.positive()),
  status: z.enum(['pending', 'succeeded', 'failed', 'canceled']),
}));

type Fetch = typeof fetch;

/**
 * The error codes with which our services refuse the caller, not the request: missing, invalid,
 * expired or revoked credentials, or a client not allowed to call. Such an answer is our outage
 * (DESIGN 15), whatever its status; any other 4xx is the request's rejection.
 */
export const CREDENTIAL_ERROR_CODES: ReadonlySet<string> = new Set(['unauthenticated', 'invalid_client', 'invalid_token', 'token_expired', 'client_not_allowed']);

const errorAnswerSchema = lazySchema(() => z.object({ error: z.object({ code: z.string() }) }));

/** Which service a call went to, for the circuit an outage opens. */
type ServiceName = 'payments' | 'accounts';

/** Answered for a 404 when the caller asked for one: the service knows no such thing. */
const NOT_FOUND = Symbol('not found');

async function call(fetchImpl: Fetch, url: string, init: RequestInit, service: ServiceName, credentials: ServiceCredentials, options: { notFound?: true } = {}): Promise<unknown> {
  const response = await authorizedFetch(fetchImpl, url, init, credentials);
  // Its rate limit: nothing was presented; the worker stops presenting (DESIGN 13).
  if (response.status === 429) throw new ProcessorThrottledError('payments');
  if (response.status >= 500) {
    throw new TransientError(`payments service answered ${response.status}`);
  }
  if (response.status === 404 && options.notFound) return NOT_FOUND;
  if (!response.ok) {
    const code = await errorCodeOf(response);
    // A 401 is always the caller's credentials; otherwise the answer's code decides.
    if (response.status === 401 || (code !== undefined && CREDENTIAL_ERROR_CODES.has(code))) {
      throw new ProcessorOutageError(service, 'processor_auth', { cause: new Error(`${service} service answered ${response.status} ${code ?? ''}`.trim()) });
    }
    throw new ProcessorError('processor_rejected', 'The payment processor rejected the request.');
  }
  try {
    return await response.json();
  } catch (error) {
    throw new ProcessorError('processor_bad_answer', 'The payment processor is unavailable.', { cause: error });
  }
}

/**
 * The request with the current token. A 401 (a token revoked or expired before its time) fetches a
 * new token and sends once more; a second 401 stands. Unreachable is transient.
 */
export async function authorizedFetch(fetchImpl: Fetch, url: string, init: RequestInit, credentials: ServiceCredentials): Promise<Response> {
  const first = await send(fetchImpl, url, init, credentials);
  if (first.response.status !== 401) return first.response;
  await first.response.body?.cancel();
  credentials.refused(first.authorization);
  return (await send(fetchImpl, url, init, credentials)).response;
}

/** One request with the current token, and the token it carried. */
async function send(fetchImpl: Fetch, url: string, init: RequestInit, credentials: ServiceCredentials): Promise<{ response: Response; authorization: string }> {
  const authorization = await credentials.authorization(init.signal ?? undefined);
  try {
    const response = await fetchImpl(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), authorization } });
    return { response, authorization };
  } catch (error) {
    if (init.signal?.aborted) throw error;
    throw new TransientError('payments service unreachable', { cause: error });
  }
}

async function errorCodeOf(response: Response): Promise<string | undefined> {
  try {
    const parsed = safeParseCold(errorAnswerSchema, await response.json());
    return parsed.success ? parsed.data.error.code : undefined;
  } catch {
    return undefined;
  }
}

export class HttpPaymentsService implements PaymentProcessor {
  constructor(
    private readonly baseUrl: string,
    private readonly credentials: ServiceCredentials,
    private readonly fetchImpl: Fetch = fetch,
  ) {}

  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    const body = await call(this.fetchImpl, new URL('/payments', this.baseUrl).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': request.idempotency_key },
      body: JSON.stringify(request),
      ...(signal ? { signal } : {}),
    }, 'payments', this.credentials);
    const parsed = safeParseCold(paymentAnswerSchema, body);
    if (!parsed.success) throw new ProcessorError('processor_bad_answer', 'The payment processor is unavailable.');
    if (parsed.data.outcome !== 'declined') return parsed.data;
    const { card_brand, ...decline } = parsed.data;
    const network = cardNetworkOf(card_brand);
    return { ...decline, ...(network ? { card_network: network } : {}) };
  }

  async findRefund(query: RefundQuery, signal?: AbortSignal): Promise<ProcessorRefund | undefined> {
    const url = new URL(`/refunds/${encodeURIComponent(query.refund_id)}`, this.baseUrl).toString();
    const body = await call(this.fetchImpl, url, { method: 'GET', ...(signal ? { signal } : {}) }, 'payments', this.credentials, { notFound: true });
    if (body === NOT_FOUND) return undefined;
    const parsed = safeParseCold(refundAnswerSchema, body);
    if (!parsed.success) throw new ProcessorError('processor_bad_answer', 'The payment processor is unavailable.');
    return parsed.data;
  }
}

export class HttpAccountDirectory implements AccountDirectory {
  constructor(
    private readonly baseUrl: string,
    private readonly credentials: ServiceCredentials,
    private readonly fetchImpl: Fetch = fetch,
  ) {}

  async getAccount(userId: string, signal?: AbortSignal): Promise<AccountSnapshot> {
    const body = await call(this.fetchImpl, new URL(`/accounts/${encodeURIComponent(userId)}`, this.baseUrl).toString(), {
      method: 'GET',
      ...(signal ? { signal } : {}),
    }, 'accounts', this.credentials);
    const parsed = safeParseCold(accountSnapshotSchema, body);
    if (!parsed.success) throw new ProcessorError('accounts_bad_answer', 'The payment processor is unavailable.');
    return parsed.data;
  }
}

/** Routes a payment to the processor of its rail: cards to Stripe, ACH and pinless to the payments service. */
export class RailRouter implements PaymentProcessor {
  constructor(private readonly rails: Record<PaymentRequest['rail'], PaymentProcessor>) {}

  submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    return this.rails[request.rail].submit(request, signal);
  }

  async findRefund(query: RefundQuery, signal?: AbortSignal): Promise<ProcessorRefund | undefined> {
    const processor = this.rails[query.rail];
    if (!processor.findRefund) throw new ProcessorError('refund_lookup_unavailable', `the ${query.rail} processor cannot look up refunds`);
    return processor.findRefund(query, signal);
  }
}
