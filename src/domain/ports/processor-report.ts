import type { ProcessorMovement } from '../reconciliation/match.js';
import type { PaymentMethod } from '../records.js';

export interface ProcessorReportPage {
  readonly items: readonly ProcessorMovement[];
  /** Where the next page starts; null when the window is read. */
  readonly next: string | null;
}

/** What a processor says moved on one rail between two instants (DESIGN 14), page by page from a cursor. */
export interface ProcessorReport {
  page(rail: PaymentMethod, from: string, to: string, cursor: string | null, signal?: AbortSignal): Promise<ProcessorReportPage>;
}
