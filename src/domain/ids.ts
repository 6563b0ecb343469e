import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';

/**
 * The one identifier schema (DESIGN 8), used at every entry point: API path and body ids, webhook
 * bodies (ACH references, balance events), Stripe metadata, memberships stream records and the
 * queue messages. Whatever a stream or webhook may store, the API can read back.
 *
 * 1 to 256 characters (Unicode code points: the `u` flag makes the quantifier count them), any
 * printable character except `/` (a path separator), `#` (our key separator) and whitespace;
 * control, format, unassigned, private-use and lone-surrogate code points (Unicode category C)
 * are refused too. Identity providers' ids such as `auth0|5f7c8ec7c33c6c004bbafe82` or
 * `google-oauth2|104…` pass unchanged: nothing is trimmed or normalised, the id stored is the id sent.
 *
 * At most 768 bytes of UTF-8 as well (256 characters of any script but emoji and other
 * astral-plane characters, which take 4 bytes): ids end up inside DynamoDB sort keys (a loan id
 * in the payments table's `LOAN#{loan_id}#STATUS#…#PAYMENT#…`), whose limit is 1024 bytes, and
 * an id the table cannot store must be a 400, never a 500.
 */

export const ID_MAX_LENGTH = 256;
export const ID_MAX_UTF8_BYTES = 768;

export const ID_PATTERN = /^[^\p{C}\p{Z}\s/#]{1,256}$/u;

export const idSchema = lazySchema(() => z.string().check(z.regex(ID_PATTERN, `1 to ${ID_MAX_LENGTH} printable characters, without '/', '#', whitespace or control characters`), z.refine((value) => utf8Length(value) <= ID_MAX_UTF8_BYTES, `at most ${ID_MAX_UTF8_BYTES} bytes of UTF-8`)));

/** UTF-8 length without allocating; stops counting once past the limit (long inputs fail the pattern anyway). */
function utf8Length(value: string): number {
  let bytes = 0;
  for (const char of value) {
    const cp = char.codePointAt(0)!;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes > ID_MAX_UTF8_BYTES) break;
  }
  return bytes;
}
