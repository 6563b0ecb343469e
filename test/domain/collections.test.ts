import { describe, expect, it } from 'vitest';
import { collectionMessageSchema, decideCollection, type BillingPeriodMessage as CollectionMessage } from '../../src/domain/collections.js';
import { nextEligibleAt } from '../../src/domain/due-work.js';
import { failureState } from '../../src/domain/ladder.js';
import { planCollections } from '../../src/domain/use-cases/plan-collections.js';
import type { BillingStore, Page, PageRequest } from '../../src/domain/ports.js';
import type { BillingRecord, BillingStatus } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { ManualClock } from '../support/fakes.js';

/** No loan payment is due in these planning tests (the loan scan has its own tests on DynamoDB Local). */
const noLoanRetries = { listDueRetries: async () => ({ items: [], next: null }) };

const NOW = new Date('2026-12-01T12:00:00.000Z');
const HOUR = 60 * 60 * 1000;
const at = (offsetMs: number) => formatInstant(new Date(NOW.getTime() + offsetMs));

/** listDue over an array (the due-index: each open record at its next eligible instant), paged by index, as the port describes it. */
function storeOf(records: BillingRecord[]): Pick<BillingStore, 'listDue' | 'countFailing'> & { pages: number; read: BillingRecord[] } {
  const pageOf = (all: BillingRecord[], page?: PageRequest): Page<BillingRecord> => {
    store.pages += 1;
    const start = Number(page?.cursor ?? 0);
    const end = start + (page?.limit ?? 50);
    store.read.push(...all.slice(start, end));
    return { items: all.slice(start, end), next: end < all.length ? String(end) : null };
  };
  const store = {
    pages: 0,
    read: [] as BillingRecord[],
    async listDue(status: BillingStatus, due: string, page?: PageRequest): Promise<Page<BillingRecord>> {
      return pageOf(records.filter((r) => r.billing_status === status && (nextEligibleAt(r) ?? '~') <= due), page);
    },
    async countFailing(): Promise<{ retrying: number; parked: number }> {
      return { retrying: records.filter((r) => failureState(r) === 'retrying').length, parked: records.filter((r) => failureState(r) === 'parked').length };
    },
  };
  return store;
}

describe('decideCollection', () => {
  it('enqueues a due PENDING record as SCHEDULED with the wire shape the batch-worker validates', () => {
    const record = makeRecord({ billing_date: at(-1) });
    const decision = decideCollection(record, 'SCHEDULED', NOW);
    expect(decision.kind).toBe('enqueue');
    if (decision.kind !== 'enqueue') return;
    expect(collectionMessageSchema.parse(JSON.parse(JSON.stringify(decision.message)))).toEqual(decision.message);
  });

  it('skips a record not yet due, and a FAILED record inside its daily retry wait', () => {
    expect(decideCollection(makeRecord({ billing_date: at(1) }), 'SCHEDULED', NOW)).toEqual({ kind: 'skip', reason: 'not_due' });
    const failed = makeRecord({ billing_status: 'FAILED', billing_date: at(-48 * HOUR), payment_attempts: 1, last_attempt_date: at(-24 * HOUR + 1) });
    expect(decideCollection(failed, 'RETRY', NOW)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection({ ...failed, last_attempt_date: at(-24 * HOUR) }, 'RETRY', NOW).kind).toBe('enqueue');
  });

  it('does not enqueue what the attempt would refuse: ACH holds after returns and disputed cards', () => {
    const failed = { billing_status: 'FAILED' as const, billing_date: at(-48 * HOUR), last_attempt_date: at(-25 * HOUR) };
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'ach', ach_blocked: true }), 'RETRY', NOW)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'ach', ach_unauthorized: true }), 'RETRY', NOW)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'card', card_disputed: true }), 'RETRY', NOW)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'ach' }), 'RETRY', NOW).kind).toBe('enqueue');
    // A re-presentment is allowed within 180 days of the original entry, and refused after.
    const represented = { ...failed, payment_method: 'ach' as const, ach_represented: 1 };
    expect(decideCollection(makeRecord({ ...represented, ach_original_entry_date: at(-179 * 24 * HOUR) }), 'RETRY', NOW).kind).toBe('enqueue');
    expect(decideCollection(makeRecord({ ...represented, ach_original_entry_date: at(-181 * 24 * HOUR) }), 'RETRY', NOW)).toEqual({ kind: 'skip', reason: 'not_due' });
  });

  it('tells waiting from parked, and ignores a failure saved for work that has since moved on', () => {
    const d = at(-HOUR);
    const saved = { billing_failed_for: `${d}#0`, billing_failure_count: 3, billing_failed_at: at(-HOUR), billing_last_error: 'x' };
    expect(decideCollection(makeRecord({ billing_date: d, ...saved, billing_next_attempt_at: at(1) }), 'SCHEDULED', NOW)).toEqual({ kind: 'skip', reason: 'waiting' });
    expect(decideCollection(makeRecord({ billing_date: d, ...saved }), 'SCHEDULED', NOW)).toEqual({ kind: 'skip', reason: 'parked' });
    expect(decideCollection(makeRecord({ billing_date: d, ...saved, billing_next_attempt_at: at(0) }), 'SCHEDULED', NOW).kind).toBe('enqueue');
    expect(decideCollection(makeRecord({ billing_date: d, ...saved, payment_attempts: 1 }), 'SCHEDULED', NOW).kind).toBe('enqueue');
  });
});

describe('planCollections', () => {
  const clock = new ManualClock(NOW);

  it('sends every page in full and counts live failures across all scans; a parked record is not read', async () => {
    const d = at(-HOUR);
    const parked = makeRecord({ billing_date: d, billing_failed_for: `${d}#0`, billing_failure_count: 8, billing_failed_at: d, billing_last_error: 'x' });
    const records = [
      ...Array.from({ length: 7 }, () => makeRecord({ billing_date: d })),
      parked,
      makeRecord({ billing_status: 'PAUSED', billing_date: d, paused_months: 1 }),
    ];
    const sent: CollectionMessage[][] = [];
    const store = storeOf(records);
    const plan = await planCollections({ billing: store, payments: noLoanRetries, clock }, { pageSize: 3, shouldContinue: () => true, send: async (m) => void sent.push([...(m as CollectionMessage[])]) });
    expect(plan.summary).toEqual({ enqueued: 8, skipped_waiting: 0, skipped_parked: 0, loan_retries_enqueued: 0, truncated: false });
    expect(store.read).not.toContain(parked);
    expect(plan.failing).toEqual({ retrying: 0, parked: 1 });
    expect(sent.map((page) => page.length)).toEqual([3, 3, 1, 1]);
    expect(sent.flat().filter((m) => m.process === 'PAUSE')).toHaveLength(1);
  });

  it('checks the deadline before each page and never reads a page it will not send', async () => {
    const store = storeOf(Array.from({ length: 10 }, () => makeRecord({ billing_date: at(-HOUR) })));
    let budget = 2;
    const plan = await planCollections({ billing: store, payments: noLoanRetries, clock }, { pageSize: 4, shouldContinue: () => budget-- > 0, send: async () => undefined });
    expect(plan.summary).toMatchObject({ enqueued: 8, truncated: true });
    expect(store.pages).toBe(2);
  });

  it('reads FAILED records by their next automatic attempt: a declined period waiting for a later slot, or exhausted, is never read', async () => {
    const failed = { billing_status: 'FAILED' as const, billing_date: at(-48 * HOUR), payment_attempts: 1, last_attempt_date: at(-HOUR), decline_code: 'insufficient_funds' };
    const due = makeRecord({ ...failed, decline_class: 'retry_later', dunning_first_declined_at: at(-25 * HOUR), dunning_attempts: 1, dunning_next_attempt_at: at(-HOUR) });
    const later = makeRecord({ ...failed, decline_class: 'retry_later', dunning_first_declined_at: at(-HOUR), dunning_attempts: 1, dunning_next_attempt_at: at(23 * HOUR) });
    const exhausted = makeRecord({ ...failed, decline_code: 'lost_card', decline_class: 'do_not_retry', dunning_first_declined_at: at(-HOUR), dunning_attempts: 1 });
    const store = storeOf([due, later, exhausted]);
    const sent: CollectionMessage[] = [];
    const plan = await planCollections({ billing: store, payments: noLoanRetries, clock }, { shouldContinue: () => true, send: async (m) => void sent.push(...(m as CollectionMessage[])) });
    expect(sent.map((m) => m.subscription_id)).toEqual([due.subscription_id]);
    expect(plan.summary.enqueued).toBe(1);
    expect(store.read.map((r) => r.subscription_id)).toEqual([due.subscription_id]);
  });

  it('sends one message per record even if the index shows it twice', async () => {
    const record = makeRecord({ billing_date: at(-HOUR) });
    const sent: CollectionMessage[] = [];
    const plan = await planCollections({ billing: storeOf([record, record]), payments: noLoanRetries, clock }, { shouldContinue: () => true, send: async (m) => void sent.push(...(m as CollectionMessage[])) });
    expect(plan.summary.enqueued).toBe(1);
    expect(sent).toHaveLength(1);
  });
});
