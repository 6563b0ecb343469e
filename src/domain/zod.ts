/**
 * zod's mini build with English messages: the classic one is ~100 KiB of every bundle (docs/decisions.md).
 * Import parts by name, never a namespace as a value: esbuild would keep all of zod's core and locales.
 */
import { config } from 'zod/mini';
import { en } from 'zod/locales';

config(en());

export * from 'zod/mini';
/** The error `parse` throws, by name (see above). */
export { $ZodError } from 'zod/v4/core';
