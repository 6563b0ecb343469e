import * as z from '../../domain/zod.js';
import { lazySchema, safeParseCold } from '../../domain/lazy-schema.js';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { PageRequest } from '../../domain/ports/page.js';
import type { Item } from './attribute-codec.js';
import { InvalidPageRequestError } from './errors.js';

/**
 * Opaque cursors (base64url of JSON) and pagination over sharded GSIs.
 * Every key attribute of these tables is a string, so a resume key is stored as `{ name: value }`.
 */

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 1000;

export type StartKey = Record<string, string>;

export function pageLimit(page: PageRequest | undefined): number {
  const limit = page?.limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new InvalidPageRequestError(`page limit must be an integer between 1 and ${MAX_PAGE_LIMIT}`);
  }
  return limit;
}

export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor<T>(cursor: string, schema: z.ZodMiniType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidPageRequestError('malformed page cursor');
  }
  const parsed = safeParseCold(schema, json);
  if (!parsed.success) throw new InvalidPageRequestError('malformed page cursor');
  return parsed.data;
}

const startKeySchema = lazySchema(() => z.record(z.string(), z.string()));

export function toStartKey(key: Item): StartKey {
  const out: StartKey = {};
  for (const [name, value] of Object.entries(key)) {
    if (value.S === undefined) throw new TypeError(`key attribute ${name} is not a string`);
    out[name] = value.S;
  }
  return out;
}

export function fromStartKey(key: StartKey): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const [name, value] of Object.entries(key)) out[name] = { S: value };
  return out;
}

/**
 * Decodes a single-query cursor and checks it belongs to this query: exactly `keyNames`, and the
 * `fixed` attributes (the partition the caller asked for) unchanged, so a cursor cannot be replayed
 * against another user's partition.
 */
export function decodeStartKey(
  cursor: string | null | undefined,
  keyNames: readonly string[],
  fixed: Readonly<Record<string, string>>,
): Record<string, AttributeValue> | undefined {
  if (cursor === undefined || cursor === null) return undefined;
  const key = decodeCursor(cursor, startKeySchema);
  const names = Object.keys(key).sort();
  if (names.length !== keyNames.length || [...keyNames].sort().some((n, i) => names[i] !== n)) {
    throw new InvalidPageRequestError('page cursor does not belong to this listing');
  }
  for (const [name, value] of Object.entries(fixed)) {
    if (key[name] !== value) throw new InvalidPageRequestError('page cursor does not belong to this listing');
  }
  return fromStartKey(key);
}

export function encodeStartKey(lastEvaluatedKey: Record<string, AttributeValue> | undefined): string | null {
  return lastEvaluatedKey ? encodeCursor(toStartKey(lastEvaluatedKey)) : null;
}

/* ---------------- sharded GSI listings ---------------- */

/** Per shard: null = not started, 'done' = exhausted, or the key to resume after. */
export type ShardPosition = null | 'done' | StartKey;

const shardedCursorSchema = lazySchema(() => z.object({
  q: z.string(),
  p: z.array(z.union([z.null(), z.literal('done'), startKeySchema])),
}));

export interface ShardQueryResult {
  readonly items: Item[];
  readonly lastEvaluatedKey?: Record<string, AttributeValue> | undefined;
}

export interface ShardedListing {
  readonly shardCount: number;
  /** Identifies the query (status, bounds, shard count); a cursor from another query is refused. */
  readonly fingerprint: string;
  readonly limit: number;
  readonly cursor?: string | null | undefined;
  /** One shard, in its index order, from `startKey` (exclusive), at most `limit` items. */
  query(shard: number, startKey: Record<string, AttributeValue> | undefined, limit: number): Promise<ShardQueryResult>;
  /** The index sort key; the merge takes the smallest head first. */
  sortValue(item: Item): string;
  /** The ExclusiveStartKey that resumes this shard right after `item` (index key + table key). */
  resumeKeyOf(item: Item): StartKey;
}

/**
 * Every shard queried for its share of the page, merged by sort key up to the frontier (the smallest
 * last value among shards with more): no unread item can precede what is taken, so the order holds
 * across pages. A page may be short while `next` is not null.
 */
export async function listAcrossShards(listing: ShardedListing): Promise<{ items: Item[]; next: string | null }> {
  let positions: ShardPosition[] = Array.from({ length: listing.shardCount }, () => null);
  if (listing.cursor !== undefined && listing.cursor !== null) {
    const decoded = decodeCursor(listing.cursor, shardedCursorSchema);
    if (decoded.q !== listing.fingerprint || decoded.p.length !== listing.shardCount) {
      throw new InvalidPageRequestError('page cursor does not belong to this listing');
    }
    positions = decoded.p;
  }
  const live = positions.filter((p) => p !== 'done').length;
  const share = Math.max(1, Math.ceil(listing.limit / Math.max(1, live)));
  const results = await Promise.all(
    positions.map(async (position, shard) => {
      if (position === 'done') return { items: [] as Item[], exhausted: true };
      const out = await listing.query(shard, position ? fromStartKey(position) : undefined, share);
      // A full page is never the end: DynamoDB Local omits LastEvaluatedKey on a page ending on items
      // tied at a range bound; AWS returns one whenever the limit is reached.
      return { items: out.items, exhausted: !out.lastEvaluatedKey && out.items.length < share };
    }),
  );
  let frontier: string | undefined;
  for (const result of results) {
    const last = result.items.at(-1);
    if (result.exhausted || !last) continue;
    const value = listing.sortValue(last);
    if (frontier === undefined || value < frontier) frontier = value;
  }
  const heads = results.map(() => 0);
  const taken: Item[] = [];
  while (taken.length < listing.limit) {
    let best = -1;
    let bestValue = '';
    for (let shard = 0; shard < results.length; shard++) {
      const item = results[shard]!.items[heads[shard]!];
      if (!item) continue;
      const value = listing.sortValue(item);
      if (best < 0 || value < bestValue) {
        best = shard;
        bestValue = value;
      }
    }
    if (best < 0 || (frontier !== undefined && bestValue > frontier)) break;
    taken.push(results[best]!.items[heads[best]!]!);
    heads[best]! += 1;
  }
  const nextPositions: ShardPosition[] = results.map((result, shard) => {
    const count = heads[shard]!;
    if (count === result.items.length && result.exhausted) return 'done';
    if (count > 0) return listing.resumeKeyOf(result.items[count - 1]!);
    return positions[shard] ?? null;
  });
  const next = nextPositions.every((p) => p === 'done') ? null : encodeCursor({ q: listing.fingerprint, p: nextPositions });
  return { items: taken, next };
}

/** Items per Query of a sharded stream: as many as DynamoDB returns in one page (it stops at 1 MB anyway). */
export const STREAM_QUERY_LIMIT = 1000;

export interface ShardedStream {
  readonly shardCount: number;
  /** Items per yielded page (the caller's unit of work), at most MAX_PAGE_LIMIT. */
  readonly pageSize: number;
  /** Items per Query of one shard (default STREAM_QUERY_LIMIT). */
  readonly queryLimit?: number;
  /** One shard, in its index order, from `startKey` (exclusive), at most `limit` items. */
  query(shard: number, startKey: Record<string, AttributeValue> | undefined, limit: number): Promise<ShardQueryResult>;
  /** The index sort key; the merge takes the smallest head first (ties by shard number). */
  sortValue(item: Item): string;
  /** The ExclusiveStartKey that resumes this shard right after `item` (index key + table key). */
  resumeKeyOf(item: Item): StartKey;
}

interface ShardReader {
  buffer: Item[];
  head: number;
  startKey: Record<string, AttributeValue> | undefined;
  done: boolean;
  pending: Promise<ShardQueryResult> | undefined;
}

/**
 * Every shard read as one stream of large Queries, merged by sort key into pages of `pageSize`, in the
 * order `listAcrossShards` gives without re-querying each shard per page. Nothing is merged while an
 * open shard has nothing buffered; a consumer that stops asking makes no further Query.
 */
export async function* streamAcrossShards(stream: ShardedStream): AsyncGenerator<Item[], void, undefined> {
  const queryLimit = stream.queryLimit ?? STREAM_QUERY_LIMIT;
  if (!Number.isInteger(stream.pageSize) || stream.pageSize < 1 || stream.pageSize > MAX_PAGE_LIMIT) {
    throw new InvalidPageRequestError(`page size must be an integer between 1 and ${MAX_PAGE_LIMIT}`);
  }
  const readers: ShardReader[] = Array.from({ length: stream.shardCount }, () => ({ buffer: [], head: 0, startKey: undefined, done: false, pending: undefined }));
  let turn = 0;
  const start = (reader: ShardReader, shard: number): void => {
    if (reader.done || reader.pending) return;
    reader.pending = stream.query(shard, reader.startKey, queryLimit);
    // Awaited when the merge needs it; a stream left early must not leave an unhandled rejection.
    reader.pending.catch(() => undefined);
  };
  const land = async (reader: ShardReader): Promise<void> => {
    const out = await reader.pending!;
    reader.pending = undefined;
    reader.buffer = [...reader.buffer.slice(reader.head), ...out.items];
    reader.head = 0;
    const last = out.items.at(-1);
    // A full page is never taken as the end (DynamoDB Local omits LastEvaluatedKey on a page that
    // ends on items tied at a range bound, see listAcrossShards): resume after its last item.
    if (!out.lastEvaluatedKey && out.items.length < queryLimit) reader.done = true;
    else reader.startKey = out.lastEvaluatedKey ?? (last ? fromStartKey(stream.resumeKeyOf(last)) : reader.startKey);
  };
  for (;;) {
    const page: Item[] = [];
    while (page.length < stream.pageSize) {
      const empty: Promise<void>[] = [];
      readers.forEach((reader, shard) => {
        if (!reader.done && reader.buffer.length - reader.head <= queryLimit / 2) start(reader, shard);
        if (reader.head >= reader.buffer.length && reader.pending) empty.push(land(reader));
      });
      if (empty.length > 0) {
        await Promise.all(empty);
        continue;
      }
      let best = -1;
      let bestValue = '';
      // Ties (a billing day's periods share one due instant) go to the shards in turn, not all of shard 0 first.
      const first = turn++ % readers.length;
      for (let k = 0; k < readers.length; k++) {
        const shard = (first + k) % readers.length;
        const reader = readers[shard]!;
        const item = reader.buffer[reader.head];
        if (!item) continue;
        const value = stream.sortValue(item);
        if (best < 0 || value < bestValue) {
          best = shard;
          bestValue = value;
        }
      }
      if (best < 0) break;
      const reader = readers[best]!;
      page.push(reader.buffer[reader.head]!);
      reader.head += 1;
    }
    if (page.length > 0) yield page;
    if (page.length < stream.pageSize) return;
  }
}
