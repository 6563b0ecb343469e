import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';

/** A stored instant: written by us, so only its presence is checked on read. */
export const instant = lazySchema(() => z.string().check(z.minLength(1)));

/*
 * Field schemas many fields share, built once with the record schemas that use them (a record
 * schema of separate copies was ~160 zod instances to construct on a cold start's first read; zod
 * schemas are immutable, so one instance validates, reports and converts exactly as a copy would).
 */
function sharedFields() {
  const text = z.string().check(z.minLength(1));
  const count = z.int().check(z.nonnegative());
  const int = z.int();
  return {
    text,
    optionalText: z.optional(text),
    optionalString: z.optional(z.string()),
    count,
    optionalCount: z.optional(count),
    optionalInt: z.optional(int),
    optionalBoolean: z.optional(z.boolean()),
    optionalInstant: z.optional(instant),
  };
}
export type SharedFields = ReturnType<typeof sharedFields>;
let shared: SharedFields | undefined;

/** Builds a schema from the shared field schemas (built with the first schema that asks for them). */
export function withFields<T>(build: (f: SharedFields) => T): T {
  shared ??= sharedFields();
  return build(shared);
}
