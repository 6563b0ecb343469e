import type { Logger } from '../runtime/logger.js';
import { LocalStartupError } from './runtime-errors.js';

/** The parts `GET /health` reports, in the order they come up. */
export const LOCAL_PARTS = ['gateway', 'dynamodb', 'tables', 'sqs', 'kinesis', 'events', 'seed', 'pollers', 'scheduler'] as const;
export type LocalPart = (typeof LOCAL_PARTS)[number];

/** Which parts are up, and when each startup step ended (ms since the start, for the ready line). */
export class StartupProgress {
  readonly started = Date.now();
  readonly parts = Object.fromEntries(LOCAL_PARTS.map((part) => [part, false])) as Record<LocalPart, boolean>;
  readonly timings: Record<string, number> = {};

  up(...parts: readonly LocalPart[]): void {
    for (const part of parts) this.parts[part] = true;
  }

  mark(step: string): void {
    this.timings[step] = Date.now() - this.started;
  }

  get ready(): boolean {
    return Object.values(this.parts).every(Boolean);
  }
}

/** Everything started is stopped again, in reverse, also when a later step fails. */
export class Cleanups {
  private readonly steps: (() => Promise<void> | void)[] = [];
  private readonly finalSteps: (() => Promise<void> | void)[] = [];

  constructor(private readonly logger: Logger) {}

  push(...steps: readonly (() => Promise<void> | void)[]): void {
    this.steps.push(...steps);
  }

  /** Runs after every pushed step, whenever it was registered (DynamoDB Local: the handlers' writes land first). */
  pushFinal(step: () => Promise<void> | void): void {
    this.finalSteps.push(step);
  }

  async runAll(): Promise<void> {
    for (const step of [...this.steps.reverse(), ...this.finalSteps]) {
      try {
        await step();
      } catch (error) {
        this.logger.warn({ err: error }, 'cleanup step failed');
      }
    }
    this.steps.length = 0;
    this.finalSteps.length = 0;
  }
}

export async function waitUntil(predicate: () => boolean, timeoutMs: number, message: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new LocalStartupError(message);
    await new Promise((r) => setTimeout(r, 20));
  }
}
