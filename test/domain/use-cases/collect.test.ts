import { beforeEach, describe, expect, it } from 'vitest';
import { historyRowOf } from '../../../src/domain/billing-record.js';
import { nextFreeInstant } from '../../../src/domain/chain.js';
import { ProcessorError } from '../../../src/domain/errors.js';
import { dueKey } from '../../../src/domain/ladder.js';
import { userLockKey } from '../../../src/domain/lock.js';
import type { PaymentRequest, PaymentResult } from '../../../src/domain/ports/processor.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { runCollectionAttempt } from '../../../src/domain/use-cases/collect.js';
import { dueRecord } from '../../support/billing-fixtures.js';
import { memoryAttempt, type MemoryAttempt } from '../../support/memory-ledger.js';
import { seedRecords } from '../../support/seed.js';
import { BILLING_RETRY_WAITS_MS } from '../../support/time.js';

/** The ladder's first wait: where a first counted failure saves its next attempt. */
const FIRST_WAIT = BILLING_RETRY_WAITS_MS[0]!;

const NOW = '2026-12-01T12:00:00.000Z';

describe('the collection attempt, on the in-memory ledger', () => {
  let m: MemoryAttempt;
  beforeEach(() => {
    m = memoryAttempt(NOW);
  });

  const attempt = (record: BillingRecord) => runCollectionAttempt(m.deps, { key: record, process: 'SCHEDULED', owner: 'run-1' });

  it('collects a due period and opens the next one in the same commit, which releases the lock', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    const outcome = await attempt(record);
    expect(outcome).toMatchObject({ kind: 'collected', record: { billing_status: 'COMPLETED', payment_attempts: 1 } });
    const [collected, next] = m.ledger.recordsOf(record.user_id);
    expect(collected).toMatchObject({ billing_status: 'COMPLETED', transaction_id: m.processor.charges()[0]!.confirmation_id });
    expect(next).toMatchObject({ billing_status: 'PENDING', payment_attempts: 0 });
    expect(m.ledger.calls.commit).toBe(2);
    expect(m.locks.calls.release).toBe(1);
    expect(m.locks.get(userLockKey(record.user_id))).toBeUndefined();
  });

  it('tallies an ACH debit in the commit that records its submission', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'ach'));
    expect((await attempt(record)).kind).toBe('submitted');
    expect(m.ledger.achRates).toHaveLength(1);
  });

  it('skips a user whose lock another holds, and writes nothing', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    m.locks.put({ key: userLockKey(record.user_id), owner_name: 'other', record_version_number: 'v-other', lease_duration_ms: 60_000, lease_expires_at: Date.parse(NOW) + 60_000 });
    expect(await attempt(record)).toEqual({ kind: 'skipped_locked' });
    expect(m.ledger.recordsOf(record.user_id)).toEqual([record]);
    expect(m.processor.charges()).toHaveLength(0);
  });

  it('a held period whose refusal the record already carries stays refused when its attempt takes over a dead lease naming it', async () => {
    const held = { code: 'card_disputed', decided_by: 'card.dispute', since: formatInstant(new Date(Date.parse(NOW) - 2 * FIRST_WAIT)) } as const;
    const [record] = await seedRecords(m, dueRecord(new Date(NOW), 'pinless', { card_disputed: true, held_on: held }));
    // An earlier holder of this period, refused by the same hold, died before its release.
    m.locks.put({ key: userLockKey(record.user_id), owner_name: 'dead', record_version_number: 'v-dead', lease_duration_ms: 60_000, lease_expires_at: Date.parse(NOW) - 1, purpose: record.billing_date, held_since: Date.parse(NOW) - 60_001 });
    const outcome = await attempt(record);
    expect(outcome).toMatchObject({ kind: 'held', refusal: { code: 'card_disputed' } });
    expect(m.processor.charges()).toHaveLength(0);
  });

  it('saves a counted failure when the processor is down: the ladder’s first wait and the presented key', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    m.processor.configure({ default: 'error' });
    const outcome = await attempt(record);
    expect(outcome.kind).toBe('failed_counted');
    expect(await m.ledger.get(record)).toMatchObject({
      billing_status: 'PENDING',
      version: record.version + 1,
      billing_failed_for: dueKey(record),
      billing_failure_count: 1,
      billing_next_attempt_at: formatInstant(new Date(Date.parse(NOW) + FIRST_WAIT)),
      billing_presented_for: dueKey(record),
    });
    expect(m.locks.get(userLockKey(record.user_id))).toBeUndefined();
  });

  it('saves no failure when the record moved on while the processor failed', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    const moved = { ...record, version: record.version + 1, last_run_date: formatInstant(new Date(Date.parse(NOW) + 1)) };
    const movingProcessor = {
      submit: async (_: PaymentRequest): Promise<PaymentResult> => {
        m.ledger.put(moved);
        throw new ProcessorError('processor_unavailable', 'The payment processor is unavailable.');
      },
    };
    const outcome = await runCollectionAttempt({ ...m.deps, processor: movingProcessor }, { key: record, process: 'SCHEDULED', owner: 'run-1' });
    expect(outcome).toMatchObject({ kind: 'failed_uncounted', class: 'record_moved' });
    expect(await m.ledger.get(record)).toEqual(moved);
  });

  it('writes nothing when the record changed before its commit; the next attempt resends the same key', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    const moved = { ...record, version: record.version + 1, last_run_date: formatInstant(new Date(Date.parse(NOW) + 1)) };
    const racing = {
      submit: async (request: PaymentRequest): Promise<PaymentResult> => {
        m.ledger.put(moved);
        return m.processor.submit(request);
      },
    };
    const first = await runCollectionAttempt({ ...m.deps, processor: racing }, { key: record, process: 'SCHEDULED', owner: 'run-1' });
    expect(first).toMatchObject({ kind: 'failed_uncounted', class: 'transient' });
    expect(m.ledger.recordsOf(record.user_id)).toEqual([moved]);
    expect((await attempt(moved)).kind).toBe('collected');
    expect(m.processor.charges().map((c) => c.idempotency_key)).toEqual([`${record.subscription_id}:1`]);
    expect(await m.ledger.get(record)).toMatchObject({ billing_status: 'COMPLETED', transaction_id: m.processor.charges()[0]!.confirmation_id });
  });

  describe('when the next period’s key is taken', () => {
    /** Where the next period lands when nothing is in its way. */
    async function successorDate(record: BillingRecord): Promise<string> {
      const clean = memoryAttempt(NOW);
      await clean.ledger.commit({ writes: [{ kind: 'create', record }], history: [historyRowOf(record)] });
      await runCollectionAttempt(clean.deps, { key: record, process: 'SCHEDULED', owner: 'probe' });
      return clean.ledger.recordsOf(record.user_id)[1]!.billing_date;
    }

    it('moves it past another chain’s record to the next free instant', async () => {
      const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
      const at = await successorDate(record);
      const other = dueRecord(new Date(NOW), 'pinless', { user_id: record.user_id, billing_date: at, chain_id: 'another-chain', billing_status: 'CANCELLED' });
      m.ledger.put(other);
      await attempt(record);
      const dates = m.ledger.recordsOf(record.user_id).map((r) => [r.billing_date, r.subscription_id]);
      expect(dates).toEqual([[record.billing_date, record.subscription_id], [at, other.subscription_id], [nextFreeInstant(at), expect.not.stringMatching(other.subscription_id)]]);
      const successor = m.ledger.recordsOf(record.user_id)[2]!;
      expect(m.ledger.rowsOf(record.user_id).filter((r) => r.subscription_id === successor.subscription_id).map((r) => r.billing_date)).toEqual([nextFreeInstant(at)]);
    });

    it('creates no second period when its own chain’s record is already there', async () => {
      const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
      const at = await successorDate(record);
      const existing = dueRecord(new Date(NOW), 'pinless', { user_id: record.user_id, billing_date: at });
      m.ledger.put(existing);
      expect((await attempt(record)).kind).toBe('collected');
      expect(m.ledger.recordsOf(record.user_id)).toEqual([expect.objectContaining({ billing_status: 'COMPLETED' }), existing]);
    });
  });

  it('deactivates the period of a banned account without presenting anything', async () => {
    const [record] = await seedRecords(m, dueRecord(new Date(NOW)));
    m.processor.configure({ accounts: { [record.user_id]: { status: 'banned' } } });
    const outcome = await attempt(record);
    expect(outcome.kind).toBe('inactive');
    expect(await m.ledger.get(record)).toMatchObject({ billing_status: 'INACTIVE', updated_event: 'USER_BANNED' });
    expect(m.processor.charges()).toHaveLength(0);
  });
});
