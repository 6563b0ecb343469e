import type { Clock } from '../ports/clock.js';
import type { ReconciliationRun, ReconciliationStore } from '../ports/reconciliation.js';

/** How long a new exception may stay unresolved before its alarm (RECONCILIATION_EXCEPTION_MAX_AGE_HOURS). */
export const DEFAULT_RECONCILIATION_EXCEPTION_MAX_AGE_HOURS = 72;

export interface ReconciliationGauge {
  readonly rail: string;
  readonly grossDriftCents: number;
  /** The rail's new exceptions not resolved, whatever day they belong to. */
  readonly openExceptions: number;
  /** Those first seen longer ago than the setting: the alarm's gauge. */
  readonly overdueExceptions: number;
}

/** A run's gauges (DESIGN 14): its gross drift, and the rail's open exceptions from every day, not only this run's. */
export async function reconciliationGauge(deps: { readonly clock: Clock; readonly reconciliation: Pick<ReconciliationStore, 'openExceptions'> }, run: ReconciliationRun, maxAgeHours: number): Promise<ReconciliationGauge> {
  const open = await deps.reconciliation.openExceptions(run.rail);
  const cutoff = deps.clock.now().getTime() - maxAgeHours * 3_600_000;
  const overdue = open.filter((entry) => Date.parse(entry.first_seen_at) <= cutoff);
  return { rail: run.rail, grossDriftCents: run.gross_drift_cents, openExceptions: open.length, overdueExceptions: overdue.length };
}
