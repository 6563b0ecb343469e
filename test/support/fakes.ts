import type { Clock } from '../../src/domain/ports/clock.js';
import type { LockLease, LockStore } from '../../src/domain/ports/locks.js';

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  set(to: Date | string): void {
    this.current = new Date(to).getTime();
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

/**
 * The locks table in memory, with the DynamoDB conditions of DESIGN 2.6:
 * acquire = put if `attribute_not_exists(PartitionKey) OR lease_expires_at < :now`;
 * renew and release are conditional on `record_version_number`.
 */
export class InMemoryLockStore implements LockStore {
  private readonly items = new Map<string, LockLease>();
  /** When set, the next renew throws this error (a heartbeat that cannot reach the table). */
  failNextRenewWith: Error | undefined;
  readonly calls = { tryAcquire: 0, renew: 0, release: 0 };

  async tryAcquire(lease: LockLease, nowMs: number, onTakeover?: (previous: LockLease) => void): Promise<boolean> {
    this.calls.tryAcquire += 1;
    const existing = this.items.get(lease.key);
    if (existing && !(existing.lease_expires_at < nowMs)) return false;
    this.items.set(lease.key, { ...lease });
    if (existing) onTakeover?.({ ...existing });
    return true;
  }

  async renew(key: string, previousVersion: string, next: LockLease): Promise<boolean> {
    this.calls.renew += 1;
    if (this.failNextRenewWith) {
      const error = this.failNextRenewWith;
      this.failNextRenewWith = undefined;
      throw error;
    }
    const existing = this.items.get(key);
    if (!existing || existing.record_version_number !== previousVersion) return false;
    this.items.set(key, { ...next });
    return true;
  }

  async release(key: string, recordVersionNumber: string): Promise<void> {
    this.calls.release += 1;
    const existing = this.items.get(key);
    if (existing && existing.record_version_number === recordVersionNumber) this.items.delete(key);
  }

  /** The item as the table holds it now (a copy), or undefined. */
  get(key: string): LockLease | undefined {
    const item = this.items.get(key);
    return item ? { ...item } : undefined;
  }

  /** Puts an item directly, as another process would have written it. */
  put(lease: LockLease): void {
    this.items.set(lease.key, { ...lease });
  }
}
