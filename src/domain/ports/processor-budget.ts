import type { BudgetClass, ProcessorId } from '../processor-budget.js';

export type { BudgetClass, ProcessorId } from '../processor-budget.js';

/**
 * The shared per-processor, per-second counters of DESIGN 13: one item per processor and wall-clock
 * second, leased from in blocks by conditional updates, so every caller on every Lambda shares them.
 */
export interface ProcessorBudgetStore {
  /** Takes up to `count` of second `epochSecond`'s tokens without passing `cap`; answers how many it took (0 when spent). */
  lease(processor: ProcessorId, epochSecond: number, count: number, cap: number): Promise<number>;
  /** Adds throttled answers (and the messages not presented after them) for the planner's next quota. */
  reportThrottled(processor: ProcessorId, count: number): Promise<void>;
  /** Every throttled answer reported so far, cumulative. */
  throttledTotal(processor: ProcessorId): Promise<number>;
  /**
   * The planner's quota multiplier: `next(factor, throttled since the last call)` is stored and
   * answered (factor 1 before any). Called by the single-flight planner only.
   */
  updateQuotaFactor(processor: ProcessorId, next: (factor: number, throttledSinceLastRun: number) => number): Promise<{ factor: number; throttled: number }>;
}

/**
 * What a path that calls a processor takes before each call: one token of the processor's budget,
 * waiting for a later second when this one is spent. Reconciliation, webhooks and every charge use it.
 */
export interface ProcessorTokens {
  take(processor: ProcessorId, signal?: AbortSignal): Promise<void>;
}

export type { BudgetClass as ProcessorBudgetClass };
