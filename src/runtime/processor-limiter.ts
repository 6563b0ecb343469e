import { AsyncLocalStorage } from 'node:async_hooks';
import { InterruptedError, ProcessorThrottledError } from '../domain/errors.js';
import { capOf, processorOfRail, type BudgetClass, type ProcessorBudgetSettings, type ProcessorId } from '../domain/processor-budget.js';
import type { CardPaymentDirectory } from '../domain/card-outcomes.js';
import type { PaymentProcessor, RefundQuery } from '../domain/ports/processor.js';
import type { ProcessorBudgetStore, ProcessorTokens } from '../domain/ports/processor-budget.js';
import type { ProcessorReport } from '../domain/ports/processor-report.js';

/**
 * A token is used within its second, at most this far into it: a request sent later could arrive
 * in the next second and pass that second's budget. A lease asked for later is for the next second.
 */
export const USE_WITHIN_MS = 850;
/** A lease is asked for at most this far ahead of its second. */
const MAX_LEASE_MS = 2_000;

export interface ProcessorLimiterOptions {
  readonly store: ProcessorBudgetStore;
  readonly settings: ProcessorBudgetSettings;
  readonly klass: BudgetClass;
  /** Wall time in epoch ms (the limiter never reads the simulated business clock). */
  readonly nowMs?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Tokens leased for one second, and how many of them are left. */
interface Held {
  readonly second: number;
  count: number;
}

/**
 * The shared limiter of DESIGN 13 on one function: every processor call takes a token first. A call
 * outside a block leases one; inside `withBlock` (a batch-worker invocation) the first call to a
 * processor leases the block's planned count at once, and later calls use what is held.
 */
export class ProcessorLimiter implements ProcessorTokens {
  private readonly blocks = new AsyncLocalStorage<TokenBlock>();
  private readonly nowMs: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** How long leases take to answer (a running mean). */
  private leaseMs = 0;

  constructor(private readonly options: ProcessorLimiterOptions) {
    this.nowMs = options.nowMs ?? Date.now;
    this.sleep = options.sleep ?? sleepFor;
  }

  async take(processor: ProcessorId, signal?: AbortSignal): Promise<void> {
    const block = this.blocks.getStore();
    if (block) return block.take(processor, signal);
    await this.acquire(processor, 1, signal);
  }

  /** Runs `work` in a block that leases `planned[p]` tokens of processor p in one request, on its first call to p. */
  withBlock<T>(planned: Partial<Record<ProcessorId, number>>, work: (block: TokenBlock) => Promise<T>): Promise<T> {
    const block = new TokenBlock(this, planned, this.nowMs);
    return this.blocks.run(block, () => work(block));
  }

  /** Throttled answers and the messages left after them, for the planner's next quota. */
  reportThrottled(processor: ProcessorId, count: number): Promise<void> {
    return this.options.store.reportThrottled(processor, count);
  }

  /** The block the caller runs in, if any. */
  currentBlock(): TokenBlock | undefined {
    return this.blocks.getStore();
  }

  /** Up to `count` tokens of one second, waiting for later seconds until at least one is granted. */
  async acquire(processor: ProcessorId, count: number, signal?: AbortSignal): Promise<Held> {
    const cap = capOf(this.options.settings, processor, this.options.klass);
    for (;;) {
      throwIfAborted(signal);
      const asked = this.nowMs();
      // Asked for the second still open when the answer is expected back: a slow lease's tokens are not spent before they arrive.
      const arrives = asked + this.leaseMs;
      let second = Math.floor(arrives / 1000);
      if (arrives - second * 1000 > USE_WITHIN_MS) second += 1;
      const granted = await this.options.store.lease(processor, second, count, cap);
      const answered = this.nowMs();
      this.leaseMs = Math.min(MAX_LEASE_MS, (this.leaseMs + (answered - asked)) / 2);
      if (granted > 0) {
        await this.sleepUntil(second * 1000, signal);
        if (answered < second * 1000 + USE_WITHIN_MS) return { second, count: granted };
        continue;
      }
      // This second is spent: the caller waits for the next one.
      await this.sleepUntil((second + 1) * 1000, signal);
    }
  }

  /** A timer may wake a millisecond early by the wall clock: a token used then would count in the second before. */
  private async sleepUntil(wallMs: number, signal?: AbortSignal): Promise<void> {
    for (let now = this.nowMs(); now < wallMs; now = this.nowMs()) await this.sleep(wallMs - now, signal);
  }
}

/** One invocation's tokens: leased in blocks, spent within their second; stopped for a processor once it throttled. */
export class TokenBlock {
  private readonly planned: Map<ProcessorId, number>;
  private readonly held = new Map<ProcessorId, Held>();
  private readonly leasing = new Map<ProcessorId, Promise<void>>();
  private readonly stopped = new Set<ProcessorId>();
  /** Callers inside `take`, per processor: a lease after the first is sized to them, not to the rest of the plan. */
  private readonly waiting = new Map<ProcessorId, number>();

  constructor(
    private readonly limiter: ProcessorLimiter,
    planned: Partial<Record<ProcessorId, number>>,
    private readonly nowMs: () => number,
  ) {
    this.planned = new Map(Object.entries(planned) as [ProcessorId, number][]);
  }

  /** After a throttled answer, nothing more is presented to that processor in this block. */
  stop(processor: ProcessorId): void {
    this.stopped.add(processor);
  }

  isStopped(processor: ProcessorId): boolean {
    return this.stopped.has(processor);
  }

  async take(processor: ProcessorId, signal?: AbortSignal): Promise<void> {
    this.waiting.set(processor, (this.waiting.get(processor) ?? 0) + 1);
    try {
      await this.takeOne(processor, signal);
    } finally {
      this.waiting.set(processor, (this.waiting.get(processor) ?? 1) - 1);
    }
  }

  private async takeOne(processor: ProcessorId, signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (this.stopped.has(processor)) throw new ProcessorThrottledError(processor);
      const held = this.held.get(processor);
      if (held && held.count > 0 && this.nowMs() < held.second * 1000 + USE_WITHIN_MS) {
        held.count -= 1;
        this.planned.set(processor, Math.max(0, (this.planned.get(processor) ?? 0) - 1));
        return;
      }
      const pending = this.leasing.get(processor);
      if (pending) {
        await pending;
        continue;
      }
      // The first lease takes the batch's plan at once; when its tokens expired before every caller
      // reached them (a slow attempt), the next leases only what is waiting, so fewer expire unused.
      const planned = this.planned.get(processor) ?? 1;
      const want = Math.max(1, this.held.has(processor) ? Math.min(planned, this.waiting.get(processor) ?? 1) : planned);
      const lease = this.limiter.acquire(processor, want, signal).then((got) => {
        this.held.set(processor, got);
      });
      this.leasing.set(processor, lease);
      try {
        await lease;
      } finally {
        this.leasing.delete(processor);
      }
    }
  }
}

/** The processor with a token taken before every submission; a throttled answer stops the caller's block for that processor. */
export function limitedProcessor(processor: PaymentProcessor, limiter: ProcessorLimiter): PaymentProcessor {
  return {
    submit: async (request, signal) => {
      const id = processorOfRail(request.rail);
      await limiter.take(id, signal);
      try {
        return await processor.submit(request, signal);
      } catch (error) {
        if (error instanceof ProcessorThrottledError) limiter.currentBlock()?.stop(error.processor);
        throw error;
      }
    },
    ...(processor.findRefund
      ? {
          findRefund: async (query: RefundQuery, signal?: AbortSignal) => {
            await limiter.take(processorOfRail(query.rail), signal);
            return processor.findRefund!(query, signal);
          },
        }
      : {}),
  };
}

/** A processor's report (reconciliation's list calls) takes a token of that processor's budget per page. */
export function limitedReport(report: ProcessorReport, limiter: ProcessorLimiter): ProcessorReport {
  return {
    page: async (rail, from, to, cursor, signal) => {
      await limiter.take(processorOfRail(rail), signal);
      return report.page(rail, from, to, cursor, signal);
    },
  };
}

/** Stripe reads (a PaymentIntent's lookup) take a token of Stripe's budget too. */
export function limitedCardPayments(directory: CardPaymentDirectory, limiter: ProcessorLimiter): CardPaymentDirectory {
  return {
    findReference: async (paymentIntentId) => {
      await limiter.take('stripe');
      return directory.findReference(paymentIntentId);
    },
    cardOfCustomer: async (customerId) => {
      await limiter.take('stripe');
      return directory.cardOfCustomer(customerId);
    },
  };
}

function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new InterruptedError('waiting for a processor token was interrupted', { cause: signal.reason });
}

function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new InterruptedError('waiting for a processor token was interrupted', { cause: signal.reason }));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new InterruptedError('waiting for a processor token was interrupted', { cause: signal?.reason }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
