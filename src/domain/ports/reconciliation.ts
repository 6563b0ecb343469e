import type { MatchResult, ReconciliationException } from '../reconciliation/match.js';
import type { PaymentMethod } from '../records.js';

export const RESOLUTIONS = ['refunded', 'recorded', 'written_off', 'no_action'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/** An exception as stored: what the matcher found, when first and last seen, and its resolution if any. */
export interface StoredException extends ReconciliationException {
  readonly date: string;
  readonly first_seen_at: string;
  readonly last_seen_at: string;
  readonly resolution?: { readonly resolution: Resolution; readonly reason: string; readonly actor: string; readonly at: string };
}

/** One day and rail's run: both sides' totals, the drifts, and its exceptions. */
export interface ReconciliationRun extends Omit<MatchResult, 'exceptions'> {
  readonly date: string;
  readonly rail: PaymentMethod;
  readonly status: 'running' | 'completed';
  readonly completed_at?: string;
  readonly exception_ids: readonly string[];
}

/** The reconciliation table (DESIGN 14): runs and exceptions, written by the job only. */
export interface ReconciliationStore {
  /**
   * The run and its exceptions, each upserted by id: a resolution already given is kept. Answers the
   * ids that were not stored before (the only ones an event is published for).
   */
  saveRun(run: ReconciliationRun, exceptions: readonly ReconciliationException[], at: string): Promise<{ readonly created: readonly string[] }>;
  getRun(date: string, rail: PaymentMethod): Promise<{ readonly run: ReconciliationRun; readonly exceptions: readonly StoredException[] } | undefined>;
  /**
   * Records a resolution on an exception and takes it off its rail's open list, in one transaction;
   * undefined when no exception has that id, AlreadyResolvedError when it has a resolution.
   */
  resolve(exceptionId: string, resolution: NonNullable<StoredException['resolution']>): Promise<StoredException | undefined>;
  /** The runs of one day, one per rail that ran. */
  listRuns(date: string): Promise<ReconciliationRun[]>;
  /** A rail's exceptions that are new (not known) and not resolved, with when each was first seen. */
  openExceptions(rail: PaymentMethod): Promise<OpenException[]>;
}

/** An entry of a rail's open list: kept from a new exception's first run until its resolution. */
export interface OpenException {
  readonly exception_id: string;
  readonly date: string;
  readonly first_seen_at: string;
}

/** What the job tells the rest of the business (DESIGN 11): a run done, and each new exception. */
export interface ReconciliationEvents {
  completed(run: ReconciliationRun): Promise<void>;
  exception(exception: StoredException): Promise<void>;
}
