/**
 * `npm run backfill:due-index -- --table <billing-activity table> [--dry-run] [options]`
 *
 * Gives every billing record the `due_shard`/`due_at` key its writers derive now (`DUE#{processor}#n`, the
 * next eligible instant): records written before the due-index existed get one, records keyed by
 * an earlier release (`{billing_status}#n`, `DUE#n`) are rewritten to it (src/adapters/dynamodb/due-index-backfill.ts;
 * docs/runbook.md "Due-index backfill": the deploy step of each due-index key change). Idempotent;
 * conditional on each record's version; prints a JSON report on stdout.
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
import { backfillDueIndex } from '../src/adapters/dynamodb/due-index-backfill.js';
import { runIndexBackfill } from './index-backfill-cli.js';

await runIndexBackfill('backfill:due-index', backfillDueIndex);
