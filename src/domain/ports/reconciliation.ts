import type { Checkpoint, StagedChunk, StagedWrite } from '../reconciliation/checkpoint.js';
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
  /** The run that wrote this result: a continuation of a finished run is a duplicate. */
  readonly run_id?: string;
  /** Later days whose late returns or disputes amended this result (DESIGN 14). */
  readonly amended_by?: readonly string[];
}

/** Which run an invocation finishes: a fresh one (no checkpoint it must hold) or the checkpoint at `step`. */
export interface RunClaim {
  readonly run_id: string;
  readonly step: number;
}

/** The run item's state between invocations. */
export interface RunState {
  readonly checkpoint?: Checkpoint;
  /** The run id of the result stored, if any. */
  readonly run_id?: string;
}

/** Late outcomes of `from` for an earlier day's money: the earlier day's result is amended by them. */
export interface Amendment {
  readonly from: string;
  readonly result: MatchResult;
}

/** The reconciliation table (DESIGN 14): runs and exceptions, written by the job only. */
export interface ReconciliationStore {
  /**
   * The run and its exceptions, each upserted by id: a resolution already given is kept. Answers the
   * ids that were not stored before (the only ones an event is published for).
   */
  saveRun(run: ReconciliationRun, exceptions: readonly ReconciliationException[], at: string, claim?: RunClaim): Promise<{ readonly created: readonly string[]; readonly superseded?: boolean }>;
  getRun(date: string, rail: PaymentMethod): Promise<{ readonly run: ReconciliationRun; readonly exceptions: readonly StoredException[] } | undefined>;
  /**
   * Records a resolution on an exception and takes it off its rail's open list, in one transaction;
   * undefined when no exception has that id, AlreadyResolvedError when it has a resolution.
   */
  resolve(exceptionId: string, resolution: NonNullable<StoredException['resolution']>): Promise<StoredException | undefined>;
  runState(date: string, rail: PaymentMethod): Promise<RunState>;
  /** Writes the checkpoint if `claim` still holds (a fresh run: no result of its id yet); false when another invocation moved it. */
  saveCheckpoint(date: string, rail: PaymentMethod, checkpoint: Checkpoint, claim: RunClaim): Promise<boolean>;
  stage(date: string, rail: PaymentMethod, runId: string, writer: string, chunks: readonly StagedChunk[], at: string): Promise<void>;
  /** The chunks the checkpoint names, in its order; chunks another writer left are ignored. */
  staged(date: string, rail: PaymentMethod, runId: string, writes: readonly StagedWrite[]): Promise<StagedChunk[]>;
  /** The debits a day's run saw, by rail: a later day's late outcome finds its day here. */
  saveDebits(date: string, rail: PaymentMethod, transactionIds: readonly string[]): Promise<void>;
  /** Which of `transactionIds` each of `days` saw (newest first; stops once all are found). */
  findDebitDays(rail: PaymentMethod, transactionIds: ReadonlySet<string>, days: readonly string[]): Promise<Map<string, string>>;
  /** Amends `date`'s result with another day's late outcomes (replacing what that day amended before); answers the new exception ids. */
  amend(date: string, rail: PaymentMethod, amendment: Amendment, at: string): Promise<{ readonly created: readonly string[] }>;
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
