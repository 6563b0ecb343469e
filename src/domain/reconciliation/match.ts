import { movementDay, signedAmount, type MoneyMovement, type MovementKind } from '../money-movements.js';
import type { PaymentMethod } from '../records.js';
import { stableId } from './stable-id.js';

/** One movement as the processor reports it (card: a balance transaction; ACH and pinless: the payments report). */
export interface ProcessorMovement {
  readonly transaction_id: string;
  readonly original_transaction_id?: string | undefined;
  readonly kind: MovementKind;
  /** Positive cents; the kind says which way. */
  readonly amount_cents: number;
  readonly occurred_at: string;
  /** The record it names (`sub#…`, `loan#…`), when the processor carries our reference. */
  readonly record_key?: string | undefined;
  readonly user_id?: string | undefined;
}

export const EXCEPTION_CODES = ['missing_in_records', 'missing_at_processor', 'amount_mismatch', 'status_mismatch', 'duplicate_charge'] as const;
export type ReconciliationCode = (typeof EXCEPTION_CODES)[number];

export interface ReconciliationException {
  /** Stable across runs: a hash of rail, code and the processor transaction id (or our record key). */
  readonly exception_id: string;
  readonly rail: PaymentMethod;
  readonly code: ReconciliationCode;
  /** Signed cents: + money moved that our records miss, − money our records claim that did not move. */
  readonly amount_cents: number;
  readonly kind: MovementKind;
  readonly transaction_id?: string;
  readonly record_key?: string;
  readonly user_id?: string;
  readonly occurred_at: string;
  /** The record already carries a 4.1/6.1 exception for this money: known, not new. */
  readonly known: boolean;
}

export interface SideTotals {
  readonly count: number;
  /** Signed cents: in minus out. */
  readonly total_cents: number;
}

export interface MatchResult {
  readonly ours: SideTotals;
  readonly theirs: SideTotals;
  readonly net_drift_cents: number;
  readonly gross_drift_cents: number;
  readonly exceptions: readonly ReconciliationException[];
}

interface Group {
  readonly key: string;
  readonly kind: MovementKind;
  readonly id: string;
  readonly ours: MoneyMovement[];
  readonly theirs: ProcessorMovement[];
}

const OUTFLOWS: ReadonlySet<MovementKind> = new Set(['return', 'refund', 'chargeback']);

/** The transaction a movement is matched by: a debit's own id, any other's original debit. */
export function matchId(m: { readonly kind: MovementKind; readonly transaction_id?: string | undefined; readonly original_transaction_id?: string | undefined }): string {
  return m.kind === 'debit' ? (m.transaction_id ?? '') : (m.original_transaction_id ?? m.transaction_id ?? '');
}

function groupsOf(ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): Group[] {
  const groups = new Map<string, Group>();
  const at = (kind: MovementKind, id: string): Group => {
    const key = `${kind}|${id}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { key, kind, id, ours: [], theirs: [] }));
    return group;
  };
  for (const m of ours) at(m.kind, matchId(m)).ours.push(m);
  for (const m of theirs) at(m.kind, matchId(m)).theirs.push(m);
  return [...groups.values()];
}

/**
 * What our rows of one group say moved: one debit per transaction (the attempt and a webhook may both
 * write it; the row that knows an exception wins), the largest of running totals, the sum of the rest.
 */
function oursAmount(group: Group): number {
  if (group.kind === 'debit') {
    const known = group.ours.find((m) => m.known_exception !== undefined);
    return (known ?? group.ours[0])?.amount_cents ?? 0;
  }
  const running = group.ours.filter((m) => m.cumulative === true).map((m) => m.amount_cents);
  const single = group.ours.filter((m) => m.cumulative !== true).reduce((sum, m) => sum + m.amount_cents, 0);
  return single + (running.length > 0 ? Math.max(...running) : 0);
}

const theirsAmount = (group: Group): number => group.theirs.reduce((sum, m) => sum + m.amount_cents, 0);
const signOf = (kind: MovementKind): number => (OUTFLOWS.has(kind) ? -1 : 1);

/** The UTC day a group belongs to: its earliest movement's, on either side. */
function homeDay(group: Group): string {
  const days = [...group.ours.map((m) => movementDay(m.occurred_at)), ...group.theirs.map((m) => movementDay(m.occurred_at))];
  return days.sort()[0]!;
}

/**
 * Matches one rail's day (`YYYY-MM-DD`): `ours` and `theirs` cover the day and one day on each side,
 * so a movement recorded across midnight still meets its other half; only groups that start on `day`
 * are reported, so neighbouring days never report one difference twice.
 */
export function matchDay(rail: PaymentMethod, day: string, ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): MatchResult {
  return matchGroups(rail, groupsOf(ours, theirs).filter((g) => homeDay(g) === day), ours, theirs);
}

/** Matches every movement given, whatever its day: the late outcomes that amend an earlier day's result. */
export function matchAll(rail: PaymentMethod, ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): MatchResult {
  return matchGroups(rail, groupsOf(ours, theirs), ours, theirs);
}

/** How long after its debit an outcome may come and still amend the debit's day (DESIGN 14): ACH returns 60 days, disputes 120. */
export const LATE_WINDOW_DAYS: Readonly<Partial<Record<MovementKind, number>>> = { return: 60, chargeback: 120, dispute_reinstated: 120 };

/**
 * The debits whose late outcomes start on `day` with the debit itself outside the window (on
 * neither side): each names the longest look-back its outcomes allow.
 */
export function lateDebits(day: string, ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): Map<string, number> {
  const groups = groupsOf(ours, theirs);
  const debits = new Set(groups.filter((g) => g.kind === 'debit').map((g) => g.id));
  const late = new Map<string, number>();
  for (const group of groups) {
    const days = LATE_WINDOW_DAYS[group.kind];
    if (days === undefined || group.id === '' || debits.has(group.id) || homeDay(group) !== day) continue;
    late.set(group.id, Math.max(days, late.get(group.id) ?? 0));
  }
  return late;
}

/** The debits of one day's own groups (either side): the index a later day's late outcome finds its day by. */
export function debitIdsOf(day: string, ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): string[] {
  return groupsOf(ours, theirs).filter((g) => g.kind === 'debit' && g.id !== '' && homeDay(g) === day).map((g) => g.id);
}

function matchGroups(rail: PaymentMethod, groups: readonly Group[], ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): MatchResult {
  const debitsByRecord = new Map<string, number>();
  for (const g of groupsOf(ours, theirs)) {
    if (g.kind === 'debit' && g.ours.length > 0 && g.theirs.length > 0) debitsByRecord.set(g.ours[0]!.record_key, oursAmount(g));
  }
  const exceptions: ReconciliationException[] = [];
  let oursCount = 0;
  let oursTotal = 0;
  let theirsCount = 0;
  let theirsTotal = 0;
  for (const group of groups) {
    const mine = group.ours.length > 0 ? oursAmount(group) : 0;
    const processor = theirsAmount(group);
    oursCount += group.ours.length > 0 ? 1 : 0;
    theirsCount += group.theirs.length;
    oursTotal += signedAmount({ kind: group.kind, amount_cents: mine });
    theirsTotal += group.theirs.reduce((sum, m) => sum + signedAmount(m), 0);
    const exception = judge(rail, group, mine, processor, debitsByRecord);
    if (exception) exceptions.push(exception);
  }
  exceptions.sort((a, b) => (a.exception_id < b.exception_id ? -1 : 1));
  return {
    ours: { count: oursCount, total_cents: oursTotal },
    theirs: { count: theirsCount, total_cents: theirsTotal },
    net_drift_cents: exceptions.reduce((sum, e) => sum + e.amount_cents, 0),
    gross_drift_cents: exceptions.reduce((sum, e) => sum + Math.abs(e.amount_cents), 0),
    exceptions,
  };
}

function judge(rail: PaymentMethod, group: Group, mine: number, processor: number, debitsByRecord: ReadonlyMap<string, number>): ReconciliationException | undefined {
  const first = group.theirs[0];
  const ourRow = group.ours.find((m) => m.known_exception !== undefined) ?? group.ours[0];
  const known = group.ours.some((m) => m.known_exception !== undefined);
  if (ourRow && !first) return exceptionOf(rail, 'missing_at_processor', -mine, group, { known, row: ourRow });
  if (!ourRow && first) {
    if (group.kind === 'debit') {
      const duplicate = first.record_key !== undefined && debitsByRecord.has(first.record_key);
      return exceptionOf(rail, duplicate ? 'duplicate_charge' : 'missing_in_records', processor, group, { known, processor: first });
    }
    // Returned, refunded or charged back there, not here; a settlement we missed moved no more money.
    if (group.kind === 'dispute_reinstated') return exceptionOf(rail, 'missing_in_records', processor, group, { known, processor: first });
    return exceptionOf(rail, 'status_mismatch', OUTFLOWS.has(group.kind) ? -processor : 0, group, { known, processor: first });
  }
  if (ourRow && first && mine !== processor) return exceptionOf(rail, 'amount_mismatch', signOf(group.kind) * (processor - mine), group, { known, row: ourRow, processor: first });
  return undefined;
}

function exceptionOf(
  rail: PaymentMethod,
  code: ReconciliationCode,
  amount: number,
  group: Group,
  from: { readonly known: boolean; readonly row?: MoneyMovement; readonly processor?: ProcessorMovement },
): ReconciliationException {
  const transactionId = from.processor?.transaction_id ?? from.row?.transaction_id ?? group.id;
  const recordKey = from.row?.record_key ?? from.processor?.record_key;
  const userId = from.row?.user_id ?? from.processor?.user_id;
  return {
    exception_id: stableId(rail, code, group.kind, transactionId || recordKey || group.key),
    rail,
    code,
    amount_cents: amount,
    kind: group.kind,
    ...(transactionId ? { transaction_id: transactionId } : {}),
    ...(recordKey ? { record_key: recordKey } : {}),
    ...(userId ? { user_id: userId } : {}),
    occurred_at: (from.processor ?? from.row)!.occurred_at,
    known: from.known,
  };
}
