/**
 * The index backfills' command line (`backfill:due-index`, `backfill:held-index`): one scan of the
 * billing-activity table keying each record as its writers would (src/adapters/dynamodb/due-index-backfill.ts).
 */
import { parseArgs } from 'node:util';
import { createDynamoClient } from '../src/adapters/dynamodb/client.js';
import { DEFAULT_STATUS_SHARD_COUNT } from '../src/adapters/dynamodb/billing-item.js';
import type { DueIndexBackfillOptions, DueIndexBackfillReport } from '../src/adapters/dynamodb/due-index-backfill.js';

export async function runIndexBackfill(command: string, backfill: (options: DueIndexBackfillOptions) => Promise<DueIndexBackfillReport>): Promise<void> {
  function fail(message: string): never {
    process.stderr.write(`${command}: ${message}\n`);
    process.exit(2);
  }

  function positiveInt(name: string, text: string | undefined, fallback: number, min = 1): number {
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) fail(`--${name} must be an integer >= ${min} (got ${text})`);
    return n;
  }

  function parse() {
    try {
      return parseArgs({
        options: {
          table: { type: 'string' },
          region: { type: 'string' },
          endpoint: { type: 'string' },
          'status-shards': { type: 'string' },
          segments: { type: 'string' },
          segment: { type: 'string' },
          'page-size': { type: 'string' },
          concurrency: { type: 'string' },
          'dry-run': { type: 'boolean', default: false },
          help: { type: 'boolean', short: 'h', default: false },
        },
      }).values;
    } catch (error) {
      return fail(`${(error as Error).message} (try --help)`);
    }
  }

  const values = parse();
  if (values.help) {
    process.stdout.write(`usage: npm run ${command} -- --table <billing-activity table> [--dry-run] [--region r] [--endpoint url] [--status-shards 16] [--segments n [--segment i]] [--page-size 500] [--concurrency 16]\n`);
    process.exit(0);
  }

  const table = values.table ?? process.env.BILLING_ACTIVITY_TABLE ?? fail('--table is required (the billing-activity table name)');
  const region = values.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? (values.endpoint ? 'local' : fail('--region (or AWS_REGION) is required'));
  const shardCount = positiveInt('status-shards', values['status-shards'] ?? process.env.STATUS_SHARD_COUNT, DEFAULT_STATUS_SHARD_COUNT);
  const totalSegments = positiveInt('segments', values.segments, 1);
  const segment = values.segment === undefined ? undefined : positiveInt('segment', values.segment, 0, 0);
  if (segment !== undefined && segment >= totalSegments) fail(`--segment must be below --segments (${totalSegments})`);

  const client = createDynamoClient({ region, ...(values.endpoint ? { endpoint: values.endpoint } : {}) }, { maxAttempts: 10 });
  const started = Date.now();
  let pages = 0;
  try {
    const report = await backfill({
      client,
      table,
      shardCount,
      dryRun: values['dry-run'],
      totalSegments,
      ...(segment !== undefined ? { segment } : {}),
      pageSize: positiveInt('page-size', values['page-size'], 500),
      concurrency: positiveInt('concurrency', values.concurrency, 16),
      onProgress: (r) => {
        pages += 1;
        if (pages % 20 === 0) process.stderr.write(`${command}: ${r.scanned} scanned, ${r.keyed} keyed (${r.rekeyed} rekeyed), ${r.unkeyed} unkeyed, ${r.unchanged} unchanged\n`);
      },
    });
    process.stdout.write(`${JSON.stringify({ table, shardCount, totalSegments, segment: segment ?? 'all', seconds: Math.round((Date.now() - started) / 100) / 10, ...report }, null, 2)}\n`);
    process.exitCode = report.corrupt > 0 ? 1 : 0;
  } finally {
    client.destroy();
  }
}
