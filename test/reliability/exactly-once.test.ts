import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { dueRecord, ledgerViolations } from '../support/ledger.js';
import { seedRecords } from '../support/seed.js';
import { PAYMENT_METHODS } from '../support/unions.js';
import { attemptDepsOf } from '../../src/handlers/shared/attempt-deps.js';
import { ATTEMPT_PATHS, runPath, type PathCall, type PathResult } from '../support/paths.js';
import { BILLING_RETRY_WAITS_MS, HOUR, SHORT_LOCK_LEASE_MS } from '../support/time.js';

/**
 * Exactly-once under contention (DESIGN 3, 10): every path races every other on one record, with
 * random delays, clock steps past the lock lease (takeovers, so the version fence is what
 * protects) and random processor outcomes. After each schedule the normal flow resumes and the
 * books must show one charge per attempt number, each recorded once, and no double charge.
 */

const NOW = '2026-12-01T12:00:00.000Z';
/** Scales the number of generated schedules (RELIABILITY_SCALE=4 for a longer soak). */
const SCALE = Number(process.env.RELIABILITY_SCALE ?? '1');

let app: TestApp;
const tally = new Map<string, number>();
let attempts = 0;

function count(result: PathResult): void {
  attempts += 1;
  const label =
    result.kind === 'outcome' ? result.outcome : result.kind === 'http' ? `http_${result.status}` : result.kind === 'batch' ? `batch_${result.retry ? 'retry' : 'done'}` : result.kind;
  tally.set(label, (tally.get(label) ?? 0) + 1);
}

beforeAll(async () => {
  // A short lease in simulated time: a clock step past it lets a second attempt take the lock
  // while the first is still running.
  app = await createTestApp({ label: 'exactly-once', now: NOW, settings: { lockLeaseMs: SHORT_LOCK_LEASE_MS } });
});

afterAll(() => {
  if (process.env.RELIABILITY_REPORT) console.log({ attempts, outcomes: Object.fromEntries(tally) });
});


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const callArb: fc.Arbitrary<PathCall & { delayMs: number }> = fc.record({
  path: fc.constantFrom(...ATTEMPT_PATHS),
  balanceOpen: fc.boolean(),
  requestKey: fc.constantFrom('key-a', 'key-b', 'key-c'),
  delayMs: fc.integer({ min: 0, max: 15 }),
});

const roundArb = fc.record({
  outcome: fc.constantFrom('approve', 'decline', 'decline', 'error'),
  calls: fc.array(callArb, { minLength: 2, maxLength: 9 }),
  /** A clock step while the calls run: past the lease, past the ladder's first wait, or a day. */
  step: fc.option(fc.record({ atMs: fc.integer({ min: 0, max: 15 }), byMs: fc.constantFrom(SHORT_LOCK_LEASE_MS + 1, BILLING_RETRY_WAITS_MS[0]! + 1, 25 * HOUR) }), { nil: undefined }),
});

const scheduleArb = fc.record({
  rail: fc.constantFrom(...PAYMENT_METHODS),
  rounds: fc.array(roundArb, { minLength: 1, maxLength: 4 }),
});

describe('exactly-once under contention on DynamoDB Local', () => {
  it('charges each attempt number at most once and records every accepted charge, over random schedules of every path', async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArb, async ({ rail, rounds }) => {
        const [record] = await seedRecords(app, dueRecord(app.clock.now(), rail));
        const unexpected: unknown[] = [];
        for (const round of rounds) {
          app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: round.outcome } });
          const runs = round.calls.map(async (call) => {
            await sleep(call.delayMs);
            const result = await runPath(app.depsFor, record, call);
            count(result);
            if (result.kind === 'error') unexpected.push(result.error);
            if (result.kind === 'http' && result.status !== 200 && result.status !== 409) unexpected.push(`HTTP ${result.status} ${result.body}`);
          });
          if (round.step) runs.push(sleep(round.step.atMs).then(() => app.clock.advance(round.step!.byMs)));
          await Promise.all(runs);
        }
        // The normal flow resumes: the processor approves, a day passes, a person pays.
        app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'approve' } });
        app.clock.advance(25 * HOUR);
        const settle = await runPath(app.depsFor, record, { path: 'manual', requestKey: `settle-${randomUUID()}` });
        count(settle);
        if (settle.kind === 'outcome' && settle.outcome === 'declined') {
          // An attempt whose write lost its lock left its decline unrecorded; the repair re-sent that
          // attempt's key and recorded the processor's same answer. The person pays once more.
          count(await runPath(app.depsFor, record, { path: 'manual', requestKey: `settle-${randomUUID()}` }));
        }
        expect(unexpected).toEqual([]);
        expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true })).toEqual([]);
        const after = await app.deps.billing.get(record);
        expect(['COMPLETED', 'ACHSENT']).toContain(after?.billing_status);
      }),
      { numRuns: Math.round(120 * SCALE), endOnFailure: true, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}) },
    );
    // The schedules really contended: some attempts found the lock held.
    expect((tally.get('skipped_locked') ?? 0) + (tally.get('refused') ?? 0) + (tally.get('http_409') ?? 0)).toBeGreaterThan(0);
  }, 240_000);

  it('many users at once: hundreds of concurrent attempts over the batch-worker, balance and manual paths charge each period once', async () => {
    const users = Array.from({ length: 40 }, (_, i) => dueRecord(app.clock.now(), PAYMENT_METHODS[i % PAYMENT_METHODS.length]!));
    await seedRecords(app, ...users);
    const calls = users.flatMap((r) =>
      (['batch-worker', 'scheduled', 'balance', 'manual', 'api-pay', 'balance-worker'] as const).map((path) => ({ record: r, call: { path, balanceOpen: true, requestKey: 'same' } })),
    );
    await Promise.all(calls.map(async ({ record, call }) => count(await runPath(app.depsFor, record, call))));
    for (const r of users) {
      await runPath(app.depsFor, r, { path: 'manual', requestKey: `settle-${randomUUID()}` });
      expect(await ledgerViolations(app, r.user_id, { settled: true, lockFree: true })).toEqual([]);
      expect(app.simulator.charges().filter((c) => c.user_id === r.user_id)).toHaveLength(1);
    }
  });
});

/** Holds `submit` after the processor accepted, until the test lets it go: a paused process. */
class PausedAfterAccept implements PaymentProcessor {
  private gate: (() => void) | undefined;
  readonly accepted: Promise<void>;
  private signalAccepted!: () => void;
  constructor(private readonly inner: PaymentProcessor) {
    this.accepted = new Promise((r) => (this.signalAccepted = r));
  }
  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    const result = await this.inner.submit(request, signal);
    this.signalAccepted();
    await new Promise<void>((r) => (this.gate = r));
    return result;
  }
  resume(): void {
    this.gate?.();
  }
}

describe('the version fence when the lease has expired', () => {
  it('a paused holder whose lease was taken over cannot write: one charge, one recorded outcome', async () => {
    const rails = [...PAYMENT_METHODS];
    for (const rail of rails) {
      const [record] = await seedRecords(app, dueRecord(app.clock.now(), rail));
      app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'approve' } });
      const paused = new PausedAfterAccept(app.simulator);
      // No heartbeat during the test: only the lease and the version stand between the two.
      const base = { ...attemptDepsOf(app.deps, app.deps.logger), lockHeartbeatMs: 600_000 };
      const first = runCollectionAttempt({ ...base, processor: paused }, { key: record, process: 'SCHEDULED', owner: 'paused-holder' });
      await paused.accepted;
      app.clock.advance(SHORT_LOCK_LEASE_MS + 1);
      const second = await runCollectionAttempt(base, { key: record, process: 'RETRY', owner: 'taker' });
      expect(second.kind).toBe(rail === 'ach' ? 'submitted' : 'collected');
      paused.resume();
      const stale = await first;
      expect(stale).toMatchObject({ kind: 'failed_uncounted', class: 'transient' });
      expect(app.simulator.charges().filter((c) => c.user_id === record.user_id)).toHaveLength(1);
      expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
    }
  });

  it('a holder paused before submitting resends the same key after a takeover, and its write is refused', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    let release!: () => void;
    let reachedGate!: () => void;
    const atGate = new Promise<void>((r) => (reachedGate = r));
    const slowAccounts = {
      getAccount: async (userId: string) => {
        reachedGate();
        await new Promise<void>((r) => (release = r));
        return app.simulator.getAccount(userId);
      },
    };
    const base = { ...attemptDepsOf(app.deps, app.deps.logger), lockHeartbeatMs: 600_000 };
    const first = runCollectionAttempt({ ...base, accounts: slowAccounts }, { key: record, process: 'SCHEDULED', owner: 'slow' });
    await atGate;
    app.clock.advance(SHORT_LOCK_LEASE_MS + 1);
    expect((await runCollectionAttempt(base, { key: record, process: 'SCHEDULED', owner: 'taker' })).kind).toBe('collected');
    release();
    expect((await first).kind).toBe('failed_uncounted');
    expect(app.simulator.charges().filter((c) => c.user_id === record.user_id).map((c) => c.idempotency_key)).toEqual([`${record.subscription_id}:1`]);
    expect(await ledgerViolations(app, record.user_id, { settled: true, lockFree: true, maxCountedFailures: 0 })).toEqual([]);
  });
});
