import * as z from 'zod';
import { lazySchema } from '../../domain/lazy-schema.js';
import { HttpError, header, parseWith, type HttpEvent } from '../shared/http.js';

/** Request parsing shared by the API routes: every outside value passes a zod schema first. */

/** Path and body ids: the one id schema of DESIGN 8 (src/domain/ids.ts). */
export { idSchema } from '../../domain/ids.js';

/** Idempotency-Key: visible ASCII, as Stripe and the IETF draft use it. */
export const idempotencyKeySchema = lazySchema(() => z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, 'visible ASCII characters only'));

/** Page size 1-100 (default 20), from a query string. */
export const limitSchema = lazySchema(() => z
  .string()
  .regex(/^\d{1,3}$/, 'an integer between 1 and 100')
  .transform(Number)
  .pipe(z.number().int().min(1).max(100))
  .default(20));

export const cursorSchema = lazySchema(() => z.string().min(1).max(4096));

export const pageQuerySchema = lazySchema(() => z.strictObject({ limit: limitSchema, next: cursorSchema.optional() }));

/** Audit reason: optional on pay and retry-billing, required on waive. */
export const reasonSchema = lazySchema(() => z.string().trim().min(1).max(1000));

export function pathParams<T extends z.ZodType>(params: Readonly<Record<string, string | undefined>>, schema: T): z.infer<T> {
  return parseWith(schema, params, 'invalid_path');
}

export function queryParams<T extends z.ZodType>(event: HttpEvent, schema: T): z.infer<T> {
  return parseWith(schema, event.queryStringParameters ?? {}, 'invalid_query');
}

export function idempotencyKey(event: HttpEvent): string {
  const value = header(event, 'idempotency-key');
  if (value === undefined) throw new HttpError(400, 'idempotency_key_required', 'the Idempotency-Key header is required');
  return parseWith(idempotencyKeySchema, value, 'invalid_idempotency_key');
}
