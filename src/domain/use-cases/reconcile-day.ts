import type { MoneyMovement } from '../money-movements.js';
import type { ReconciliationRun, RunClaim } from '../ports/reconciliation.js';
import { chunksOf, type Checkpoint, type ReadCursor } from '../reconciliation/checkpoint.js';
import type { MatchResult, ProcessorMovement } from '../reconciliation/match.js';
import type { Continuation } from '../reconciliation/request.js';
import type { PaymentMethod } from '../records.js';
import { formatInstant } from '../time.js';
import { finishRun, shiftDay, type ReconcileDeps, type RunOutcome, type TimeLeft } from './reconcile-finish.js';

export { shiftDay, type ReconcileDeps, type RunOutcome, type TimeLeft } from './reconcile-finish.js';

/** What one invocation holds: where the read stands and what it read since the last hand-over. */
interface Progress {
  cursor: ReadCursor;
  readonly ours: MoneyMovement[];
  readonly theirs: ProcessorMovement[];
}

/** One page of the window (the day and one on each side): ours shard page by page, then the processor's report. */
async function step(deps: ReconcileDeps, rail: PaymentMethod, day: string, progress: Progress): Promise<void> {
  const cursor = progress.cursor;
  if (cursor.phase === 'ours') {
    const page = await deps.movements.pageDay(rail, shiftDay(day, cursor.day - 1), cursor.page);
    progress.ours.push(...page.items);
    if (page.next !== undefined) progress.cursor = { phase: 'ours', day: cursor.day, page: page.next };
    else progress.cursor = cursor.day < 2 ? { phase: 'ours', day: cursor.day + 1 } : { phase: 'theirs' };
  } else if (cursor.phase === 'theirs') {
    const page = await deps.reports[rail].page(rail, `${shiftDay(day, -1)}T00:00:00Z`, `${shiftDay(day, 2)}T00:00:00Z`, cursor.next ?? null);
    progress.theirs.push(...page.items);
    progress.cursor = page.next !== null ? { phase: 'theirs', next: page.next } : { phase: 'done' };
  }
}

/** Whether this continuation still names the run's current step; otherwise why not. */
function staleness(request: Continuation, state: { checkpoint?: Checkpoint; run_id?: string }): string | undefined {
  if (state.run_id === request.run_id) return 'the run is already finished';
  const held = state.checkpoint;
  if (request.step === 0) return held?.run_id === request.run_id ? 'the run has already started' : undefined;
  if (!held || held.run_id !== request.run_id) return 'another run took the day over';
  if (held.step !== request.step) return `the run is at step ${held.step}`;
  return undefined;
}

/** Stages what this invocation read, moves the checkpoint, and sends the continuation; skipped when another invocation moved it first. */
async function handOver(deps: ReconcileDeps, request: Continuation, progress: Progress, checkpoint: Checkpoint | undefined, at: string): Promise<RunOutcome> {
  if (!deps.continuations) throw new Error('reconciliation: no continuation queue to hand the run over on');
  const writer = deps.ids.newId();
  const chunks = chunksOf(progress.ours, progress.theirs);
  await deps.reconciliation.stage(request.date, request.rail, request.run_id, writer, chunks, at);
  const next: Checkpoint = {
    run_id: request.run_id,
    step: request.step + 1,
    cursor: progress.cursor,
    staged: [...(checkpoint?.staged ?? []), { writer, chunks: chunks.length }],
    started_at: checkpoint?.started_at ?? at,
  };
  const claim: RunClaim = { run_id: request.run_id, step: request.step };
  if (!(await deps.reconciliation.saveCheckpoint(request.date, request.rail, next, claim))) return { kind: 'skipped', reason: 'another invocation moved the checkpoint' };
  const message: Continuation = { date: request.date, rail: request.rail, run_id: request.run_id, step: next.step };
  await deps.continuations.sendBatch([{ id: `${request.run_id}-${next.step}`, body: JSON.stringify(message) }]);
  return { kind: 'continued', next: message };
}

/**
 * Runs one rail's day, or resumes it from its checkpoint (DESIGN 14): reads page by page until done
 * or until `timeLeft` says to hand over (at least one page per invocation), then finishes the run.
 * A continuation that no longer names the run's step does nothing; the result is the same however
 * many invocations the run took.
 */
export async function runReconciliation(deps: ReconcileDeps, request: Continuation, timeLeft: TimeLeft = () => false, redelivered = false): Promise<RunOutcome> {
  const state = await deps.reconciliation.runState(request.date, request.rail);
  const stale = staleness(request, state);
  if (stale) {
    // Redelivered one step behind: the invocation failed after its checkpoint, perhaps before its send, so send again (a duplicate is harmless).
    const held = state.checkpoint;
    if (redelivered && held && held.run_id === request.run_id && held.step === request.step + 1 && deps.continuations) {
      await deps.continuations.sendBatch([{ id: `${request.run_id}-${held.step}`, body: JSON.stringify({ ...request, step: held.step }) }]);
    }
    return { kind: 'skipped', reason: stale };
  }
  const checkpoint = request.step > 0 ? state.checkpoint : undefined;
  const progress: Progress = { cursor: checkpoint?.cursor ?? { phase: 'ours', day: 0 }, ours: [], theirs: [] };
  let steps = 0;
  while (progress.cursor.phase !== 'done') {
    if (steps > 0 && timeLeft()) return handOver(deps, request, progress, checkpoint, formatInstant(deps.clock.now()));
    await step(deps, request.rail, request.date, progress);
    steps += 1;
  }
  const staged = checkpoint ? await deps.reconciliation.staged(request.date, request.rail, request.run_id, checkpoint.staged) : [];
  const ours = [...staged.flatMap((c) => c.ours), ...progress.ours];
  const theirs = [...staged.flatMap((c) => c.theirs), ...progress.theirs];
  return finishRun(deps, request, { run_id: request.run_id, step: request.step }, ours, theirs);
}

/** Reconciles one rail's UTC day in one go (no hand-over): the run's result, its match and the new exception ids. */
export async function reconcileDay(deps: ReconcileDeps, rail: PaymentMethod, day: string): Promise<{ run: ReconciliationRun; result: MatchResult; created: readonly string[] }> {
  const outcome = await runReconciliation(deps, { date: day, rail, run_id: deps.ids.newId(), step: 0 });
  if (outcome.kind !== 'completed') throw new Error(`reconciliation of ${day} ${rail}: ${outcome.kind === 'skipped' ? outcome.reason : 'handed over'}`);
  return outcome;
}
