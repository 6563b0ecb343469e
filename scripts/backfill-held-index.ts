/**
 * `npm run backfill:held-index -- --table <billing-activity table> [--dry-run] [options]`
 *
 * Gives every period a hold keeps off the schedule the `held_shard`/`held_at` key its writers derive
 * now (`HELD#n`, since when it is held): periods held before the held index existed (a record's own
 * ACH hold, from before instruments) get one, so the daily sweep and an operator's release see them
 * (src/adapters/dynamodb/due-index-backfill.ts; deploy note in docs/decisions.md). Idempotent;
 * conditional on each record's version; prints a JSON report on stdout. Options as backfill:due-index:
 *
 *   --table <name>          billing-activity table (default $BILLING_ACTIVITY_TABLE)
 *   --region <region>       default $AWS_REGION
 *   --endpoint <url>        DynamoDB Local (e.g. http://127.0.0.1:8000); absent in AWS
 *   --status-shards <n>     the functions' STATUS_SHARD_COUNT (default $STATUS_SHARD_COUNT or 16)
 *   --segments <n>          parallel scan segments (default 1)
 *   --segment <i>           only this segment (run one process per segment); default all of them
 *   --page-size <n>         items per Scan page (default 500)
 *   --concurrency <n>       updates in flight per segment (default 16)
 *   --dry-run               write nothing; report what would be written
 */
import { backfillHeldIndex } from '../src/adapters/dynamodb/due-index-backfill.js';
import { runIndexBackfill } from './index-backfill-cli.js';

await runIndexBackfill('backfill:held-index', backfillHeldIndex);
