import * as z from 'zod';

/**
 * The one identifier schema (DESIGN 8) for every entry point: user ids, subscription ids, event
 * ids, in paths, bodies, metadata and stream records. 1 to 256 characters, any printable character
 * except `/`, `#`, whitespace and control characters: `auth0|5f7c8ec7c33c6c004bbafe82` and
 * `google-oauth2|1043…` are ids; whatever a stream or webhook may store, the API can read.
 */
export const ID_MAX_LENGTH = 256;
// \p{C}: control, format, unassigned, private use; \s: whitespace; '/' and '#' take part in our keys and paths.
const ID_PATTERN = /^[^\s\p{C}/#]+$/u;

export const idSchema = z
  .string()
  .min(1, 'an id cannot be empty')
  .max(ID_MAX_LENGTH, `an id is at most ${ID_MAX_LENGTH} characters`)
  .regex(ID_PATTERN, 'an id cannot contain "/", "#", whitespace or control characters');
