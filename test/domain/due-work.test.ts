import { describe, expect, it } from 'vitest';
import { collectionMessageSchema } from '../../src/domain/collections.js';
import { COLLECTION_SCANS, decideCollection, nextEligibleAt } from '../../src/domain/due-work.js';
import { COLLECTIBLE_STATUSES } from '../../src/domain/statuses.js';
import { billingTransitions } from '../../src/domain/transitions.js';
import { DUNNING_WINDOW_MS } from '../../src/domain/dunning.js';
import { BILLING_STATUSES, type BillingRecord } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { makeRecord } from '../support/billing-fixtures.js';
import { DAY, HOUR } from '../support/time.js';

const NOW = Date.parse('2026-12-01T12:00:00.000Z');
const at = (offsetMs: number) => formatInstant(new Date(NOW + offsetMs));
const failure = (record: Pick<BillingRecord, 'billing_date' | 'payment_attempts'>, next?: string) => ({
  billing_failed_for: `${record.billing_date}#${record.payment_attempts}`,
  billing_failure_count: 3,
  billing_failed_at: at(-HOUR),
  billing_last_error: 'x',
  ...(next !== undefined ? { billing_next_attempt_at: next } : {}),
});
const failed = { billing_status: 'FAILED' as const, billing_date: at(-3 * DAY), payment_attempts: 1, last_attempt_date: at(-2 * HOUR) };

describe('nextEligibleAt: the instant the planner reads a record at (the due-index sort key)', () => {
  it('PENDING at its billing date, PAUSED at its billing date, FAILED 24 h after its last attempt', () => {
    const pending = makeRecord({ billing_date: at(5 * DAY) });
    expect(nextEligibleAt(pending)).toBe(pending.billing_date);
    const paused = makeRecord({ billing_status: 'PAUSED', billing_date: at(-HOUR), paused_months: 2 });
    expect(nextEligibleAt(paused)).toBe(paused.billing_date);
    expect(nextEligibleAt(makeRecord(failed))).toBe(at(22 * HOUR));
  });

  it('a FAILED period in dunning at its next scheduled attempt; an exhausted one never', () => {
    const dunning = { ...failed, decline_code: 'insufficient_funds', dunning_first_declined_at: at(-2 * HOUR), dunning_attempts: 1 };
    expect(nextEligibleAt(makeRecord({ ...dunning, decline_class: 'retry_later', dunning_next_attempt_at: at(2 * DAY) }))).toBe(at(2 * DAY));
    expect(nextEligibleAt(makeRecord({ ...dunning, decline_class: 'retry_later' }))).toBeUndefined();
  });

  it('a dunning cycle is keyed no later than the end of its 14-day window, parked, held or waiting; once recorded exhausted, never', () => {
    const first = -2 * HOUR;
    const cycle = { ...failed, payment_method: 'card' as const, decline_code: 'insufficient_funds', decline_class: 'retry_later' as const, dunning_first_declined_at: at(first), dunning_attempts: 7 };
    const lapses = at(first + DUNNING_WINDOW_MS + 1);
    const retrying = makeRecord({ ...cycle, dunning_next_attempt_at: at(first + 14 * DAY) });
    expect(nextEligibleAt(retrying)).toBe(at(first + 14 * DAY));
    const live = { billing_failed_for: `${retrying.billing_date}#${retrying.payment_attempts}`, billing_failure_count: 1, billing_failed_at: at(first + 14 * DAY), billing_last_error: 'x' };
    expect(nextEligibleAt({ ...retrying, ...live, billing_next_attempt_at: at(first + DUNNING_WINDOW_MS + 15 * 60_000) })).toBe(lapses);
    expect(nextEligibleAt({ ...retrying, ...live, billing_failure_count: 8 })).toBe(lapses);
    expect(nextEligibleAt({ ...retrying, card_disputed: true })).toBe(lapses);
    expect(nextEligibleAt(makeRecord({ ...cycle, dunning_attempts: 8 }))).toBeUndefined();
    // The planner sends it once the window is over (its attempt records the exhaustion), never before.
    expect(decideCollection({ ...retrying, ...live, billing_failure_count: 8 }, 'RETRY', new Date(Date.parse(lapses) - 1)).kind).toBe('skip');
    expect(decideCollection({ ...retrying, ...live, billing_failure_count: 8 }, 'RETRY', new Date(Date.parse(lapses))).kind).toBe('enqueue');
    expect(decideCollection({ ...retrying, card_disputed: true }, 'RETRY', new Date(Date.parse(lapses))).kind).toBe('enqueue');
  });

  it('a live billing failure moves the record to the ladder’s next attempt; a parked one is never read', () => {
    const base = makeRecord({ billing_date: at(-HOUR) });
    expect(nextEligibleAt({ ...base, ...failure(base, at(4 * HOUR)) })).toBe(at(4 * HOUR));
    expect(nextEligibleAt({ ...base, ...failure(base) })).toBeUndefined();
    // A failure saved for work that has moved on (another attempt since) is void: the billing date counts.
    expect(nextEligibleAt({ ...base, ...failure(base), payment_attempts: 1 })).toBe(base.billing_date);
    // The later of the two waits wins: a FAILED record whose daily retry is after the ladder's slot.
    const f = makeRecord(failed);
    expect(nextEligibleAt({ ...f, ...failure(f, at(HOUR)) })).toBe(at(22 * HOUR));
  });

  it('holds and card exceptions keep it out of the index until a write clears them; terminal statuses are never keyed', () => {
    expect(nextEligibleAt(makeRecord({ ...failed, payment_method: 'ach', ach_unauthorized: true }))).toBeUndefined();
    expect(nextEligibleAt(makeRecord({ ...failed, payment_method: 'card', card_disputed: true }))).toBeUndefined();
    expect(nextEligibleAt(makeRecord({ ...failed, decline_code: 'lost_card', decline_class: 'do_not_retry', dunning_first_declined_at: at(-HOUR), dunning_attempts: 1 }))).toBeUndefined();
    // The re-presentment window closes with time: held at the eligible instant, held for good.
    const represented = { ...failed, payment_method: 'ach' as const, ach_represented: 1 };
    expect(nextEligibleAt(makeRecord({ ...represented, ach_original_entry_date: at(-181 * DAY) }))).toBeUndefined();
    expect(nextEligibleAt(makeRecord({ ...represented, ach_original_entry_date: at(-170 * DAY) }))).toBe(at(22 * HOUR));
    for (const billing_status of BILLING_STATUSES.filter((status) => status !== 'PENDING' && status !== 'FAILED' && status !== 'PAUSED')) {
      expect(nextEligibleAt(makeRecord({ billing_status })), billing_status).toBeUndefined();
    }
  });

  it('never hides a record the planner would enqueue: over a grid of records and instants, due-now implies keyed at or before now', () => {
    const records: BillingRecord[] = [];
    for (const offset of [-5 * DAY, -HOUR, 0, HOUR, 3 * DAY]) {
      const p = makeRecord({ billing_date: at(offset) });
      records.push(p, { ...p, ...failure(p, at(offset + 2 * HOUR)) }, { ...p, ...failure(p) });
      const f = makeRecord({ ...failed, billing_date: at(offset - DAY), last_attempt_date: at(offset) });
      records.push(f, { ...f, ...failure(f, at(offset + 30 * HOUR)) });
      records.push(makeRecord({ billing_status: 'PAUSED', billing_date: at(offset), paused_months: 1 }));
      // Dunning cycles first declined at `offset`, at a slot, and parked or held on top of it.
      const d = makeRecord({
        ...f,
        payment_method: 'card',
        decline_code: 'generic_decline',
        decline_class: 'retry_later',
        dunning_first_declined_at: at(offset),
        dunning_attempts: 3,
        dunning_next_attempt_at: at(offset + 5 * DAY),
      });
      records.push(d, { ...d, ...failure(d) }, { ...d, card_disputed: true }, { ...d, ...failure(d, at(offset + 15 * DAY)) });
    }
    for (const record of records) {
      for (const when of [-6 * DAY, -DAY, 0, HOUR, 2 * DAY, 10 * DAY, 20 * DAY]) {
        const now = new Date(NOW + when);
        const process = record.billing_status === 'PENDING' ? 'SCHEDULED' : record.billing_status === 'FAILED' ? 'RETRY' : 'PAUSE';
        if (decideCollection(record, process, now).kind !== 'enqueue') continue;
        const key = nextEligibleAt(record);
        expect(key, `${record.billing_status} ${record.billing_date} at ${now.toISOString()}`).toBeDefined();
        expect(Date.parse(key!)).toBeLessThanOrEqual(now.getTime());
      }
    }
  });
});

describe('decideCollection', () => {
  const now = new Date(NOW);

  it('enqueues a due PENDING record as SCHEDULED with the wire shape the batch-worker validates', () => {
    const record = makeRecord({ billing_date: at(-1) });
    const decision = decideCollection(record, 'SCHEDULED', now);
    expect(decision.kind).toBe('enqueue');
    if (decision.kind !== 'enqueue') return;
    expect(collectionMessageSchema.parse(JSON.parse(JSON.stringify(decision.message)))).toEqual(decision.message);
  });

  it('skips a record not yet due, and a FAILED record inside its daily retry wait', () => {
    expect(decideCollection(makeRecord({ billing_date: at(1) }), 'SCHEDULED', now)).toEqual({ kind: 'skip', reason: 'not_due' });
    const failed = makeRecord({ billing_status: 'FAILED', billing_date: at(-48 * HOUR), payment_attempts: 1, last_attempt_date: at(-24 * HOUR + 1) });
    expect(decideCollection(failed, 'RETRY', now)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection({ ...failed, last_attempt_date: at(-24 * HOUR) }, 'RETRY', now).kind).toBe('enqueue');
  });

  it('does not enqueue what the attempt would refuse: ACH holds after returns and disputed cards', () => {
    const failed = { billing_status: 'FAILED' as const, billing_date: at(-48 * HOUR), last_attempt_date: at(-25 * HOUR) };
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'ach', ach_blocked: true }), 'RETRY', now)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'ach', ach_unauthorized: true }), 'RETRY', now)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'card', card_disputed: true }), 'RETRY', now)).toEqual({ kind: 'skip', reason: 'not_due' });
    expect(decideCollection(makeRecord({ ...failed, payment_method: 'ach' }), 'RETRY', now).kind).toBe('enqueue');
    // A re-presentment is allowed within 180 days of the original entry, and refused after.
    const represented = { ...failed, payment_method: 'ach' as const, ach_represented: 1 };
    expect(decideCollection(makeRecord({ ...represented, ach_original_entry_date: at(-179 * 24 * HOUR) }), 'RETRY', now).kind).toBe('enqueue');
    expect(decideCollection(makeRecord({ ...represented, ach_original_entry_date: at(-181 * 24 * HOUR) }), 'RETRY', now)).toEqual({ kind: 'skip', reason: 'not_due' });
  });

  it('tells waiting from parked, and ignores a failure saved for work that has since moved on', () => {
    const d = at(-HOUR);
    const saved = { billing_failed_for: `${d}#0`, billing_failure_count: 3, billing_failed_at: at(-HOUR), billing_last_error: 'x' };
    expect(decideCollection(makeRecord({ billing_date: d, ...saved, billing_next_attempt_at: at(1) }), 'SCHEDULED', now)).toEqual({ kind: 'skip', reason: 'waiting' });
    expect(decideCollection(makeRecord({ billing_date: d, ...saved }), 'SCHEDULED', now)).toEqual({ kind: 'skip', reason: 'parked' });
    expect(decideCollection(makeRecord({ billing_date: d, ...saved, billing_next_attempt_at: at(0) }), 'SCHEDULED', now).kind).toBe('enqueue');
    expect(decideCollection(makeRecord({ billing_date: d, ...saved, payment_attempts: 1 }), 'SCHEDULED', now).kind).toBe('enqueue');
  });
});

describe('COLLECTION_SCANS', () => {
  it('collects the collectible statuses and advances the pauses, as the transition table says', () => {
    const expected = [...COLLECTIBLE_STATUSES, ...billingTransitions.sourcesOf('PAUSE_SKIPPED')].sort();
    expect(COLLECTION_SCANS.map((scan) => scan.status).sort()).toEqual(expected);
  });
});
