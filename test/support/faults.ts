import type { AchRateCounts } from '../../src/domain/ach-return-rates.js';
import type { DunningState } from '../../src/domain/dunning.js';
import { ProvisionedThroughputExceededException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { BillingFailureFields } from '../../src/domain/ladder.js';
import type { AccountDirectory, AccountSnapshot } from '../../src/domain/ports/account-directory.js';
import type { AttemptRead, BillingTransaction } from '../../src/domain/ports/billing-ledger.js';
import type { BillingStore } from '../../src/domain/ports/billing-store.js';
import type { LockLease, LockStore } from '../../src/domain/ports/locks.js';
import type { Page, PageRequest } from '../../src/domain/ports/page.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import type { StripeEventStore, ClaimResult, RecordResult } from '../../src/domain/ports/stripe-events.js';
import type { BillingKey, BillingRecord, HistoryRow, StripeEventClaim } from '../../src/domain/records.js';

/**
 * Fault injection for the reliability suites. Every port call passes named points; a plan arms a
 * point either to throw one error (the process goes on) or to crash (the process dies there: this
 * call and every later call of the same process fail, so nothing else it would do reaches a store).
 */

export type FaultPoint =
  | 'lock.acquire.after'
  | 'lock.renew.before'
  | 'lock.release.before'
  | 'billing.get.after'
  | 'billing.find.after'
  | 'billing.list.after'
  | 'billing.commit.before'
  | 'billing.commit.after'
  | 'billing.recordFailure.before'
  | 'billing.recordFailure.after'
  | 'accounts.after'
  | 'processor.before'
  | 'processor.accepted'
  | 'stripe.claim.after'
  | 'stripe.mark.before';

/** The error a dead process's calls fail with; deliberately neither transient nor a domain error. */
export class ProcessCrashedError extends Error {
  override readonly name = 'ProcessCrashedError';
}

export interface FaultSpec {
  readonly point: FaultPoint;
  /** `throw`: one error, the process continues; `crash`: the process is dead from here on. */
  readonly mode: 'throw' | 'crash';
  readonly error?: () => unknown;
  /** Fires on the nth pass through the point (1-based, default 1). */
  readonly nth?: number;
}

/** One process's fault plan: which points fire, and whether the process is dead. */
export class FaultInjector {
  private readonly passes = new Map<FaultPoint, number>();
  readonly fired: FaultPoint[] = [];
  crashed = false;

  constructor(private readonly specs: readonly FaultSpec[] = []) {}

  /** Throws when the process is dead: nothing it calls reaches a store any more. */
  alive(point: string): void {
    if (this.crashed) throw new ProcessCrashedError(`the process is dead (call at ${point})`);
  }

  pass(point: FaultPoint): void {
    this.alive(point);
    const n = (this.passes.get(point) ?? 0) + 1;
    this.passes.set(point, n);
    const spec = this.specs.find((s) => s.point === point && (s.nth ?? 1) === n);
    if (!spec) return;
    this.fired.push(point);
    if (spec.mode === 'crash') {
      this.crashed = true;
      throw new ProcessCrashedError(`crashed at ${point}`);
    }
    throw spec.error ? spec.error() : new Error(`injected fault at ${point}`);
  }
}

export class FaultyLockStore implements LockStore {
  constructor(
    private readonly inner: LockStore,
    private readonly faults: FaultInjector,
  ) {}

  async tryAcquire(lease: LockLease, nowMs: number, onTakeover?: (previous: LockLease) => void): Promise<boolean> {
    this.faults.alive('lock.acquire');
    const acquired = await this.inner.tryAcquire(lease, nowMs, onTakeover);
    if (acquired) this.faults.pass('lock.acquire.after');
    return acquired;
  }

  async renew(key: string, previousVersion: string, next: LockLease): Promise<boolean> {
    this.faults.pass('lock.renew.before');
    return this.inner.renew(key, previousVersion, next);
  }

  async release(key: string, recordVersionNumber: string): Promise<void> {
    this.faults.pass('lock.release.before');
    return this.inner.release(key, recordVersionNumber);
  }
}

export class FaultyBillingStore implements BillingStore {
  constructor(
    private readonly inner: BillingStore,
    private readonly faults: FaultInjector,
  ) {}

  async get(key: BillingKey): Promise<BillingRecord | undefined> {
    this.faults.alive('billing.get');
    const record = await this.inner.get(key);
    this.faults.pass('billing.get.after');
    return record;
  }

  async getForAttempt(key: BillingKey): Promise<AttemptRead> {
    this.faults.alive('billing.get');
    const read = await this.inner.getForAttempt(key);
    this.faults.pass('billing.get.after');
    return read;
  }

  async findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined> {
    this.faults.alive('billing.find');
    const record = await this.inner.findBySubscriptionId(subscriptionId);
    this.faults.pass('billing.find.after');
    return record;
  }

  async locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]> {
    this.faults.alive('billing.find');
    const keys = await this.inner.locateSubscription(subscriptionId);
    this.faults.pass('billing.find.after');
    return keys;
  }

  async listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>> {
    this.faults.alive('billing.list');
    const out = await this.inner.listByUser(userId, page);
    this.faults.pass('billing.list.after');
    return out;
  }

  async listExceptions(page?: PageRequest): Promise<Page<BillingRecord>> {
    this.faults.alive('billing.listExceptions');
    return this.inner.listExceptions(page);
  }

  async countFailing(): Promise<{ retrying: number; parked: number }> {
    this.faults.alive('billing.listFailing');
    return this.inner.countFailing();
  }

  async listFailing(page?: PageRequest): Promise<Page<BillingRecord>> {
    this.faults.alive('billing.listFailing');
    return this.inner.listFailing(page);
  }

  async *streamDue(dueAtOrBefore: string, options?: { readonly pageSize?: number }): AsyncGenerator<readonly BillingRecord[]> {
    const pages = this.inner.streamDue(dueAtOrBefore, options)[Symbol.asyncIterator]();
    try {
      for (;;) {
        // Every page is a read of the process: a dead process reads nothing more.
        this.faults.alive('billing.streamDue');
        const next = await pages.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await pages.return?.();
    }
  }

  async listDunning(state: DunningState, page?: PageRequest, nextAttemptBefore?: string): Promise<Page<BillingRecord>> {
    this.faults.alive('billing.listDunning');
    return this.inner.listDunning(state, page, nextAttemptBefore);
  }

  async listHeld(page?: PageRequest): Promise<Page<BillingRecord>> {
    this.faults.alive('billing.listHeld');
    return this.inner.listHeld(page);
  }

  async countDunning(): Promise<Record<DunningState, number>> {
    this.faults.alive('billing.countDunning');
    return this.inner.countDunning();
  }

  async achRateCounts(fromDay: string, toDay: string): Promise<AchRateCounts> {
    this.faults.alive('billing.achRateCounts');
    return this.inner.achRateCounts(fromDay, toDay);
  }

  async history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>> {
    this.faults.alive('billing.history');
    return this.inner.history(subscriptionId, page);
  }

  /** `before` throws with nothing written; `after` throws once the transaction is in DynamoDB (a lost answer). */
  async commit(tx: BillingTransaction): Promise<{ created: boolean }> {
    this.faults.pass('billing.commit.before');
    const out = await this.inner.commit(tx);
    this.faults.pass('billing.commit.after');
    return out;
  }

  async addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void> {
    this.faults.pass('billing.commit.before');
    await this.inner.addAll(records, history);
    this.faults.pass('billing.commit.after');
  }

  async recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean> {
    this.faults.pass('billing.recordFailure.before');
    const landed = await this.inner.recordBillingFailure(read, after, history);
    this.faults.pass('billing.recordFailure.after');
    return landed;
  }
}

/** The processor and the account directory (the simulator is both). */
export class FaultyProcessor implements PaymentProcessor, AccountDirectory {
  constructor(
    private readonly processor: PaymentProcessor,
    private readonly accounts: AccountDirectory,
    private readonly faults: FaultInjector,
  ) {}

  async getAccount(userId: string, signal?: AbortSignal): Promise<AccountSnapshot> {
    this.faults.alive('accounts');
    const snapshot = await this.accounts.getAccount(userId, signal);
    this.faults.pass('accounts.after');
    return snapshot;
  }

  /** `processor.accepted` fires after the processor took the payment: the charge exists, the answer is lost. */
  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    this.faults.pass('processor.before');
    const result = await this.processor.submit(request, signal);
    this.faults.pass('processor.accepted');
    return result;
  }
}

export class FaultyStripeEventStore implements StripeEventStore {
  constructor(
    private readonly inner: StripeEventStore,
    private readonly faults: FaultInjector,
  ) {}

  async claim(eventId: string, nowMs: number, leaseMs: number): Promise<ClaimResult> {
    this.faults.alive('stripe.claim');
    const claim = await this.inner.claim(eventId, nowMs, leaseMs);
    this.faults.pass('stripe.claim.after');
    return claim;
  }

  async recordProcessed(eventId: string, eventType: string, nowMs: number): Promise<RecordResult> {
    this.faults.alive('stripe.record');
    return this.inner.recordProcessed(eventId, eventType, nowMs);
  }

  async markProcessed(eventId: string, claimToken: string, eventType: string, nowMs: number): Promise<boolean> {
    this.faults.pass('stripe.mark.before');
    return this.inner.markProcessed(eventId, claimToken, eventType, nowMs);
  }

  async release(eventId: string, claimToken: string): Promise<void> {
    this.faults.alive('stripe.release');
    return this.inner.release(eventId, claimToken);
  }

  async get(eventId: string): Promise<StripeEventClaim | undefined> {
    this.faults.alive('stripe.get');
    return this.inner.get(eventId);
  }
}

/** The ports of one process under one fault plan. */
export function faultyPorts<D extends { billing: BillingStore; locks: LockStore; processor: PaymentProcessor; accounts: AccountDirectory; stripeEvents?: StripeEventStore }>(
  deps: D,
  faults: FaultInjector,
): D {
  const processor = new FaultyProcessor(deps.processor, deps.accounts, faults);
  return {
    ...deps,
    billing: new FaultyBillingStore(deps.billing, faults),
    locks: new FaultyLockStore(deps.locks, faults),
    processor,
    accounts: processor,
    ...(deps.stripeEvents ? { stripeEvents: new FaultyStripeEventStore(deps.stripeEvents, faults) } : {}),
  };
}

/* ---------------- DynamoDB client middleware ---------------- */

export interface ThrottlePlan {
  /** Command names to throttle, e.g. `TransactWriteItemsCommand`; empty = every command. */
  commands: string[];
  /** Requests (SDK attempts, retries included) still to throttle. */
  remaining: number;
  /** Requests throttled so far. */
  thrown: number;
}

/**
 * Adds a middleware below the SDK's retry layer that answers chosen requests with
 * ProvisionedThroughputExceededException before they reach DynamoDB, as an overloaded partition
 * would. The SDK's own retries see it (they retry throttles); what survives them reaches the adapter.
 */
export function injectThrottling(client: DynamoDBClient): ThrottlePlan {
  const plan: ThrottlePlan = { commands: [], remaining: 0, thrown: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String((context as { commandName?: unknown }).commandName ?? '');
      if (plan.remaining > 0 && (plan.commands.length === 0 || plan.commands.includes(command))) {
        plan.remaining -= 1;
        plan.thrown += 1;
        throw new ProvisionedThroughputExceededException({
          message: 'The level of configured provisioned throughput for the table was exceeded (injected).',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'deserialize', name: 'injectThrottling', priority: 'high', override: true },
  );
  return plan;
}
