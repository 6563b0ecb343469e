import type { InstrumentsItem, InstrumentWrite } from '../instruments/instrument.js';
import type { HoldCode } from '../instruments/holds.js';

export type { InstrumentsItem, InstrumentWrite } from '../instruments/instrument.js';

/**
 * The instruments table (DESIGN 3.2) apart from an attempt: an attempt reads and writes the item
 * with its period (BillingLedger.getForAttempt, BillingTransaction.instruments).
 */
export interface InstrumentStore {
  /** Strongly consistent; an empty item when the user has none. */
  get(userId: string): Promise<InstrumentsItem>;
  /** One UpdateItem, no version condition: holds set once, counters added, presentments appended. */
  write(write: InstrumentWrite): Promise<void>;
  /** Removes one hold if it is still there; false when it was not. */
  release(userId: string, instrumentId: string, code: HoldCode): Promise<boolean>;
}
