import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { decideDisputeCreated } from '../../src/domain/card-outcomes.js';
import {
  DETAIL_SCHEMAS,
  DETAIL_TYPES,
  publishedEventSchema,
  publishedEventsOf,
  UnpublishableRowError,
  type DetailType,
  type PublishedEvent,
} from '../../src/domain/published-events.js';
import { BILLING_EVENTS, type BillingEvent, type BillingRecord, type HistoryRow } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { applyAchEvent } from '../../src/domain/use-cases/apply-ach-outcome.js';
import { applyCardOutcome } from '../../src/domain/use-cases/apply-card-outcome.js';
import { applyMembershipEvent, membershipEventSchema } from '../../src/domain/use-cases/membership/apply-membership-event.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import type { UseCaseDeps } from '../../src/domain/use-cases/deps.js';
import { retryBilling } from '../../src/domain/use-cases/retry-billing.js';
import { waive } from '../../src/domain/use-cases/waive.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { BILLING_RETRY_WAITS_MS, HOUR } from '../support/time.js';

/**
 * The mapping from audit rows to the events of docs/design.md section 11, fed the history rows the
 * system itself writes: each scenario runs the real use case on DynamoDB Local, reads the rows back
 * through the billing store, and maps them. Every detail-type is produced at least once.
 */

const NOW = '2026-12-01T12:00:00.000Z';

let app: TestApp;
let deps: UseCaseDeps;
const produced = new Set<DetailType>();
const allRows: HistoryRow[] = [];

beforeAll(async () => {
  app = await createTestApp({ label: 'events-map', now: NOW });
  deps = app.deps;
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve', users: {} });
});

/** The subscription's audit rows, oldest first. */
async function rowsOf(record: Pick<BillingRecord, 'subscription_id'>): Promise<HistoryRow[]> {
  const rows = [...(await app.deps.billing.history(record.subscription_id, { limit: 100 })).items].reverse();
  allRows.push(...rows.filter((r) => !allRows.some((a) => a.user_id === r.user_id && a.last_run_date === r.last_run_date)));
  return rows;
}

async function latestRow(record: Pick<BillingRecord, 'subscription_id'>): Promise<HistoryRow> {
  const rows = await rowsOf(record);
  return rows[rows.length - 1]!;
}

function eventsOf(row: HistoryRow): PublishedEvent[] {
  const events = publishedEventsOf(row, eventIdOf);
  for (const e of events) {
    // What a consumer does with what it receives: the shared schema accepts it.
    expect(publishedEventSchema.parse(JSON.parse(JSON.stringify(e)))).toEqual(e);
    produced.add(e['detail-type']);
  }
  return events;
}

const types = (events: PublishedEvent[]) => events.map((e) => e['detail-type']);
const attempt = (record: BillingRecord, process: 'SCHEDULED' | 'RETRY' = 'SCHEDULED') => runCollectionAttempt(deps, { key: record, process, owner: 'test' });

function ach(record: BillingRecord, confirmation: string, type: 'settled' | 'returned' | 'refunded' | 'chargeback', extra: { return_code?: string; amount_cents?: number } = {}) {
  return applyAchEvent(app.deps, {
    event_id: `ach-${type}-${Math.random().toString(36).slice(2)}`,
    type,
    confirmation_id: confirmation,
    amount_cents: extra.amount_cents ?? record.amount_cents,
    occurred_at: formatInstant(app.clock.now()),
    reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
    ...(extra.return_code ? { return_code: extra.return_code } : {}),
  });
}

describe('history rows → published events (DESIGN 11)', () => {
  it('a collected card or pinless payment is billing.period.collected with the common detail; the new period it opens publishes nothing', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    expect((await attempt(record)).kind).toBe('collected');
    const row = await latestRow(record);
    expect(row.billing_event).toBe('COLLECTED');
    const [event, ...rest] = eventsOf(row);
    expect(rest).toEqual([]);
    expect(event).toEqual({
      source: 'billing',
      'detail-type': 'billing.period.collected',
      detail: {
        event_id: eventIdOf({ user_id: record.user_id, last_run_date: row.last_run_date, detail_type: 'billing.period.collected' }),
        user_id: record.user_id,
        subscription_id: record.subscription_id,
        billing_date: record.billing_date,
        billing_status: 'COMPLETED',
        amount_cents: 1999,
        occurred_at: row.last_run_date,
        process: 'SCHEDULED',
        payment_method: 'pinless',
        transaction_id: row.transaction_id,
        sequence: row.version,
        ordinal: 0,
      },
    });
    const next = (await app.deps.billing.listByUser(record.user_id)).items.find((r) => r.billing_date !== record.billing_date)!;
    const [opened] = await rowsOf(next);
    expect(opened!.billing_event).toBeUndefined();
    expect(eventsOf(opened!)).toEqual([]);
  });

  it('an ACH debit is billing.period.submitted, its settlement billing.period.collected, a refund billing.period.refunded', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
    expect((await attempt(record)).kind).toBe('submitted');
    const submitted = await latestRow(record);
    expect(types(eventsOf(submitted))).toEqual(['billing.period.submitted']);
    expect(eventsOf(submitted)[0]!.detail).toMatchObject({ billing_status: 'ACHSENT', transaction_id: submitted.transaction_id });

    expect(await ach(record, submitted.transaction_id!, 'settled')).toMatchObject({ kind: 'applied' });
    const settled = await latestRow(record);
    expect(types(eventsOf(settled))).toEqual(['billing.period.collected']);
    expect(eventsOf(settled)[0]!.detail).toMatchObject({ billing_status: 'COMPLETED', process: 'SCHEDULED' });

    expect(await ach(record, submitted.transaction_id!, 'refunded')).toMatchObject({ kind: 'applied' });
    expect(types(eventsOf(await latestRow(record)))).toEqual(['billing.period.refunded']);
  });

  it('a retryable decline is billing.period.declined with its codes and the dunning schedule', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    app.simulator.configure({ users: { [record.user_id]: 'decline:insufficient_funds' } });
    expect((await attempt(record)).kind).toBe('declined');
    const events = eventsOf(await latestRow(record));
    expect(types(events)).toEqual(['billing.period.declined']);
    expect(events[0]!.detail).toMatchObject({
      billing_status: 'FAILED',
      decline_code: 'insufficient_funds',
      decline_class: 'retry_later',
      dunning: { state: 'retrying', attempts: 1, next_attempt_at: expect.any(String) },
    });
  });

  it('a decline that ends automatic attempts is billing.period.declined and billing.dunning.exhausted, with distinct ids', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    app.simulator.configure({ users: { [record.user_id]: 'decline:lost_card' } });
    expect((await attempt(record)).kind).toBe('declined');
    const events = eventsOf(await latestRow(record));
    // A lost pinless card is held (DESIGN 3.2): the row that set the hold publishes it too.
    expect(types(events)).toEqual(['billing.period.declined', 'billing.dunning.exhausted', 'billing.instrument.held']);
    expect(events[2]!.detail).toMatchObject({ hold_code: 'payment_method_required', instrument_id: record.instrument_id ?? expect.stringMatching(/^pinless:/) });
    expect(events[0]!.detail).toMatchObject({ dunning: { state: 'exhausted', next_attempt_at: null }, decline_class: 'do_not_retry' });
    expect(events[1]!.detail).toMatchObject({ decline_code: 'lost_card', decline_class: 'do_not_retry', attempts: 1, cause: 'declined' });
    expect(events[0]!.detail.event_id).not.toBe(events[1]!.detail.event_id);
  });

  it('a run that finds the 14-day window over is billing.dunning.exhausted alone (nothing declined, nothing presented)', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'card'));
    app.simulator.configure({ users: { [record.user_id]: 'decline:insufficient_funds' } });
    expect((await attempt(record)).kind).toBe('declined');
    app.clock.advance(15 * 24 * 60 * 60 * 1000);
    expect(await attempt(record, 'RETRY')).toMatchObject({ kind: 'not_due', reason: 'exhausted' });
    const row = await latestRow(record);
    expect(row.billing_event).toBe('DUNNING_EXHAUSTED');
    const events = eventsOf(row);
    expect(types(events)).toEqual(['billing.dunning.exhausted']);
    expect(events[0]!.detail).toMatchObject({ billing_status: 'FAILED', process: 'RETRY', decline_code: 'insufficient_funds', decline_class: 'retry_later', attempts: 1, cause: 'window_ended' });
  });

  it('the eighth counted failure is billing.failure.parked; the seven before it (retrying) publish nothing', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    app.simulator.configure({ users: { [record.user_id]: 'error' } });
    for (let n = 1; n <= 8; n++) {
      expect((await attempt(record)).kind).toBe('failed_counted');
      if (n < 8) app.clock.advance(BILLING_RETRY_WAITS_MS[n - 1]!);
    }
    const rows = (await rowsOf(record)).filter((r) => r.billing_event === 'BILLING_FAILURE_RECORDED');
    expect(rows).toHaveLength(8);
    expect(rows.slice(0, 7).flatMap((r) => eventsOf(r))).toEqual([]);
    const [parked] = eventsOf(rows[7]!);
    expect(parked).toMatchObject({
      'detail-type': 'billing.failure.parked',
      detail: { billing_status: 'PENDING', failure: { count: 8, last_error: 'The payment processor is unavailable.', failed_at: rows[7]!.billing_failed_at } },
    });

    // The operator's retry is audited (no event of its own); its attempt publishes what it did.
    app.simulator.configure({ users: {} });
    await retryBilling(deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops@example.com', reason: 'processor fixed' });
    const after = await rowsOf(record);
    const retryRow = after.find((r) => r.billing_event === 'BILLING_RETRY_REQUESTED')!;
    expect(eventsOf(retryRow)).toEqual([]);
    const billed = eventsOf(after[after.length - 1]!);
    expect(billed[0]).toMatchObject({ 'detail-type': 'billing.period.collected', detail: { process: 'OPERATOR_RETRY' } });
  });

  it('an ACH return is billing.ach.returned: R01 may be re-presented, R10 is unauthorized, a chargeback names no code', async () => {
    for (const [how, expected] of [
      ['R01', { return_code: 'R01', unauthorized: false, represent: true }],
      ['R03', { return_code: 'R03', unauthorized: false, represent: false }],
      ['R10', { return_code: 'R10', unauthorized: true, represent: false }],
      ['chargeback', { unauthorized: true, represent: false }],
    ] as const) {
      const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
      await attempt(record);
      const submitted = await latestRow(record);
      const result = how === 'chargeback' ? await ach(record, submitted.transaction_id!, 'chargeback') : await ach(record, submitted.transaction_id!, 'returned', { return_code: how });
      expect(result.kind).toBe('applied');
      const events = eventsOf(await latestRow(record));
      // R03 holds the account and R10 the authorization (DESIGN 3.2); R01 and a chargeback hold no instrument.
      const held = how === 'R03' || how === 'R10';
      expect(types(events)).toEqual(['billing.ach.returned', ...(held ? ['billing.instrument.held'] : [])]);
      if (held) expect(events[1]!.detail).toMatchObject({ hold_code: how === 'R10' ? 'ach_authorization_required' : 'ach_account_invalid', instrument_id: expect.stringMatching(/^ach:/) });
      expect(events[0]!.detail).toMatchObject({ billing_status: 'FAILED', transaction_id: submitted.transaction_id, ...expected });
      if (how === 'chargeback') expect(events[0]!.detail).not.toHaveProperty('return_code');
    }
  });

  it('a waive is billing.period.waived and says who and why', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    await waive(deps, { subscriptionId: record.subscription_id, owner: 'op', actor: 'ops@example.com', reason: 'goodwill credit' });
    const events = eventsOf(await latestRow(record));
    expect(types(events)).toEqual(['billing.period.waived']);
    expect(events[0]!.detail).toMatchObject({ billing_status: 'WAIVED', actor: 'ops@example.com', reason: 'goodwill credit' });
  });

  it('a cancel completed at the billing date and a closed account are billing.period.cancelled, each with its cause', async () => {
    const [requested] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless', { cancel_requested_at: formatInstant(new Date(Date.parse(NOW) - 2 * HOUR)) }));
    expect((await attempt(requested)).kind).toBe('cancelled');
    const cancelled = eventsOf(await latestRow(requested));
    expect(types(cancelled)).toEqual(['billing.period.cancelled']);
    expect(cancelled[0]!.detail).toMatchObject({ billing_status: 'CANCELLED', cause: 'cancel_requested' });

    const [future] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless', { billing_date: formatInstant(new Date(Date.parse(NOW) + 10 * 24 * HOUR)) }));
    const close = membershipEventSchema.parse({ event_id: `close-${future.user_id}`, type: 'CLOSEACCOUNT', user_id: future.user_id, occurred_at: NOW });
    expect((await applyMembershipEvent(deps, { event: close, owner: 'test' })).kind).toBe('applied');
    const closed = eventsOf(await latestRow(future));
    expect(types(closed)).toEqual(['billing.period.cancelled']);
    expect(closed[0]!.detail).toMatchObject({ billing_status: 'CANCELLED', cause: 'account_closed' });
  });

  it('an outcome that does not match is billing.exception.raised: an ACH amount mismatch, a dispute inquiry, a card dispute', async () => {
    const [debit] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
    await attempt(debit);
    const submitted = await latestRow(debit);
    expect(await ach(debit, submitted.transaction_id!, 'settled', { amount_cents: 1 })).toMatchObject({ kind: 'applied' });
    const mismatch = eventsOf(await latestRow(debit));
    expect(mismatch).toMatchObject([{ 'detail-type': 'billing.exception.raised', detail: { billing_status: 'ACHSENT', exception: { source: 'ach', code: 'amount_mismatch', received_cents: 1 } } }]);

    for (const [status, expected, alsoPublished] of [
      ['warning_needs_response', { billing_status: 'COMPLETED', exception: { source: 'card', code: 'dispute_inquiry', dispute_id: 'dp_1', dispute_status: 'warning_needs_response' } }, []],
      // Funds withdrawn: the row that records the dispute also sets the card's hold (DESIGN 3.2).
      ['needs_response', { billing_status: 'FAILED', exception: { source: 'card', code: 'card_disputed' } }, ['billing.instrument.held']],
    ] as const) {
      const [card] = await seedRecords(app, dueRecord(app.clock.now(), 'card'));
      expect((await attempt(card)).kind).toBe('collected');
      const paid = await latestRow(card);
      const reference = { user_id: card.user_id, billing_date: card.billing_date, subscription_id: card.subscription_id };
      const result = await applyCardOutcome(app.deps, decideDisputeCreated, { payment_intent_id: paid.transaction_id!, reference, dispute_id: 'dp_1', status }, 'test');
      expect(result.kind).toBe('applied');
      const events = eventsOf(await latestRow(card));
      expect(events[0]).toMatchObject({ 'detail-type': 'billing.exception.raised', detail: { ...expected, exception: { ...expected.exception, payment_intent_id: paid.transaction_id } } });
      expect(events.slice(1).map((e) => e['detail-type'])).toEqual(alsoPublished);
    }
  });

  it('every detail-type was produced from a real row, and every row but a new period names the event that made it', () => {
    expect([...produced].sort()).toEqual([...DETAIL_TYPES].sort());
    expect(Object.keys(DETAIL_SCHEMAS).sort()).toEqual([...DETAIL_TYPES].sort());
    const unnamed = allRows.filter((r) => r.billing_event === undefined && r.version > 0);
    expect(unnamed.map((r) => `${r.subscription_id} v${r.version} ${r.billing_status}`)).toEqual([]);
  });
});

/** Whether a row naming each billing event can publish: a new event fails to typecheck here until it is placed. */
const CAN_PUBLISH: Record<BillingEvent, boolean> = {
  COLLECTED: true,
  ACH_SUBMITTED: true,
  DECLINED: true,
  ACH_SETTLED: true,
  ACH_RETURNED: true,
  CHARGED_BACK: true,
  DISPUTE_WON: true,
  REFUNDED: true,
  WAIVED: true,
  CANCEL_REQUESTED: false,
  CANCEL_COMPLETED: true,
  ACCOUNT_CLOSED: true,
  PAUSED: false,
  UNPAUSED: false,
  PAUSE_SKIPPED: false,
  USER_NOT_ACTIVE: false,
  REACTIVATED: false,
  REACTIVATED_PAUSED: false,
  REACTIVATED_FAILED: false,
  DUE_DATE_CHANGED: false,
  BILLING_RETRY_REQUESTED: false,
  BILLING_FAILURE_RECORDED: true,
  EXCEPTION_RAISED: true,
  DUNNING_EXHAUSTED: true,
  EXCEPTION_ACCEPTED: true,
  EXCEPTION_WAIVED: true,
  // The money went back and the period is owed again: no event of DESIGN 11 says that; the next attempt's does.
  EXCEPTION_REFUNDED: false,
  INSTRUMENT_HELD: false,
  HOLD_RELEASED: false,
  CEILING_REACHED: false,
  PAYMENT_REFUSED: false,
};

describe('event ids and rows that cannot be published', () => {
  const row = historyRowOf(dueRecord(new Date(NOW), 'pinless', { billing_status: 'WAIVED', version: 1 }));
  const waived: HistoryRow = { ...row, billing_event: 'WAIVED', actor: 'ops', reason: 'r' };

  it('derives event_id from the row key and the detail-type only: the same row twice gives the same ids, another row or type another id', () => {
    const first = publishedEventsOf(waived, eventIdOf)[0]!.detail.event_id;
    expect(publishedEventsOf({ ...waived }, eventIdOf)[0]!.detail.event_id).toBe(first);
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(publishedEventsOf({ ...waived, last_run_date: '2026-12-01T12:00:00.000000001Z' }, eventIdOf)[0]!.detail.event_id).not.toBe(first);
    expect(eventIdOf({ user_id: waived.user_id, last_run_date: waived.last_run_date, detail_type: 'billing.period.cancelled' })).not.toBe(first);
    // The parts cannot be shifted into one another (a user id ending where a stamp begins).
    expect(eventIdOf({ user_id: 'a', last_run_date: 'bc', detail_type: 'billing.period.waived' })).not.toBe(eventIdOf({ user_id: 'ab', last_run_date: 'c', detail_type: 'billing.period.waived' }));
  });

  it('carries who acted, why, and the bulk retry run, when the row has them', () => {
    const [event] = publishedEventsOf({ ...waived, run_id: 'run-1' }, eventIdOf);
    expect(event!.detail).toMatchObject({ actor: 'ops', reason: 'r', run_id: 'run-1' });
    expect(publishedEventsOf({ ...row, billing_event: 'WAIVED' }, eventIdOf)[0]!.detail).not.toHaveProperty('actor');
  });

  it('maps rows that name no published event to none', () => {
    for (const billing_event of BILLING_EVENTS.filter((event) => !CAN_PUBLISH[event])) {
      expect(publishedEventsOf({ ...row, billing_event }, eventIdOf)).toEqual([]);
    }
    expect(publishedEventsOf(row, eventIdOf)).toEqual([]);
  });

  it('refuses a row whose content contradicts its event, naming the row', () => {
    const bad: HistoryRow = { ...row, billing_status: 'ACHSENT', billing_event: 'EXCEPTION_RAISED' };
    expect(() => publishedEventsOf(bad, eventIdOf)).toThrow(UnpublishableRowError);
    // An exhaustion row of a period that is not an exhausted dunning period.
    expect(() => publishedEventsOf({ ...row, billing_status: 'FAILED', billing_event: 'DUNNING_EXHAUSTED' }, eventIdOf)).toThrow(UnpublishableRowError);
    expect(() => publishedEventsOf(bad, eventIdOf)).toThrow(new RegExp(`user_id=${row.user_id}`));
  });
});
