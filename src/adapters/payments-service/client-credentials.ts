import * as z from '../../domain/zod.js';
import { lazySchema, safeParseCold } from '../../domain/lazy-schema.js';
import { ProcessorError, ProcessorOutageError, TransientError } from '../../domain/errors.js';

type Fetch = typeof fetch;

/**
 * How a call to our services proves who is calling: the `Authorization` header to send, and a way
 * to drop a token the service refused so the next call fetches a new one.
 */
export interface ServiceCredentials {
  authorization(signal?: AbortSignal): Promise<string>;
  refused(authorization: string): void;
}

/** The client id and secret our services' token endpoint issued to us, as the secret holds them. */
export const clientCredentialsSchema = lazySchema(() => z.object({
  client_id: z.string().check(z.minLength(1), z.maxLength(256)),
  client_secret: z.string().check(z.minLength(1), z.maxLength(1024)),
}));
export type ClientCredentials = z.infer<typeof clientCredentialsSchema>;

/** RFC 6749 §5.1: the token answer; only Bearer tokens are accepted. */
const tokenAnswerSchema = lazySchema(() => z.object({
  access_token: z.string().check(z.minLength(1), z.maxLength(8192)),
  token_type: z.string().check(z.regex(/^bearer$/i)),
  expires_in: z.int().check(z.positive()),
}));

/** RFC 6749 §5.2: the errors with which a token endpoint refuses our client, not the moment. */
const REFUSED_CLIENT_ERRORS: ReadonlySet<string> = new Set(['invalid_client', 'unauthorized_client', 'invalid_grant', 'invalid_scope']);

const tokenErrorSchema = lazySchema(() => z.object({ error: z.string() }));

export interface ClientCredentialsOptions {
  readonly tokenUrl: string;
  readonly credentials: ClientCredentials;
  /** The service the token is for; an outage it causes opens that service's circuit. */
  readonly service: string;
  readonly scope?: string;
  readonly fetch?: Fetch;
  readonly nowMs?: () => number;
  /** A token is renewed this long before it expires, so no call goes out on one about to lapse. */
  readonly renewBeforeMs?: number;
}

/**
 * An OAuth 2.0 client-credentials token (RFC 6749 §4.4) from the services' token endpoint, the
 * client authenticated with HTTP Basic (§2.3.1). Cached until shortly before it expires; callers
 * waiting at the same time share one fetch. The secret and the token are never logged.
 */
export class ClientCredentialsTokens implements ServiceCredentials {
  private cached: { readonly header: string; readonly renewAtMs: number } | undefined;
  private pending: Promise<string> | undefined;
  private readonly fetchImpl: Fetch;
  private readonly nowMs: () => number;

  constructor(private readonly options: ClientCredentialsOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    this.nowMs = options.nowMs ?? Date.now;
  }

  async authorization(signal?: AbortSignal): Promise<string> {
    if (this.cached && this.nowMs() < this.cached.renewAtMs) return this.cached.header;
    this.pending ??= this.fetchToken(signal).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  refused(authorization: string): void {
    if (this.cached?.header === authorization) this.cached = undefined;
  }

  private async fetchToken(signal?: AbortSignal): Promise<string> {
    const { tokenUrl, credentials, service, scope } = this.options;
    const basic = Buffer.from(`${encodeURIComponent(credentials.client_id)}:${encodeURIComponent(credentials.client_secret)}`).toString('base64');
    const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) });
    const requestedAt = this.nowMs();
    let response: Response;
    try {
      response = await this.fetchImpl(tokenUrl, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new TransientError(`${service} token endpoint unreachable`, { cause: error });
    }
    if (response.status === 429 || response.status >= 500) throw new TransientError(`${service} token endpoint answered ${response.status}`);
    const body: unknown = await response.json().catch(() => undefined);
    if (!response.ok) {
      const refusal = safeParseCold(tokenErrorSchema, body);
      const code = refusal.success ? refusal.data.error : undefined;
      if (response.status === 401 || (code !== undefined && REFUSED_CLIENT_ERRORS.has(code))) {
        throw new ProcessorOutageError(service, 'processor_auth', { cause: new Error(`${service} token endpoint answered ${response.status} ${code ?? ''}`.trim()) });
      }
      throw new ProcessorError('processor_rejected', `The ${service} token endpoint refused the request (${response.status}).`);
    }
    const parsed = safeParseCold(tokenAnswerSchema, body);
    if (!parsed.success) throw new ProcessorError('processor_bad_answer', `The ${service} token endpoint broke its contract.`);
    const lifetimeMs = parsed.data.expires_in * 1000;
    // A short-lived token is renewed at half its life rather than never cached.
    const margin = Math.min(this.options.renewBeforeMs ?? 60_000, lifetimeMs / 2);
    const header = `Bearer ${parsed.data.access_token}`;
    this.cached = { header, renewAtMs: requestedAt + lifetimeMs - margin };
    return header;
  }
}

/** Parses the client credentials secret (JSON `{"client_id","client_secret"}`); anything else is a configuration error. */
export function parseClientCredentials(value: string): ClientCredentials | undefined {
  try {
    const parsed = safeParseCold(clientCredentialsSchema, JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
