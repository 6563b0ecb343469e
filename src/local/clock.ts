import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../domain/ports/clock.js';
import { formatInstant, normalizeInstant, toDate } from '../domain/time.js';

/** A request to move the simulated clock back (409 `clock_backwards` on the control surface). */
export class ClockBackwardsError extends Error {
  override readonly name = 'ClockBackwardsError';
  constructor(
    readonly requested: Date,
    readonly current: Date,
  ) {
    super(`the simulated clock only moves forward: ${formatInstant(requested)} is before its current reading ${formatInstant(current)}`);
  }
}

/** `--now` earlier than the reading a previous run saved. */
export class SavedClockAheadError extends Error {
  override readonly name = 'SavedClockAheadError';
  constructor(
    readonly requested: string,
    readonly saved: string,
    readonly file: string,
  ) {
    super(`--now ${requested} is before the saved simulated clock ${saved} (${file}); the clock only moves forward. Give a later --now, leave it out to resume, or start over with --fresh`);
  }
}

/** How often the reading is written while the runtime runs: a SIGKILL loses at most this much. */
export const CLOCK_PERSIST_INTERVAL_MS = 1_000;

/**
 * The simulated clock every local handler reads (AppDeps.clock). It runs at wall speed from the
 * instant it was last set, so leases and stamps move on by themselves, and it can be set or moved
 * forward (never back) by the control surface. Its reading is written to a file (atomically: a
 * temporary file renamed over the old one) on every change and every second while it runs, so a
 * restart after a crash resumes at most a second behind; time spent stopped does not count.
 */
export class SimulatedClock implements Clock {
  private simulatedAt: number;
  private wallAt: number;
  private readonly listeners = new Set<(now: Date) => void>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    start: Date,
    private readonly file?: string,
  ) {
    this.simulatedAt = start.getTime();
    this.wallAt = Date.now();
    this.persist();
  }

  /** The saved reading of a previous run, if there is a readable one. */
  static saved(file: string): Date | undefined {
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { now?: unknown };
      return typeof saved.now === 'string' ? toDate(normalizeInstant(saved.now)) : undefined;
    } catch {
      // No saved reading yet (first start) or an unreadable file.
      return undefined;
    }
  }

  /**
   * Resumes the saved reading; an explicit start may move it forward, never back
   * (SavedClockAheadError). Without either, `fallback`.
   */
  static restore(file: string, explicitStart: string | undefined, fallback: Date): SimulatedClock {
    const saved = SimulatedClock.saved(file);
    if (explicitStart !== undefined) {
      const start = toDate(normalizeInstant(explicitStart));
      if (saved && start.getTime() < saved.getTime()) throw new SavedClockAheadError(explicitStart, formatInstant(saved), file);
      return new SimulatedClock(start, file);
    }
    return new SimulatedClock(saved ?? fallback, file);
  }

  now(): Date {
    return new Date(this.simulatedAt + (Date.now() - this.wallAt));
  }

  /** Moves the clock to `to`; an earlier time than now is refused (ClockBackwardsError). */
  set(to: Date): Date {
    const current = this.now();
    if (to.getTime() < current.getTime()) throw new ClockBackwardsError(to, current);
    this.simulatedAt = to.getTime();
    this.wallAt = Date.now();
    this.persist();
    const now = this.now();
    for (const listener of this.listeners) listener(now);
    return now;
  }

  advance(ms: number): Date {
    return this.set(new Date(this.now().getTime() + ms));
  }

  onChange(listener: (now: Date) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts writing the reading every `intervalMs` of wall time (until `stop`). */
  startPersisting(intervalMs = CLOCK_PERSIST_INTERVAL_MS): void {
    if (!this.file || this.timer) return;
    this.timer = setInterval(() => {
      try {
        this.persist();
      } catch {
        // A full disk must not stop the runtime; the next tick tries again.
      }
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops the periodic writes and writes the final reading. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.persist();
  }

  /** Writes the current reading: a temporary file renamed over the old one, so a crash never leaves half a file. */
  persist(): void {
    if (!this.file) return;
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify({ now: formatInstant(this.now()) })}\n`);
    renameSync(temporary, this.file);
  }
}
