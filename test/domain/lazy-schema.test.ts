import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as z from '../../src/domain/zod.js';
import { coldParseContext, lazySchema, lazySchemasBuilt } from '../../src/domain/lazy-schema.js';
import { billingRecordSchema } from '../../src/domain/records.js';

const ROOT = join(import.meta.dirname, '../..');

/** The same schemas twice: built at once, and through lazySchema (fields, `z.optional()`, `z.extend(s, shape)` of lazy ones). */
function schemas(lazy: boolean) {
  const wrap = <T extends object>(build: () => T): T => (lazy ? lazySchema(build) : build());
  const instant = wrap(() => z.string().check(z.minLength(1)));
  const status = wrap(() => z.enum(['PENDING', 'FAILED']));
  const extra = wrap(() => z.object({ reason: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(20))) }));
  const record = wrap(() =>
    z
      .extend(
        z.strictObject({ id: z.string().check(z.regex(/^[a-z]+$/, 'lower-case letters only')), at: instant, status, retry_at: z.optional(instant), count: z.int().check(z.nonnegative()) }),
        extra.shape,
      )
      .check(z.describe('a record')),
  );
  const message = wrap(() => z.discriminatedUnion('kind', [z.object({ kind: z.literal('a'), record }), z.object({ kind: z.literal('b'), at: instant })]));
  return { instant, status, record, message };
}

const INPUTS: unknown[] = [
  { id: 'abc', at: 'x', status: 'PENDING', count: 0 },
  { id: 'abc', at: 'x', status: 'PENDING', count: 0, reason: '  why  ' },
  { id: 'ABC', at: '', status: 'DONE', retry_at: 3, count: -1.5, reason: '', unknown: true },
  {},
  null,
  'text',
];

describe('lazySchema', () => {
  it('builds the schema on first touch, once, and not before', () => {
    let builds = 0;
    const before = lazySchemasBuilt();
    const schema = lazySchema(() => (builds++, z.object({ a: z.string() })));
    expect(builds).toBe(0);
    expect(lazySchemasBuilt()).toBe(before);
    expect(schema.parse({ a: 'x' })).toEqual({ a: 'x' });
    expect(schema.safeParse({ a: 1 }).success).toBe(false);
    expect(Object.keys(schema.shape)).toEqual(['a']);
    expect(builds).toBe(1);
    expect(lazySchemasBuilt()).toBe(before + 1);
  });

  it('accepts, transforms and refuses exactly as the schema built at once: same data, same issues (paths, codes, messages)', () => {
    const eager = schemas(false);
    const lazy = schemas(true);
    for (const input of INPUTS) {
      for (const name of ['record', 'instant', 'status'] as const) {
        const a = eager[name].safeParse(input);
        const b = lazy[name].safeParse(input);
        expect(b.success).toBe(a.success);
        expect(b.data).toEqual(a.data);
        expect(b.error?.issues).toEqual(a.error?.issues);
      }
      for (const kind of ['a', 'b']) {
        const wrapped = { kind, record: input, at: input };
        const a = eager.message.safeParse(wrapped);
        const b = lazy.message.safeParse(wrapped);
        expect(b.success).toBe(a.success);
        expect(b.error?.issues).toEqual(a.error?.issues);
      }
    }
    expect(() => lazy.record.parse({})).toThrow(z.$ZodError);
  });

  it('is the schema itself: instanceof, methods wrap the stand-in, JSON Schema and descriptions as built at once', () => {
    const eager = schemas(false);
    const lazy = schemas(true);
    expect(lazy.record).toBeInstanceOf(z.ZodMiniObject);
    expect(lazy.status).toBeInstanceOf(z.ZodMiniEnum);
    expect(z.optional(lazy.instant).def.innerType).toBe(lazy.instant);
    expect(lazy.record.shape.at).toBe(lazy.instant);
    expect(z.globalRegistry.get(lazy.record)?.description).toBe('a record');
    expect(z.globalRegistry.get(lazy.record)).toEqual(z.globalRegistry.get(eager.record));
    for (const io of ['input', 'output'] as const) {
      expect(z.toJSONSchema(lazy.message, { io })).toEqual(z.toJSONSchema(eager.message, { io }));
      expect(z.toJSONSchema(lazy.record, { io })).toEqual(z.toJSONSchema(eager.record, { io }));
    }
    // A map keyed by a lazy schema still finds it where another schema embeds it.
    const seen: unknown[] = [];
    z.toJSONSchema(lazy.record, { override: (ctx) => void seen.push(ctx.zodSchema) });
    expect(seen).toContain(lazy.instant);
  });

  it('importing the schema and handler modules of the Lambda bundles builds none of their schemas', async () => {
    const modules = ['src/domain', 'src/handlers', 'src/adapters/dynamodb', 'src/adapters/stripe', 'src/adapters/payments-service'].flatMap((dir) =>
      readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && e.name.endsWith('.ts'))
        .map((e) => join(e.parentPath, e.name)),
    );
    expect(modules.length).toBeGreaterThan(50);
    const building: string[] = [];
    for (const file of modules) {
      const before = lazySchemasBuilt();
      await import(pathToFileURL(file).href);
      if (lazySchemasBuilt() !== before) building.push(relative(ROOT, file));
    }
    expect(building).toEqual([]);
  });

  it('every zod parse of the bundled code goes through safeParseCold / parseCold (jitless while cold), but for the listed few', () => {
    const direct: string[] = [];
    for (const dir of ['src/domain', 'src/handlers', 'src/adapters', 'src/runtime', 'src/functions']) {
      for (const entry of readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
        const file = relative(ROOT, join(entry.parentPath, entry.name));
        readFileSync(join(ROOT, file), 'utf8')
          .split('\n')
          .forEach((line, i) => {
            if (/\.(safeParse|parse)(Async)?\(/.test(line.replace(/\b(JSON|Date)\.parse\(/g, ''))) direct.push(`${file}:${i + 1}`);
          });
      }
    }
    const files = [...new Set(direct.map((d) => d.replace(/:\d+$/, '')))].sort();
    expect(files).toEqual([
      // The local processor simulator and its services' HTTP face (never bundled into a function).
      'src/adapters/processor/simulator-services.ts',
      'src/adapters/processor/simulator.ts',
      // The helpers themselves.
      'src/domain/lazy-schema.ts',
      // The schema fallback of loadBaseConfig: runs only for an environment the plain path is in doubt about.
      'src/runtime/config.ts',
    ]);
  });

  it('coldParseContext: the first 32 parses of a schema skip the compiled fast path of zod, later ones take it, and both give the same answers', () => {
    const a = lazySchema(() => z.object({ n: z.number() }));
    const b = lazySchema(() => z.object({ n: z.number() }));
    const contexts = Array.from({ length: 40 }, () => coldParseContext(a));
    expect(contexts.slice(0, 32).every((c) => c?.jitless === true)).toBe(true);
    expect(contexts.slice(32)).toEqual(Array(8).fill(undefined));
    expect(coldParseContext(b)).toEqual({ jitless: true });
    const record = { user_id: 'u', billing_date: '2026-03-01T00:00:00Z', subscription_id: 's', amount_cents: 1999, billing_status: 'PENDING', last_run_date: 'x', created_date: 'x', process: 'SCHEDULED', term: 'MONTHLY', tier: 't', payment_method: 'ach', payment_attempts: 0, version: 0 };
    const inputs = [record, { ...record, extra: 1 }, { ...record, amount_cents: 1.5, billing_status: 'NOPE', ach_exception: { code: 'x' } }, { ...record, dunning_presented_at: [''] }, {}, null];
    for (const input of inputs) {
      const jitless = billingRecordSchema.safeParse(input, { jitless: true });
      for (let i = 0; i < 3; i++) {
        const compiled = billingRecordSchema.safeParse(input);
        expect(compiled.success).toBe(jitless.success);
        expect(compiled.data).toEqual(jitless.data);
        expect(compiled.error?.issues).toEqual(jitless.error?.issues);
      }
    }
  });
});
