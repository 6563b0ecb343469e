import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../domain/ports.js';
import { formatInstant, normalizeInstant, toDate } from '../domain/time.js';

/**
 * The simulated clock every local handler reads (AppDeps.clock). It runs at wall speed from the
 * instant it was last set, so leases and stamps move on by themselves, and it can be set or moved
 * forward by the control surface. Its reading is kept in a file between runs: time spent stopped
 * does not count.
 */
export class SimulatedClock implements Clock {
  private simulatedAt: number;
  private wallAt: number;
  private readonly listeners = new Set<(now: Date) => void>();

  constructor(
    start: Date,
    private readonly file?: string,
  ) {
    this.simulatedAt = start.getTime();
    this.wallAt = Date.now();
    this.persist();
  }

  /** The persisted reading when there is one (and no explicit start), else `fallback`. */
  static restore(file: string, explicitStart: string | undefined, fallback: Date): SimulatedClock {
    if (explicitStart !== undefined) return new SimulatedClock(toDate(normalizeInstant(explicitStart)), file);
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { now?: unknown };
      if (typeof saved.now === 'string') return new SimulatedClock(toDate(normalizeInstant(saved.now)), file);
    } catch {
      // No saved reading yet (first start) or an unreadable file: start from the fallback.
    }
    return new SimulatedClock(fallback, file);
  }

  now(): Date {
    return new Date(this.simulatedAt + (Date.now() - this.wallAt));
  }

  set(to: Date): Date {
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

  /** Writes the current reading (also called on stop). */
  persist(): void {
    if (!this.file) return;
    mkdirSync(dirname(this.file), { recursive: true });
    writeFileSync(this.file, `${JSON.stringify({ now: formatInstant(this.now()) })}\n`);
  }
}
