import { describe, expect, it } from 'vitest';
import { loanRetryMessage, messageIdOf, type BillingPeriodMessage as CollectionMessage } from '../../../src/domain/collections.js';
import { nextEligibleAt } from '../../../src/domain/due-work.js';
import { failureState } from '../../../src/domain/ladder.js';
import { planCollections } from '../../../src/domain/use-cases/plan-collections.js';
import type { BillingStore } from '../../../src/domain/ports/billing-store.js';
import type { DueLoanPaymentRetry, PaymentsStore } from '../../../src/domain/ports/loan-payments.js';
import type { BillingRecord } from '../../../src/domain/records.js';
import { formatInstant } from '../../../src/domain/time.js';
import { makeRecord } from '../../support/billing-fixtures.js';
import { ManualClock } from '../../support/fakes.js';
import { HOUR } from '../../support/time.js';

/** No loan payment is due in these planning tests (the loan stream has its own tests on DynamoDB Local). */
const noLoanRetries = { async *streamDueRetries(): AsyncGenerator<readonly DueLoanPaymentRetry[]> {} };

const NOW = new Date('2026-12-01T12:00:00.000Z');
const at = (offsetMs: number) => formatInstant(new Date(NOW.getTime() + offsetMs));

/**
 * streamDue over an array (the due-index: each open record at its next eligible instant, every
 * status in one stream, oldest first), in pages as the port describes it: a page is read only when asked for.
 */
function storeOf(records: BillingRecord[]): Pick<BillingStore, 'streamDue' | 'countFailing'> & { pages: number; read: BillingRecord[] } {
  const store = {
    pages: 0,
    read: [] as BillingRecord[],
    async *streamDue(due: string, options?: { pageSize?: number }): AsyncGenerator<readonly BillingRecord[]> {
      const all = records.filter((r) => (nextEligibleAt(r) ?? '~') <= due).sort((a, b) => nextEligibleAt(a)!.localeCompare(nextEligibleAt(b)!));
      const size = options?.pageSize ?? 50;
      for (let start = 0; start < all.length; start += size) {
        store.pages += 1;
        const page = all.slice(start, start + size);
        store.read.push(...page);
        yield page;
      }
    },
    async countFailing(): Promise<{ retrying: number; parked: number }> {
      return { retrying: records.filter((r) => failureState(r) === 'retrying').length, parked: records.filter((r) => failureState(r) === 'parked').length };
    },
  };
  return store;
}

/** Due loan payments in pages, logging when each page is asked for and handed out. */
function loansOf(due: DueLoanPaymentRetry[], log: string[] = [], pageSize = 50): Pick<PaymentsStore, 'streamDueRetries'> {
  return {
    async *streamDueRetries(): AsyncGenerator<readonly DueLoanPaymentRetry[]> {
      for (let start = 0; start < due.length; start += pageSize) {
        log.push('loans:read');
        yield due.slice(start, start + pageSize);
      }
    },
  };
}

const loan = (n: number): DueLoanPaymentRetry => ({ user_id: `user-loan-${n}`, loan_id: `loan-${n}`, payment_id: `payment-${n}`, next_attempt_at: at(-HOUR) });

describe('planCollections', () => {
  const clock = new ManualClock(NOW);

  it('sends every page in full and counts live failures; a parked record is not read', async () => {
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
    // One stream for every status: PENDING and PAUSED records share its pages.
    expect(sent.map((page) => page.length)).toEqual([3, 3, 2]);
    expect(sent.flat().filter((m) => m.process === 'PAUSE')).toHaveLength(1);
  });

  it('checks the deadline before each page and never reads a page it will not send', async () => {
    const store = storeOf(Array.from({ length: 10 }, () => makeRecord({ billing_date: at(-HOUR) })));
    // Two billing pages, and the loan stream's first (empty) one.
    let budget = 3;
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

  it("decides each record's process by its own status, in one stream oldest first, and skips a status the run does not collect", async () => {
    const pending = makeRecord({ billing_date: at(-3 * HOUR) });
    const failed = makeRecord({ billing_status: 'FAILED', billing_date: at(-72 * HOUR), payment_attempts: 1, last_attempt_date: at(-26 * HOUR) });
    const paused = makeRecord({ billing_status: 'PAUSED', billing_date: at(-HOUR), paused_months: 1 });
    // A stale index entry (the index is eventually consistent): the item says ACHSENT, so nothing is sent.
    const stale = makeRecord({ billing_date: at(-4 * HOUR) });
    const store = storeOf([paused, pending, failed, stale]);
    const sent: CollectionMessage[] = [];
    const achsent = { ...stale, billing_status: 'ACHSENT' as const };
    const billing = {
      ...store,
      async *streamDue(due: string, options?: { pageSize?: number }) {
        for await (const page of store.streamDue(due, options)) yield page.map((r) => (r === stale ? achsent : r));
      },
    };
    const plan = await planCollections({ billing, payments: noLoanRetries, clock }, { shouldContinue: () => true, send: async (m) => void sent.push(...(m as CollectionMessage[])) });
    expect(sent.map((m) => [m.subscription_id, m.process])).toEqual([
      [pending.subscription_id, 'SCHEDULED'], // due 3 h ago
      [failed.subscription_id, 'RETRY'], // due 2 h ago (24 h after its last attempt)
      [paused.subscription_id, 'PAUSE'],
    ]);
    expect(plan.summary).toMatchObject({ enqueued: 3, truncated: false });
    expect(store.pages).toBe(1);
  });

  it('reads the due loan payments alongside the billing records, not after them', async () => {
    const log: string[] = [];
    const store = storeOf([makeRecord({ billing_date: at(-HOUR) })]);
    const billing = {
      ...store,
      async *streamDue(due: string, options?: { pageSize?: number }) {
        log.push('billing:asked');
        // The first billing page takes a while (a round trip to every shard).
        await new Promise((resolve) => setTimeout(resolve, 20));
        log.push('billing:read');
        yield* store.streamDue(due, options);
      },
    };
    const sent: string[] = [];
    const plan = await planCollections(
      { billing, payments: loansOf([loan(1), loan(2)], log), clock },
      { shouldContinue: () => true, send: async (m) => void sent.push(...m.map(messageIdOf)) },
    );
    expect(log.indexOf('loans:read')).toBeGreaterThanOrEqual(0);
    expect(log.indexOf('loans:read')).toBeLessThan(log.indexOf('billing:read'));
    expect(plan.summary).toMatchObject({ enqueued: 3, loan_retries_enqueued: 2, truncated: false });
    expect(new Set(sent).size).toBe(3);
  });

  it('asks the deadline before each page of either stream: once it says stop, neither reads another page', async () => {
    const log: string[] = [];
    const store = storeOf(Array.from({ length: 10 }, () => makeRecord({ billing_date: at(-HOUR) })));
    let budget = 3;
    const sent: unknown[][] = [];
    const plan = await planCollections(
      { billing: store, payments: loansOf(Array.from({ length: 10 }, (_, i) => loan(i)), log, 4), clock },
      { pageSize: 4, shouldContinue: () => budget-- > 0, send: async (m) => void sent.push([...m]) },
    );
    expect(plan.summary.truncated).toBe(true);
    // Three pages were asked for in all (billing and loans together), each one sent in full.
    expect(store.pages + log.length).toBe(3);
    expect(sent.map((page) => page.length)).toEqual([4, 4, 4]);
    expect(plan.summary.enqueued).toBe(12);
    expect(plan.failing).toEqual({ retrying: 0, parked: 0 });
  });

  it('sends one message per loan payment even if the index shows it twice, across pages', async () => {
    const sent: string[] = [];
    const plan = await planCollections(
      { billing: storeOf([]), payments: loansOf([loan(1), loan(2), loan(1)], [], 2), clock },
      { shouldContinue: () => true, send: async (m) => void sent.push(...m.map(messageIdOf)) },
    );
    expect(plan.summary).toMatchObject({ enqueued: 2, loan_retries_enqueued: 2 });
    expect(sent).toEqual([messageIdOf(loanRetryMessage(loan(1), NOW)), messageIdOf(loanRetryMessage(loan(2), NOW))]);
  });

  it('a failed read of one stream stops the other at its next page and fails the plan', async () => {
    const log: string[] = [];
    const billing = {
      ...storeOf([]),
      async *streamDue(): AsyncGenerator<readonly BillingRecord[]> {
        await new Promise((resolve) => setTimeout(resolve, 5));
        throw new Error('due-index unavailable');
      },
    };
    const slowLoans: Pick<PaymentsStore, 'streamDueRetries'> = {
      async *streamDueRetries() {
        for (let n = 0; n < 100; n++) {
          log.push('loans:read');
          await new Promise((resolve) => setTimeout(resolve, 2));
          yield [loan(n)];
        }
      },
    };
    await expect(planCollections({ billing, payments: slowLoans, clock }, { shouldContinue: () => true, send: async () => undefined })).rejects.toThrow('due-index unavailable');
    const reads = log.length;
    expect(reads).toBeLessThan(100);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(log.length).toBe(reads);
  });

  it('reads the failing gauge alongside the streams, and in full when the deadline stops the run at once', async () => {
    const d = at(-HOUR);
    const parked = makeRecord({ billing_date: d, billing_failed_for: `${d}#0`, billing_failure_count: 8, billing_failed_at: d, billing_last_error: 'x' });
    const log: string[] = [];
    const store = storeOf([parked, makeRecord({ billing_date: d })]);
    const billing = {
      ...store,
      async countFailing() {
        log.push('gauge:asked');
        return store.countFailing();
      },
      async *streamDue(due: string, options?: { pageSize?: number }) {
        log.push('billing:asked');
        await new Promise((resolve) => setTimeout(resolve, 10));
        log.push('billing:read');
        yield* store.streamDue(due, options);
      },
    };
    const ran = await planCollections({ billing, payments: noLoanRetries, clock }, { shouldContinue: () => true, send: async () => undefined });
    expect(log.indexOf('gauge:asked')).toBeLessThan(log.indexOf('billing:read'));
    expect(ran.failing).toEqual({ retrying: 0, parked: 1 });
    const stopped = await planCollections({ billing: store, payments: noLoanRetries, clock }, { shouldContinue: () => false, send: async () => undefined });
    expect(stopped.summary).toMatchObject({ enqueued: 0, truncated: true });
    expect(stopped.failing).toEqual({ retrying: 0, parked: 1 });
  });
});
