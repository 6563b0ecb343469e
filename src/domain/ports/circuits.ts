import type { PaymentMethod } from '../records.js';

/**
 * Per-processor circuits (DESIGN 15): an item with `open_until` per outside service the attempt
 * calls. Open after our credentials or configuration failed there; while open, nothing is sent to
 * that service and the work that needs it waits, uncounted, in the due-index.
 */
export interface CircuitStore {
  /** The service's `open_until` (epoch ms of the wall clock), if its circuit was ever opened. */
  openUntil(service: string): Promise<number | undefined>;
  /** Opens (or extends) the circuit; never shortens one another caller opened for longer. */
  open(service: string, untilMs: number, reason: string, nowMs: number): Promise<void>;
}

/** What the planner and the workers ask before they send work to a processor. */
export interface ProcessorCircuits {
  /** The services whose circuit is open now, re-read from the store at most every few seconds (`fresh`: now). */
  openServices(options?: { readonly fresh?: boolean }): Promise<readonly string[]>;
  /** Whether a payment on `rail` would meet an open circuit: its processor's or the account directory's. */
  blocks(rail: PaymentMethod, open?: readonly string[]): Promise<boolean>;
}
