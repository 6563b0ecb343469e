/**
 * The zod every schema of this codebase is written with: zod's mini build, with English issue
 * messages (the classic build registers them on first use; mini has none until configured).
 *
 * Why mini (cold start, docs/decisions.md): the classic build is ~100 KiB of every function's
 * bundle, most of it methods each schema instance carries (`.optional()`, `.min()`, ...), and
 * loading it plus building a cold start's schemas cost ~9 ms more than the same schemas in mini,
 * which writes them as functions and checks (`z.optional(s)`, `s.check(z.minLength(1))`). Parsing,
 * issues, `z.infer` and JSON Schema are zod's core either way.
 *
 * Import zod's parts by name here, never a namespace as a value (`z.core.X`, `z.locales.en`):
 * esbuild keeps a whole namespace it cannot see through, all of zod's core and every locale.
 */
import { config } from 'zod/mini';
import { en } from 'zod/locales';

config(en());

export * from 'zod/mini';
/** The error `parse` throws, as a value: `z.core.$ZodError` would pull all of zod's core namespace (every locale) into a bundle. */
export { $ZodError } from 'zod/v4/core';
