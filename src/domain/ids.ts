import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';

/**
 * The one identifier schema (DESIGN 8), at every entry point, so whatever a stream or webhook stores the
 * API can read back. No `/` (paths) or `#` (our key separator); nothing trimmed. At most 768 bytes: ids
 * end up inside DynamoDB sort keys (1024 bytes), and an id the table cannot store must be a 400.
 */

export const ID_MAX_LENGTH = 256;
export const ID_MAX_UTF8_BYTES = 768;

export const ID_PATTERN = /^[^\p{C}\p{Z}\s/#]{1,256}$/u;

export const idSchema = lazySchema(() => z.string().check(z.regex(ID_PATTERN, `1 to ${ID_MAX_LENGTH} printable characters, without '/', '#', whitespace or control characters`), z.refine((value) => utf8Length(value) <= ID_MAX_UTF8_BYTES, `at most ${ID_MAX_UTF8_BYTES} bytes of UTF-8`)));

/** Without allocating; stops once past the limit. */
function utf8Length(value: string): number {
  let bytes = 0;
  for (const char of value) {
    const cp = char.codePointAt(0)!;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes > ID_MAX_UTF8_BYTES) break;
  }
  return bytes;
}
