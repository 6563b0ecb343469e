import type { IdGenerator } from '../billing-record.js';
import type { MoneyMovement } from '../money-movements.js';
import type { Clock } from '../ports/clock.js';
import type { MoneyMovementStore } from '../ports/money-movements.js';
import type { ProcessorReport } from '../ports/processor-report.js';
import type { QueuePort } from '../ports/queue.js';
import type { ReconciliationEvents, ReconciliationRun, ReconciliationStore, RunClaim } from '../ports/reconciliation.js';
import { debitIdsOf, LATE_WINDOW_DAYS, lateDebits, matchAll, matchDay, matchId, type MatchResult, type ProcessorMovement, type ReconciliationException } from '../reconciliation/match.js';
import type { Continuation } from '../reconciliation/request.js';
import type { PaymentMethod } from '../records.js';
import { formatInstant } from '../time.js';

export interface ReconcileDeps {
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly movements: Pick<MoneyMovementStore, 'pageDay'>;
  /** The processor's report for each rail. */
  readonly reports: Readonly<Record<PaymentMethod, ProcessorReport>>;
  readonly reconciliation: ReconciliationStore;
  readonly events: ReconciliationEvents;
  /** The job's own queue: where an invocation near its timeout sends the run's continuation. */
  readonly continuations?: QueuePort;
}

/** Asked before each step after the first: true when the invocation should hand over now. */
export type TimeLeft = () => boolean;

export type RunOutcome =
  | { readonly kind: 'completed'; readonly run: ReconciliationRun; readonly result: MatchResult; readonly created: readonly string[] }
  | { readonly kind: 'continued'; readonly next: Continuation }
  /** A duplicate or stale continuation, or a run another invocation finished: nothing done. */
  | { readonly kind: 'skipped'; readonly reason: string };

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` shifted by whole days. */
export function shiftDay(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

const daysBetween = (earlier: string, later: string): number => Math.round((Date.parse(`${later}T00:00:00Z`) - Date.parse(`${earlier}T00:00:00Z`)) / DAY_MS);

/** The day of each late outcome's debit, when a run within its look-back saw that debit. */
async function debitDays(deps: ReconcileDeps, rail: PaymentMethod, day: string, late: ReadonlyMap<string, number>): Promise<Map<string, string>> {
  if (late.size === 0) return new Map();
  const furthest = Math.max(...late.values());
  const days = Array.from({ length: furthest - 1 }, (_, i) => shiftDay(day, -(i + 2)));
  const found = await deps.reconciliation.findDebitDays(rail, new Set(late.keys()), days);
  for (const [id, debitDay] of found) if (daysBetween(debitDay, day) > late.get(id)!) found.delete(id);
  return found;
}

interface Split {
  readonly ours: MoneyMovement[];
  readonly theirs: ProcessorMovement[];
}

/** Moves the late outcomes out of the day's own movements, grouped by their debit's day. */
function splitLate(ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[], days: ReadonlyMap<string, string>): { own: Split; byDay: Map<string, Split> } {
  const own: Split = { ours: [], theirs: [] };
  const byDay = new Map<string, Split>();
  const home = (m: MoneyMovement | ProcessorMovement): Split => {
    const debitDay = LATE_WINDOW_DAYS[m.kind] !== undefined ? days.get(matchId(m)) : undefined;
    if (debitDay === undefined) return own;
    if (!byDay.has(debitDay)) byDay.set(debitDay, { ours: [], theirs: [] });
    return byDay.get(debitDay)!;
  };
  for (const m of ours) home(m).ours.push(m);
  for (const m of theirs) home(m).theirs.push(m);
  return { own, byDay };
}

async function publishNew(deps: ReconcileDeps, date: string, exceptions: readonly ReconciliationException[], created: readonly string[], at: string): Promise<void> {
  const fresh = new Set(created);
  for (const exception of exceptions) {
    if (fresh.has(exception.exception_id) && !exception.known) await deps.events.exception({ ...exception, date, first_seen_at: at, last_seen_at: at });
  }
}

/**
 * Matches the whole window and stores the result if `claim` still holds. A return (60 days) or a
 * dispute (120) of an earlier day's debit amends that day's result instead of this one's.
 */
export async function finishRun(deps: ReconcileDeps, request: Continuation, claim: RunClaim, ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): Promise<RunOutcome> {
  const { date: day, rail } = request;
  const at = formatInstant(deps.clock.now());
  const { own, byDay } = splitLate(ours, theirs, await debitDays(deps, rail, day, lateDebits(day, ours, theirs)));
  const result = matchDay(rail, day, own.ours, own.theirs);
  const { exceptions, ...totals } = result;
  const run: ReconciliationRun = { ...totals, date: day, rail, status: 'completed', completed_at: at, exception_ids: exceptions.map((e) => e.exception_id), run_id: request.run_id };
  const saved = await deps.reconciliation.saveRun(run, exceptions, at, claim);
  if (saved.superseded) return { kind: 'skipped', reason: 'another invocation finished the run' };
  await deps.reconciliation.saveDebits(day, rail, debitIdsOf(day, ours, theirs));
  await publishNew(deps, day, exceptions, saved.created, at);
  for (const [debitDay, late] of [...byDay].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const amended = matchAll(rail, late.ours, late.theirs);
    const { created } = await deps.reconciliation.amend(debitDay, rail, { from: day, result: amended }, at);
    await publishNew(deps, debitDay, amended.exceptions, created, at);
  }
  await deps.events.completed(run);
  return { kind: 'completed', run, result, created: saved.created };
}
