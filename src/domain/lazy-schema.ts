import * as z from './zod.js';

/**
 * A zod schema built on first use, not at import, so a cold start pays only for the schemas it uses.
 * The stand-in's prototype is a Proxy trap: the first read builds the schema and turns the stand-in
 * into that very zod instance, so identity holds and no proxy stays in the way of a parse.
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

interface ZodInstance {
  readonly _zod: { readonly def: unknown; readonly constr: (this: unknown, def: unknown) => unknown; parent?: unknown };
}

/** Jitless for a schema's first parses: zod's compiled parser costs more than a cold start's few parses save. */
export function coldParseContext(schema: object): z.core.ParseContext<z.core.$ZodIssue> | undefined {
  const parsed = parses.get(schema) ?? 0;
  if (parsed >= JIT_AFTER) return undefined;
  parses.set(schema, parsed + 1);
  return JITLESS;
}

/** `schema.safeParse(data)` for every input parsed at an edge, so none pays zod's parser compilation cold. */
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
