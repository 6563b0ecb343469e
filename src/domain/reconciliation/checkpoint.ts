import type { MoneyMovement } from '../money-movements.js';
import type { ProcessorMovement } from './match.js';

/**
 * Where a run's read stands: our movements of the window's days (0, 1, 2: the day before, the day,
 * the day after), page by page, then the processor's report from its `next` cursor.
 */
export type ReadCursor =
  | { readonly phase: 'ours'; readonly day: number; readonly page?: string }
  | { readonly phase: 'theirs'; readonly next?: string }
  | { readonly phase: 'done' };

/** What one invocation read and staged before it handed over: its writer id and how many chunks. */
export interface StagedWrite {
  readonly writer: string;
  readonly chunks: number;
}

/** A run's checkpoint, kept on its run item: the read's cursor and the chunks read so far. */
export interface Checkpoint {
  readonly run_id: string;
  /** Bumped by each hand-over; a continuation names the step it resumes. */
  readonly step: number;
  readonly cursor: ReadCursor;
  readonly staged: readonly StagedWrite[];
  readonly started_at: string;
}

/** A part of what was read, staged for the invocation that finishes the run. */
export interface StagedChunk {
  readonly ours: readonly MoneyMovement[];
  readonly theirs: readonly ProcessorMovement[];
}

/** How long before its timeout an invocation hands a run over, unless RECONCILIATION_MARGIN_SECONDS says otherwise: a few report pages. */
export const DEFAULT_RECONCILIATION_MARGIN_SECONDS = 60;

/** Movements per staged chunk: a chunk stays well under DynamoDB's 400 KB item. */
export const CHUNK_ROWS = 500;

export function chunksOf(ours: readonly MoneyMovement[], theirs: readonly ProcessorMovement[]): StagedChunk[] {
  const chunks: StagedChunk[] = [];
  for (let i = 0; i < ours.length; i += CHUNK_ROWS) chunks.push({ ours: ours.slice(i, i + CHUNK_ROWS), theirs: [] });
  for (let i = 0; i < theirs.length; i += CHUNK_ROWS) chunks.push({ ours: [], theirs: theirs.slice(i, i + CHUNK_ROWS) });
  return chunks;
}
