import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { MAX_PLACEMENT_PROBES, nextFreeInstant, sameChain } from '../../../domain/chain.js';
import type { BillingTransaction } from '../../../domain/ports/billing-ledger.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../../../domain/records.js';
import { primaryKey } from '../billing-item.js';
import { isEmptyInstrumentWrite } from '../../../domain/instruments/instrument.js';
import { InvalidTransactionError, cancellationCodes } from '../errors.js';
import { addGaugeCounts, gaugeDelta, NO_GAUGE_COUNTS, type GaugeCounts } from '../gauge-counters.js';
import { send, type BillingTables } from './tables.js';
import {
  planAchRates,
  planCreate,
  planDelete,
  planGauges,
  planHistory,
  planInstruments,
  planLockRelease,
  planMovement,
  planUpdate,
  transact,
  type PlannedWrite,
} from './transaction.js';

/** A create in a planned transaction: where it is, and whether it may move (`displace`) or be dropped (`createIfAbsent`). */
interface PlannedCreate {
  readonly index: number;
  readonly record: BillingRecord;
  readonly movable: boolean;
  readonly optional: boolean;
  /** Its index in `writes` (-1: the createIfAbsent). */
  readonly at: number;
}

/**
 * BillingLedger.commit: one TransactWriteItems. A create whose key another chain's record holds is
 * placed again (chain.ts), at the cost of a read and a transaction per collision.
 */
export async function commit(t: BillingTables, tx: BillingTransaction): Promise<{ created: boolean }> {
  let attempt = tx;
  for (let probe = 0; ; probe++) {
    const { planned, creates } = planCommit(t, attempt);
    if (planned.length === 0) throw new InvalidTransactionError('commit: empty transaction');
    try {
      await transact(t, 'billing.commit', planned);
      return { created: attempt.createIfAbsent !== undefined };
    } catch (error) {
      // Only creates that may move or be dropped are looked at: every other failure is the caller's.
      const taken = takenCreates(cancellationCodes(error), creates);
      if (!taken || probe >= MAX_PLACEMENT_PROBES) throw error;
      const next = await placeAgain(t, attempt, taken, error);
      // Only the next period was asked for, and its chain's record is there: nothing is left to write.
      if (next.writes.length === 0 && next.history.length === 0 && !next.createIfAbsent && !next.releaseLock && !next.achRates && !next.instruments && !next.movements?.length) return { created: false };
      attempt = next;
    }
  }
}

/** A write that bumps a record's version writes its audit row (DESIGN 11): the events' `sequence` is that version. */
function requireAuditRows(tx: BillingTransaction): void {
  for (const write of tx.writes) {
    if (write.kind === 'delete') continue;
    const { subscription_id, version } = write.record;
    if (!tx.history.some((row) => row.subscription_id === subscription_id && row.version === version)) {
      throw new InvalidTransactionError(`commit: the ${write.kind} of subscription ${subscription_id} at version ${version} has no audit row`);
    }
  }
}

function planCommit(t: BillingTables, tx: BillingTransaction): { planned: PlannedWrite[]; creates: PlannedCreate[] } {
  const planned: PlannedWrite[] = [];
  const creates: PlannedCreate[] = [];
  tx.writes.forEach((write, at) => {
    if (write.kind === 'create') {
      creates.push({ index: planned.length, record: write.record, movable: write.displace === true, optional: false, at });
      planned.push(planCreate(t, write.record));
    } else if (write.kind === 'update') planned.push(planUpdate(t, write.read, write.record));
    else planned.push(planDelete(t, write.read));
  });
  for (const row of tx.history) planned.push(planHistory(t, row));
  if (tx.releaseLock) planned.push(planLockRelease(t, tx.releaseLock));
  if (tx.achRates) planned.push(planAchRates(t, tx.achRates));
  if (tx.instruments && !isEmptyInstrumentWrite(tx.instruments)) planned.push(planInstruments(t, tx.instruments));
  for (const movement of tx.movements ?? []) planned.push(planMovement(t, movement));
  if (tx.createIfAbsent) {
    creates.push({ index: planned.length, record: tx.createIfAbsent.record, movable: true, optional: true, at: -1 });
    planned.push(planCreate(t, tx.createIfAbsent.record), planHistory(t, tx.createIfAbsent.history));
  }
  // Last: the creates' indexes above are positions in the request, which the cancellation reasons follow.
  const gauges = planGauges(t, transactionGaugeDelta(tx));
  if (gauges) planned.push(gauges);
  requireAuditRows(tx);
  return { planned, creates };
}

/**
 * The transaction again after `taken` creates found their keys held: past another chain's record to
 * the next free instant (rows too); the same chain's drops the optional successor, fails a plain create.
 */
async function placeAgain(t: BillingTables, tx: BillingTransaction, taken: readonly PlannedCreate[], error: unknown): Promise<BillingTransaction> {
  let writes = [...tx.writes];
  let history = [...tx.history];
  let createIfAbsent = tx.createIfAbsent;
  for (const create of taken) {
    const holder = await chainAt(t, create.record);
    // A key freed meanwhile is tried again as it is.
    if (!holder) continue;
    if (sameChain(holder, create.record)) {
      if (!create.optional) throw error;
      createIfAbsent = undefined;
      continue;
    }
    const moved: BillingRecord = { ...create.record, billing_date: nextFreeInstant(create.record.billing_date) };
    const movedRow = (row: HistoryRow): HistoryRow => (isRowOf(row, create.record) ? { ...row, billing_date: moved.billing_date } : row);
    if (create.optional && createIfAbsent) createIfAbsent = { record: moved, history: movedRow(createIfAbsent.history) };
    else {
      writes = writes.map((w, at) => (at === create.at && w.kind === 'create' ? { ...w, record: moved } : w));
      history = history.map(movedRow);
    }
  }
  return {
    writes,
    history,
    ...(createIfAbsent ? { createIfAbsent } : {}),
    ...(tx.releaseLock ? { releaseLock: tx.releaseLock } : {}),
    ...(tx.achRates ? { achRates: tx.achRates } : {}),
    ...(tx.instruments ? { instruments: tx.instruments } : {}),
    ...(tx.movements ? { movements: tx.movements } : {}),
  };
}

/** The chain of the record at `key` (strongly consistent, two attributes), or undefined when the key is free. */
async function chainAt(t: BillingTables, key: BillingKey): Promise<Pick<BillingRecord, 'chain_id'> | undefined> {
  const out = await send('billing.chainAt', () =>
    t.client.send(
      new GetItemCommand({
        TableName: t.table,
        Key: primaryKey(key),
        ConsistentRead: true,
        ProjectionExpression: '#u, #c',
        ExpressionAttributeNames: { '#u': 'user_id', '#c': 'chain_id' },
      }),
    ),
  );
  if (!out.Item) return undefined;
  const chainId = out.Item.chain_id?.S;
  return chainId !== undefined ? { chain_id: chainId } : {};
}

/** What the transaction's record writes add to the gauge counters: each record's class after minus before. */
function transactionGaugeDelta(tx: BillingTransaction): GaugeCounts {
  let delta = NO_GAUGE_COUNTS;
  for (const write of tx.writes) {
    if (write.kind === 'create') delta = addGaugeCounts(delta, gaugeDelta(undefined, write.record));
    else if (write.kind === 'update') delta = addGaugeCounts(delta, gaugeDelta(write.read, write.record));
    else delta = addGaugeCounts(delta, gaugeDelta(write.read, undefined));
  }
  if (tx.createIfAbsent) delta = addGaugeCounts(delta, gaugeDelta(undefined, tx.createIfAbsent.record));
  return delta;
}

/**
 * The creates whose key was held, when those are the only conditions that failed and each may move
 * or be dropped; undefined otherwise (the caller gets the error as it is).
 */
function takenCreates(codes: (string | undefined)[] | undefined, creates: readonly PlannedCreate[]): PlannedCreate[] | undefined {
  if (!codes) return undefined;
  const taken: PlannedCreate[] = [];
  for (const [index, code] of codes.entries()) {
    if (code === undefined || code === 'None') continue;
    const create = code === 'ConditionalCheckFailed' ? creates.find((c) => c.index === index) : undefined;
    if (!create || !create.movable) return undefined;
    taken.push(create);
  }
  return taken.length > 0 ? taken : undefined;
}

/** A history row of `record` (the row written beside its create). */
function isRowOf(row: HistoryRow, record: BillingRecord): boolean {
  return row.user_id === record.user_id && row.billing_date === record.billing_date && row.subscription_id === record.subscription_id;
}
