import type { MoneyMovement } from '../money-movements.js';
import type { PaymentMethod } from '../records.js';

/** The money-movements table (DESIGN 14): appended to inside the effects' transactions, read by the reconciliation job. */
export interface MoneyMovementStore {
  /**
   * One row on its own: for an outcome that moves money and changes no record (a refund of a
   * waived period, a partial refund). A row written again is the same row.
   */
  record(movement: MoneyMovement): Promise<void>;
  /** Every row of one rail's UTC day (`YYYY-MM-DD`), all shards, in no particular order. */
  listDay(rail: PaymentMethod, day: string): Promise<MoneyMovement[]>;
  /** One page of a rail's UTC day, from an opaque cursor (absent: the day's start); `next` absent when the day is read. */
  pageDay(rail: PaymentMethod, day: string, cursor?: string): Promise<{ readonly items: MoneyMovement[]; readonly next?: string }>;
}
