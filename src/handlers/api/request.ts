import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { HttpError, header, parseWith, type HttpEvent } from '../shared/http.js';

/** Request parsing shared by the API routes: every outside value passes a zod schema first. */

/** Path and body ids: the one id schema of DESIGN 8 (src/domain/ids.ts). */
export { idSchema } from '../../domain/ids.js';

/** Idempotency-Key: visible ASCII, as Stripe and the IETF draft use it. */
export const idempotencyKeySchema = lazySchema(() => z.string().check(z.minLength(1), z.maxLength(255), z.regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only')));

/** Page size 1-100 (default 20), from a query string. */
export const limitSchema = lazySchema(() =>
  z._default(
    z.pipe(z.pipe(z.string().check(z.regex(/^\d{1,3}$/, 'an integer between 1 and 100')), z.transform(Number)), z.int().check(z.minimum(1), z.maximum(100))),
    20,
  ),
);

export const cursorSchema = lazySchema(() => z.string().check(z.minLength(1), z.maxLength(4096)));

export const pageQuerySchema = lazySchema(() => z.strictObject({ limit: limitSchema, next: z.optional(cursorSchema) }));

/** Audit reason: optional on pay and retry-billing, required on waive. */
export const reasonSchema = lazySchema(() => z.string().check(z.trim(), z.minLength(1), z.maxLength(1000)));

export function pathParams<T extends z.ZodMiniType>(params: Readonly<Record<string, string | undefined>>, schema: T): z.infer<T> {
  return parseWith(schema, params, 'invalid_path');
}

export function queryParams<T extends z.ZodMiniType>(event: HttpEvent, schema: T): z.infer<T> {
  return parseWith(schema, event.queryStringParameters ?? {}, 'invalid_query');
}

export function idempotencyKey(event: HttpEvent): string {
  const value = header(event, 'idempotency-key');
  if (value === undefined) throw new HttpError(400, 'idempotency_key_required', 'the Idempotency-Key header is required');
  return parseWith(idempotencyKeySchema, value, 'invalid_idempotency_key');
}
