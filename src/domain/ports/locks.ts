export interface LockLease {
  readonly key: string;
  readonly owner_name: string;
  readonly record_version_number: string;
  readonly lease_duration_ms: number;
  readonly lease_expires_at: number;
  /** The period (billing_date) the holder attempts: a holder that takes over learns it may be charged. */
  readonly purpose?: string;
  /** Since when (epoch ms) the holder may have presented a key unchecked against the account (collect.ts). */
  readonly held_since?: number;
}

export interface LockStore {
  /** False when held; a replaced expired lease (its holder died) goes to `onTakeover`. */
  tryAcquire(lease: LockLease, nowMs: number, onTakeover?: (previous: LockLease) => void): Promise<boolean>;
  /** Conditional on the previous record_version_number. False when the lease was lost. */
  renew(key: string, previousVersion: string, next: LockLease): Promise<boolean>;
  /** Conditional on record_version_number; releasing a lock someone else now holds is a no-op. */
  release(key: string, recordVersionNumber: string): Promise<void>;
}
