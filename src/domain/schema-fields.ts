import * as z from './zod.js';
import { lazySchema } from './lazy-schema.js';

/** A stored instant: written by us, so only its presence is checked on read. */
export const instant = lazySchema(() => z.string().check(z.minLength(1)));

// One immutable instance per field kind, shared: separate copies were ~160 zod instances on a cold start's first read.
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

export function withFields<T>(build: (f: SharedFields) => T): T {
  shared ??= sharedFields();
  return build(shared);
}
