import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { streamAcrossShards, type ShardQueryResult, type ShardedStream } from '../../../src/adapters/dynamodb/pagination.js';
import type { Item } from '../../../src/adapters/dynamodb/attribute-codec.js';

/**
 * streamAcrossShards over in-memory shards that answer like DynamoDB: ascending by sort key then
 * id, at most `limit` items, LastEvaluatedKey when more may follow. `omitKeyOnFullPage` imitates
 * DynamoDB Local, which leaves it out on a full page that ends on items tied at the range bound.
 */
function shards(values: string[][], options: { omitKeyOnFullPage?: boolean; failQuery?: number } = {}) {
  const data = values.map((shard, s) => shard.map((at, i) => ({ at, id: `s${s}-${String(i).padStart(3, '0')}` })).sort((a, b) => (a.at + a.id).localeCompare(b.at + b.id)));
  const queries: { shard: number; limit: number }[] = [];
  const stream = (pageSize: number, queryLimit: number): ShardedStream => ({
    shardCount: values.length,
    pageSize,
    queryLimit,
    async query(shard: number, startKey: Record<string, AttributeValue> | undefined, limit: number): Promise<ShardQueryResult> {
      queries.push({ shard, limit });
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (options.failQuery === queries.length) throw new Error('query failed');
      const after = startKey ? `${startKey.at!.S}${startKey.id!.S}` : '';
      const rest = data[shard]!.filter((r) => r.at + r.id > after);
      const page = rest.slice(0, limit);
      const more = rest.length > limit || (rest.length === limit && !options.omitKeyOnFullPage);
      const last = page.at(-1);
      return {
        items: page.map((r) => ({ at: { S: r.at }, id: { S: r.id } })),
        lastEvaluatedKey: more && last ? { at: { S: last.at }, id: { S: last.id } } : undefined,
      };
    },
    sortValue: (item: Item) => item.at!.S!,
    resumeKeyOf: (item: Item) => ({ at: item.at!.S!, id: item.id!.S! }),
  });
  return { stream, queries, total: data.flat().length };
}

async function all(pages: AsyncIterable<Item[]>): Promise<Item[][]> {
  const out: Item[][] = [];
  for await (const page of pages) out.push(page);
  return out;
}

const t = (n: number) => `2026-12-01T00:00:${String(n).padStart(2, '0')}Z`;

describe('streamAcrossShards', () => {
  it('takes shards in turn when every item is due at the same instant (billing day), not all of shard 0 first', async () => {
    const { stream } = shards(Array.from({ length: 4 }, () => Array.from({ length: 30 }, () => t(0))));
    const [first] = await all(streamAcrossShards(stream(20, 10)));
    const shardOfItem = (item: Item) => item.id!.S!.slice(0, 2);
    const counts = new Map<string, number>();
    for (const item of first!) counts.set(shardOfItem(item), (counts.get(shardOfItem(item)) ?? 0) + 1);
    // The first page of 20 holds 5 of each shard's tied items.
    expect([...counts.entries()].sort()).toEqual([['s0', 5], ['s1', 5], ['s2', 5], ['s3', 5]]);
  });

  it('yields every item once, in global sort-key order across shards, in pages of pageSize', async () => {
    const { stream, total } = shards([
      [t(1), t(5), t(5), t(9), t(20)],
      [t(2), t(5), t(7)],
      [],
      [t(0), t(5), t(5), t(5), t(30), t(31), t(32)],
    ]);
    const pages = await all(streamAcrossShards(stream(4, 2)));
    expect(pages.map((p) => p.length)).toEqual([4, 4, 4, 3]);
    const flat = pages.flat();
    expect(flat).toHaveLength(total);
    expect(new Set(flat.map((i) => i.id!.S)).size).toBe(total);
    const order = flat.map((i) => i.at!.S!);
    expect(order).toEqual([...order].sort());
  });

  it('reads each shard in queries of queryLimit items: the query count is what a bare client would send', async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => t(i % 60));
    const { stream, queries } = shards([many(25), many(10), many(3), many(0)]);
    const pages = await all(streamAcrossShards(stream(7, 10)));
    expect(pages.flat()).toHaveLength(38);
    // 25 → 10, 10, 5; 10 → 10 and a confirming empty one (a full page is never the end); 3; 0.
    expect(queries.filter((q) => q.shard === 0)).toHaveLength(3);
    expect(queries.filter((q) => q.shard === 1)).toHaveLength(2);
    expect(queries.filter((q) => q.shard === 2)).toHaveLength(1);
    expect(queries.filter((q) => q.shard === 3)).toHaveLength(1);
    expect(queries.every((q) => q.limit === 10)).toBe(true);
  });

  it('does not take a full page without LastEvaluatedKey as the end (DynamoDB Local at a tied bound)', async () => {
    const { stream } = shards([[t(5), t(5), t(5), t(5), t(5)], [t(5)]], { omitKeyOnFullPage: true });
    const pages = await all(streamAcrossShards(stream(10, 5)));
    expect(pages.flat()).toHaveLength(6);
  });

  it('a consumer that stops after the first page sends no further query', async () => {
    const { stream, queries } = shards([Array.from({ length: 50 }, (_, i) => t(i)), Array.from({ length: 50 }, (_, i) => t(i))]);
    for await (const page of streamAcrossShards(stream(3, 20))) {
      expect(page).toHaveLength(3);
      break;
    }
    expect(queries).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(queries).toHaveLength(2);
  });

  it('a failed query fails the page that needs it; a read ahead that fails after the consumer stopped is dropped quietly', async () => {
    const { stream } = shards([[t(1), t(2)], [t(3)]], { failQuery: 2 });
    await expect(all(streamAcrossShards(stream(5, 10)))).rejects.toThrow('query failed');
    // Shard 0 is read ahead while half of its first query is unread; the consumer stops first.
    const ahead = shards([Array.from({ length: 4 }, (_, i) => t(i))], { failQuery: 2 });
    const iterator = streamAcrossShards(ahead.stream(1, 4));
    for (let n = 0; n < 3; n++) expect((await iterator.next()).value).toHaveLength(1);
    await iterator.return();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(ahead.queries).toHaveLength(2);
  });

  it('refuses a page size outside 1..1000', async () => {
    const { stream } = shards([[t(1)]]);
    await expect(all(streamAcrossShards(stream(0, 10)))).rejects.toThrow(/page size/);
    await expect(all(streamAcrossShards(stream(1001, 10)))).rejects.toThrow(/page size/);
  });
});
