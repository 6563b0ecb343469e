import type { IdGenerator } from '../billing-record.js';
import type { FailureClass } from '../ladder.js';
import type { AccountDirectory } from '../ports/account-directory.js';
import type { BillingLedger } from '../ports/billing-ledger.js';
import type { Clock } from '../ports/clock.js';
import type { LockStore } from '../ports/locks.js';
import type { PaymentProcessor } from '../ports/processor.js';
import type { PersonDebitCap } from '../person-debits.js';

/** What a use case on billing records is handed: the ports, the lock's timings, and where full errors go. */
export interface UseCaseDeps {
  readonly clock: Clock;
  readonly locks: LockStore;
  readonly billing: BillingLedger;
  readonly processor: PaymentProcessor;
  readonly accounts: AccountDirectory;
  readonly ids: IdGenerator;
  /** Full errors go here (the saved text is an allowlist). */
  readonly onError?: (error: unknown, context: { subscription_id?: string; user_id: string; class: FailureClass; recorded: boolean }) => void;
  /** A decline code the dunning table does not know (classified retry_later): logged, never an error. */
  readonly onUnknownDecline?: (context: { subscription_id: string; user_id: string; decline_code: string }) => void;
  readonly lockLeaseMs?: number;
  readonly lockHeartbeatMs?: number;
  /** See ACCOUNT_CLOCK_SKEW_MS (collectible.ts). */
  readonly accountClockSkewMs?: number;
  /** The daily cap on debits people start (DESIGN 15): manual pay and retry-billing reserve under it; absent, no cap. */
  readonly personDebits?: PersonDebitCap;
}
