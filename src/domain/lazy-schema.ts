import * as z from './zod.js';

/**
 * A zod schema built on first use instead of at import (cold start, docs/decisions.md).
 *
 * Constructing a zod schema is not free (each `z.string()`, `.check(...)`, `z.optional(...)` makes an
 * instance), and a module of schemas built at import makes every function that imports it pay for
 * all of them, used or not. `lazySchema(() => z.object({...}))` returns an object that becomes that
 * schema the first time anything is read from it (a parse, `.shape`, `z.optional()`, being parsed or
 * converted to JSON Schema as a field of another schema). It has the schema's type, so call sites,
 * `z.infer` and composition are unchanged, and it is still the one schema of its message, built
 * once and shared by producer and consumer.
 *
 * How: the stand-in is an empty object whose prototype is a trap (a Proxy). The first property
 * read that reaches the trap runs `build`, gives the stand-in the schema's prototype and
 * initialises it as a zod instance of the same constructor and definition (zod's constructors are
 * plain functions of `this`). From then on it is an ordinary zod schema, no proxy in the way of a
 * parse, and the very object every other schema and map already holds: identity holds
 * (toJSONSchema's bookkeeping, maps keyed by schema, registry metadata such as `.describe()`, which
 * is copied over).
 */
export function lazySchema<T extends object>(build: () => T): T {
  let state: 'waiting' | 'building' | 'built' = 'waiting';
  const become = (stand: object): void => {
    if (state === 'built') return;
    if (state === 'building') throw new Error('a lazy schema was used while it was being built (a schema that contains itself needs z.lazy)');
    state = 'building';
    let schema: ZodInstance;
    try {
      schema = build() as unknown as ZodInstance;
    } catch (error) {
      state = 'waiting';
      throw error;
    }
    Object.setPrototypeOf(stand, Object.getPrototypeOf(schema));
    schema._zod.constr.call(stand, schema._zod.def);
    const self = stand as ZodInstance;
    if (schema._zod.parent !== undefined) self._zod.parent = schema._zod.parent;
    const meta = z.globalRegistry.get(schema as unknown as z.core.$ZodType);
    if (meta !== undefined) z.globalRegistry.add(self as unknown as z.core.$ZodType, meta);
    state = 'built';
    builtCount += 1;
  };
  const trap = new Proxy(Object.create(null) as object, {
    get: (_, key, receiver: object) => (become(stand), Reflect.get(stand, key, receiver)),
    set: (_, key, value, receiver: object) => (become(stand), Reflect.set(stand, key, value, receiver)),
    has: (_, key) => (become(stand), Reflect.has(stand, key)),
  });
  const stand = Object.create(trap) as T;
  return stand;
}

let builtCount = 0;

/** How many lazy schemas of this process have been built so far (tests: an import builds none). */
export function lazySchemasBuilt(): number {
  return builtCount;
}

/** What `lazySchema` uses of a zod instance's internals (zod's `$constructor` instances). */
interface ZodInstance {
  readonly _zod: { readonly def: unknown; readonly constr: (this: unknown, def: unknown) => unknown; parent?: unknown };
}

/**
 * The parse context for one parse of `schema` in code that may run cold: jitless for its first
 * `JIT_AFTER` parses, zod's default after. On an object schema's first parse zod compiles a parser
 * for its shape (generated code, `new Function`): ~10 ms of CPU for the billing record's, more
 * than the parse itself for the few parses of a cold start, and ~10x faster per parse once a warm
 * function parses many items. Same validation either way (`jitless` only skips that fast path).
 */
export function coldParseContext(schema: object): z.core.ParseContext<z.core.$ZodIssue> | undefined {
  const parsed = parses.get(schema) ?? 0;
  if (parsed >= JIT_AFTER) return undefined;
  parses.set(schema, parsed + 1);
  return JITLESS;
}

/**
 * `schema.safeParse(data)` for code that may run cold: every outside input parsed at an edge (SQS
 * bodies, Kinesis and stream records, HTTP bodies and parameters, stored items, service answers)
 * goes through here or `parseCold`, so no call site pays zod's parser compilation on a cold start.
 */
export function safeParseCold<S extends z.ZodMiniType>(schema: S, data: unknown): z.core.util.SafeParseResult<z.output<S>> {
  return schema.safeParse(data, coldParseContext(schema));
}

/** `schema.parse(data)` (throws the ZodError) for code that may run cold; see `safeParseCold`. */
export function parseCold<S extends z.ZodMiniType>(schema: S, data: unknown): z.output<S> {
  return schema.parse(data, coldParseContext(schema));
}

const JIT_AFTER = 32;
const JITLESS = Object.freeze({ jitless: true });
const parses = new WeakMap<object, number>();
