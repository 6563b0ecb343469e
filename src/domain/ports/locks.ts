export interface LockLease {
  readonly key: string;
  readonly owner_name: string;
  readonly record_version_number: string;
  readonly lease_duration_ms: number;
  /** epoch ms */
  readonly lease_expires_at: number;
  /** What the holder is doing, when it is one period's attempt (its billing_date): read by the next holder after a takeover. */
  readonly purpose?: string;
  /**
   * Epoch ms: since when this lease's holder may have presented a key without checking the account
   * now. Its acquisition; a holder that resends a dead holder's key past the account gate carries
   * the dead lease's instant instead (collect.ts). Absent on leases written before it existed.
   */
  readonly held_since?: number;
}

export interface LockStore {
  /**
   * One conditional put: `attribute_not_exists(PartitionKey) OR lease_expires_at < :now`. False when held.
   * When it replaced an expired lease (its holder died or lost its release), `onTakeover` gets that lease.
   */
  tryAcquire(lease: LockLease, nowMs: number, onTakeover?: (previous: LockLease) => void): Promise<boolean>;
  /** Conditional on the previous record_version_number. False when the lease was lost. */
  renew(key: string, previousVersion: string, next: LockLease): Promise<boolean>;
  /** Conditional on record_version_number; releasing a lock someone else now holds is a no-op. */
  release(key: string, recordVersionNumber: string): Promise<void>;
}
