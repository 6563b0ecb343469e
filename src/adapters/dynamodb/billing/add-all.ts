import type { BillingRecord, HistoryRow } from '../../../domain/records.js';
import { describeKey } from '../billing-item.js';
import { InvalidTransactionError } from '../errors.js';
import { addGaugeCounts, gaugeDelta, isNoChange, type GaugeCounts } from '../gauge-counters.js';
import { keyId, type BillingTables } from './tables.js';
import { MAX_TRANSACTION_ITEMS, planCreate, planGauges, planHistory, transact, type PlannedWrite } from './transaction.js';

/** One transaction's worth of records with their rows, and the gauge change they make (its counter item rides along). */
interface Chunk {
  items: PlannedWrite[];
  delta: GaugeCounts;
}

/**
 * BillingLedger.addAll: new records with their history rows, in transactions of at most 100 items.
 * A record and its rows always share one, so each chunk is atomic; chunks commit in order.
 */
export async function addAll(t: BillingTables, records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void> {
  for (const { items, delta } of chunksOf(groupsOf(t, records, history))) {
    const gauges = planGauges(t, delta);
    await transact(t, 'billing.addAll', gauges ? [...items, gauges] : items);
  }
}

/** Each record's create followed by its history rows (matched on user_id + billing_date). */
function groupsOf(t: BillingTables, records: readonly BillingRecord[], history: readonly HistoryRow[]): Map<string, { record: BillingRecord; writes: PlannedWrite[] }> {
  const groups = new Map<string, { record: BillingRecord; writes: PlannedWrite[] }>();
  for (const record of records) {
    const id = keyId(record);
    if (groups.has(id)) throw new InvalidTransactionError(`addAll: ${describeKey(t.table, record)} appears twice`);
    groups.set(id, { record, writes: [planCreate(t, record)] });
  }
  for (const row of history) {
    const group = groups.get(keyId(row));
    if (!group) throw new InvalidTransactionError(`addAll: history row ${row.last_run_date} has no record in this call`);
    group.writes.push(planHistory(t, row));
  }
  return groups;
}

function chunksOf(groups: Map<string, { record: BillingRecord; writes: PlannedWrite[] }>): Chunk[] {
  const chunks: Chunk[] = [];
  let chunk: Chunk | undefined;
  for (const [id, { record, writes }] of groups) {
    if (writes.length < 2) throw new InvalidTransactionError(`addAll: record ${id} has no history row`);
    const own = gaugeDelta(undefined, record);
    if (writes.length + (isNoChange(own) ? 0 : 1) > MAX_TRANSACTION_ITEMS) throw new InvalidTransactionError(`addAll: record ${id} has too many history rows`);
    const delta = chunk ? addGaugeCounts(chunk.delta, own) : own;
    if (chunk && chunk.items.length + writes.length + (isNoChange(delta) ? 0 : 1) > MAX_TRANSACTION_ITEMS) {
      chunks.push(chunk);
      chunk = undefined;
    }
    if (!chunk) chunk = { items: [...writes], delta: own };
    else {
      chunk.items.push(...writes);
      chunk.delta = delta;
    }
  }
  if (chunk) chunks.push(chunk);
  return chunks;
}
