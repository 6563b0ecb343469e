import { processorOfRail, type ProcessorId } from '../../domain/processor-budget.js';
import type { AttemptOutcome } from '../../domain/use-cases/collect.js';

/**
 * Why a batch invocation presents nothing more (DESIGN 13): a processor throttled it. Another reason
 * (a processor's outage circuit) is one more member here and one more case in `stopOf`.
 */
export type StopReason = 'throttled';

export interface Stop {
  readonly processor: ProcessorId;
  readonly reason: StopReason;
}

/** The stop an attempt's outcome calls for, if any. */
export function stopOf(outcome: AttemptOutcome): Stop | undefined {
  if (outcome.kind === 'failed_uncounted' && outcome.class === 'throttled' && outcome.record) {
    return { processor: processorOfRail(outcome.record.payment_method), reason: 'throttled' };
  }
  return undefined;
}

/**
 * One invocation's stops: after the first, no message is attempted; each message left (the one
 * stopped and those not yet presented) is answered done without a write, and counted here for the
 * planner, which plans the periods again from the due-index.
 */
export class PresentingStops {
  private first: Stop | undefined;
  private readonly counts = new Map<string, { stop: Stop; messages: number }>();

  get stopped(): Stop | undefined {
    return this.first;
  }

  /** Records a stop and counts its message. */
  stop(stop: Stop): void {
    this.first ??= stop;
    this.count(stop);
  }

  /** Counts a message left because of the invocation's stop. */
  leave(): void {
    if (this.first) this.count(this.first);
  }

  /** The messages left, by processor and reason. */
  left(): readonly { readonly stop: Stop; readonly messages: number }[] {
    return [...this.counts.values()];
  }

  private count(stop: Stop): void {
    const key = `${stop.processor}:${stop.reason}`;
    const entry = this.counts.get(key) ?? { stop, messages: 0 };
    entry.messages += 1;
    this.counts.set(key, entry);
  }
}
