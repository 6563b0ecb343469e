import { PutItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ReconciliationRun } from '../../domain/ports/reconciliation.js';
import type { PaymentMethod } from '../../domain/records.js';

/** A week: longer than any run takes, short enough that an abandoned run's chunks go soon. */
export const STAGE_TTL_SECONDS = 7 * 86_400;

/** `STAGE#{date}#{rail}#{run_id}`, sorted by writer and chunk number. */
export function stagedKey(date: string, rail: PaymentMethod, runId: string, writer: string, index: number): { pk: { S: string }; sk: { S: string } } {
  return { pk: { S: `STAGE#${date}#${rail}#${runId}` }, sk: { S: `${writer}#${String(index).padStart(5, '0')}` } };
}

/** One PutItem each: a hand-over stages a chunk per 500 rows, so these are few. */
export async function writeAll(client: DynamoDBClient, table: string, items: readonly Record<string, AttributeValue>[]): Promise<void> {
  for (const Item of items) await client.send(new PutItemCommand({ TableName: table, Item }));
}

interface AmendItem {
  readonly from: string;
  readonly ours: { count: number; total_cents: number };
  readonly theirs: { count: number; total_cents: number };
  readonly net_drift_cents: number;
  readonly gross_drift_cents: number;
  readonly exception_ids: readonly string[];
}

/** The run's own result plus what each later day's amendment added. */
export function foldAmendments(run: ReconciliationRun, amendments: readonly Record<string, unknown>[]): ReconciliationRun {
  if (amendments.length === 0) return run;
  const parts = amendments as unknown as AmendItem[];
  const sum = (pick: (a: AmendItem) => number) => parts.reduce((total, a) => total + pick(a), 0);
  return {
    ...run,
    ours: { count: run.ours.count + sum((a) => a.ours.count), total_cents: run.ours.total_cents + sum((a) => a.ours.total_cents) },
    theirs: { count: run.theirs.count + sum((a) => a.theirs.count), total_cents: run.theirs.total_cents + sum((a) => a.theirs.total_cents) },
    net_drift_cents: run.net_drift_cents + sum((a) => a.net_drift_cents),
    gross_drift_cents: run.gross_drift_cents + sum((a) => a.gross_drift_cents),
    exception_ids: [...run.exception_ids, ...parts.flatMap((a) => a.exception_ids)],
    amended_by: parts.map((a) => a.from).sort(),
  };
}
