/**
 * `npm run reconcile:gauges -- --table <billing-activity table> [--dry-run] [options]`
 *
 * Makes the gauge counters (src/adapters/dynamodb/gauge-counters.ts) agree with the failing-index
 * and dunning-index of an existing table: counts the indexes once (COUNT queries) and adds the
 * difference to the counters (src/adapters/dynamodb/gauge-reconcile.ts; docs/runbook.md "Gauge
 * counters"). Counts again when a class-changing write lands while it counts; writes nothing when
 * writes keep landing. Idempotent; prints a JSON report on stdout.
 *
 *   --table <name>          billing-activity table (default $BILLING_ACTIVITY_TABLE)
 *   --region <region>       default $AWS_REGION
 *   --endpoint <url>        DynamoDB Local (e.g. http://127.0.0.1:8000); absent in AWS
 *   --status-shards <n>     the functions' STATUS_SHARD_COUNT (default $STATUS_SHARD_COUNT or 16)
 *   --settle-ms <n>         wait for the indexes between the counter read and the count (default 2000)
 *   --rounds <n>            counts to try while writes land (default 5)
 *   --dry-run               write nothing; report the correction
 */
import { parseArgs } from 'node:util';
import { createDynamoClient } from '../src/adapters/dynamodb/client.js';
import { DEFAULT_STATUS_SHARD_COUNT } from '../src/adapters/dynamodb/billing-item.js';
import { reconcileGauges } from '../src/adapters/dynamodb/gauge-reconcile.js';

function fail(message: string): never {
  process.stderr.write(`reconcile:gauges: ${message}\n`);
  process.exit(2);
}

function intOption(name: string, text: string | undefined, fallback: number, min: number): number {
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
        'settle-ms': { type: 'string' },
        rounds: { type: 'string' },
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
  process.stdout.write('usage: npm run reconcile:gauges -- --table <billing-activity table> [--dry-run] [--region r] [--endpoint url] [--status-shards 16] [--settle-ms 2000] [--rounds 5]\n');
  process.exit(0);
}

const table = values.table ?? process.env.BILLING_ACTIVITY_TABLE ?? fail('--table is required (the billing-activity table name)');
const region = values.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? (values.endpoint ? 'local' : fail('--region (or AWS_REGION) is required'));
const shardCount = intOption('status-shards', values['status-shards'] ?? process.env.STATUS_SHARD_COUNT, DEFAULT_STATUS_SHARD_COUNT, 1);

const client = createDynamoClient({ region, ...(values.endpoint ? { endpoint: values.endpoint } : {}) }, { maxAttempts: 10 });
const started = Date.now();
try {
  const report = await reconcileGauges({
    client,
    table,
    shardCount,
    dryRun: values['dry-run'],
    settleMs: intOption('settle-ms', values['settle-ms'], 2000, 0),
    maxRounds: intOption('rounds', values.rounds, 5, 1),
  });
  process.stdout.write(`${JSON.stringify({ table, shardCount, seconds: Math.round((Date.now() - started) / 100) / 10, ...report }, null, 2)}\n`);
} catch (error) {
  fail((error as Error).message);
} finally {
  client.destroy();
}
