import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import { historyRowOf } from '../../src/domain/billing-record.js';
import { InvalidTransactionError } from '../../src/adapters/dynamodb/errors.js';
import { DETAIL_TYPES, publishedEventSchema, publishedEventsOf, type PublishedEvent } from '../../src/domain/published-events.js';
import { openApiDocument } from '../../src/openapi/document.js';
import type { BillingRecord, HistoryRow } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { applyAchEvent } from '../../src/domain/use-cases/apply-ach-outcome.js';
import { changeBillingDate } from '../../src/domain/use-cases/change-billing-date.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { dueRecord } from '../support/billing-fixtures.js';
import { seedRecords } from '../support/seed.js';
import { DAY } from '../support/time.js';

/**
 * DESIGN 11: every period event carries `sequence`, the period record's version after the change,
 * and `ordinal`, its place among its row's events, so a consumer (EventBridge keeps no order) can
 * order a period's events by (sequence, ordinal) and drop a stale one. Real use cases on DynamoDB
 * Local write the rows; the publisher's mapping reads them.
 */

const NOW = '2026-12-01T12:00:00.000Z';
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ label: 'event-sequence', now: NOW });
});

beforeEach(() => {
  app.clock.set(NOW);
  app.simulator.configure({ default: 'approve', users: {} });
});

/** The period's audit rows, oldest first. */
async function rowsOf(record: Pick<BillingRecord, 'subscription_id'>): Promise<HistoryRow[]> {
  return [...(await app.deps.billing.history(record.subscription_id, { limit: 100 })).items].reverse();
}

/** Every event the period's rows publish, as a consumer receives them (through the shared schema). */
async function eventsOf(record: Pick<BillingRecord, 'subscription_id'>): Promise<PublishedEvent[]> {
  return (await rowsOf(record)).flatMap((row) => publishedEventsOf(row, eventIdOf)).map((e) => publishedEventSchema.parse(JSON.parse(JSON.stringify(e))));
}

const orderOf = (e: PublishedEvent): [number, number] => {
  const detail = e.detail as { sequence: number; ordinal: number };
  return [detail.sequence, detail.ordinal];
};

/** What a consumer does: sort by (sequence, ordinal), whatever order the bus delivered them in. */
function consumerOrder(events: PublishedEvent[]): string[] {
  return [...events]
    .sort((a, b) => orderOf(a)[0] - orderOf(b)[0] || orderOf(a)[1] - orderOf(b)[1])
    .map((e) => e['detail-type']);
}

const ach = (record: BillingRecord, confirmation: string, type: 'settled' | 'refunded') =>
  applyAchEvent(app.deps, {
    event_id: `ach-${type}-${Math.random().toString(36).slice(2)}`,
    type,
    confirmation_id: confirmation,
    amount_cents: record.amount_cents,
    occurred_at: formatInstant(app.clock.now()),
    reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
  });

describe('period events carry sequence = the record version after the change (DESIGN 11)', () => {
  it('through submitted, collected and refunded: each event names the version its row wrote, increasing', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'ach'));
    expect((await runCollectionAttempt(app.deps, { key: record!, process: 'SCHEDULED', owner: 'test' })).kind).toBe('submitted');
    const confirmation = (await app.deps.billing.get(record!))!.transaction_id!;
    expect(await ach(record!, confirmation, 'settled')).toMatchObject({ kind: 'applied' });
    expect(await ach(record!, confirmation, 'refunded')).toMatchObject({ kind: 'applied' });

    const events = await eventsOf(record!);
    expect(events.map((e) => e['detail-type'])).toEqual(['billing.period.submitted', 'billing.period.collected', 'billing.period.refunded']);
    expect(events.map((e) => orderOf(e))).toEqual([
      [record!.version + 1, 0],
      [record!.version + 2, 0],
      [record!.version + 3, 0],
    ]);
    expect((await app.deps.billing.get(record!))!.version).toBe(record!.version + 3);
    // Delivered out of order, the consumer's sort gives them back in the order they happened.
    expect(consumerOrder([events[2]!, events[0]!, events[1]!])).toEqual(['billing.period.submitted', 'billing.period.collected', 'billing.period.refunded']);
  });

  it('one row with two events: the same sequence, ordinals 0 and 1, in the order the row names them', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    app.simulator.configure({ users: { [record!.user_id]: 'decline:lost_card' } });
    expect((await runCollectionAttempt(app.deps, { key: record!, process: 'SCHEDULED', owner: 'test' })).kind).toBe('declined');
    const events = (await eventsOf(record!)).filter((e) => e['detail-type'] !== 'billing.instrument.held');
    expect(events.map((e) => e['detail-type'])).toEqual(['billing.period.declined', 'billing.dunning.exhausted']);
    expect(events.map((e) => orderOf(e))).toEqual([
      [record!.version + 1, 0],
      [record!.version + 1, 1],
    ]);
    expect(consumerOrder([events[1]!, events[0]!])).toEqual(['billing.period.declined', 'billing.dunning.exhausted']);
  });

  it('a due-date change keeps the version counting: the moved period\'s later events sort after its earlier ones', async () => {
    // A period already at version 5 (its earlier events carried sequences up to 5), due in ten days.
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless', { billing_date: formatInstant(new Date(Date.parse(NOW) + 10 * DAY)), version: 5 }));
    const newDate = formatInstant(new Date(Date.parse(NOW) + 17 * DAY));
    const moved = await changeBillingDate(app.deps, { subscriptionId: record!.subscription_id, owner: 'op', actor: 'op-1', reason: 'payday moved', billingDate: newDate });
    expect(moved.version).toBe(6);
    expect((await rowsOf(record!)).filter((r) => r.billing_event === 'DUE_DATE_CHANGED').map((r) => r.version)).toEqual([6, 6]);

    app.clock.set(new Date(Date.parse(newDate) + 1000).toISOString());
    expect((await runCollectionAttempt(app.deps, { key: moved, process: 'SCHEDULED', owner: 'test' })).kind).toBe('collected');
    const [collected] = (await eventsOf(record!)).filter((e) => e['detail-type'] === 'billing.period.collected');
    expect(collected!.detail).toMatchObject({ billing_date: newDate, sequence: 7, ordinal: 0 });
    expect(orderOf(collected!)[0]).toBeGreaterThan(record!.version);
  });

  it('instrument holds carry no sequence: their since and event id order them', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    app.simulator.configure({ users: { [record!.user_id]: 'decline:lost_card' } });
    await runCollectionAttempt(app.deps, { key: record!, process: 'SCHEDULED', owner: 'test' });
    const held = (await eventsOf(record!)).find((e) => e['detail-type'] === 'billing.instrument.held');
    expect(held).toBeDefined();
    expect(held!.detail).not.toHaveProperty('sequence');
    expect(held!.detail).toHaveProperty('since');
  });
});

describe('a write that bumps the version writes an audit row', () => {
  it('refuses an update without its audit row: nothing written', async () => {
    const [record] = await seedRecords(app, dueRecord(app.clock.now(), 'pinless'));
    const after = { ...record!, version: record!.version + 1, last_run_date: formatInstant(new Date(Date.parse(NOW) + 1)) };
    await expect(app.deps.billing.commit({ writes: [{ kind: 'update', read: record!, record: after }], history: [] })).rejects.toBeInstanceOf(InvalidTransactionError);
    await expect(app.deps.billing.commit({ writes: [{ kind: 'update', read: record!, record: after }], history: [historyRowOf({ ...after, version: record!.version })] })).rejects.toBeInstanceOf(InvalidTransactionError);
    expect(await app.deps.billing.get(record!)).toEqual(record);
    await app.deps.billing.commit({ writes: [{ kind: 'update', read: record!, record: after }], history: [historyRowOf(after)] });
    expect((await app.deps.billing.get(record!))!.version).toBe(record!.version + 1);
  });
});

describe('consumers are told how to order (OpenAPI webhooks)', () => {
  it('documents every detail-type from the shared schema, period events with sequence and ordinal required, and the ordering rule', () => {
    const webhooks = openApiDocument().webhooks as Record<string, { post: { description: string; requestBody: { content: Record<string, { schema: { properties: { detail: { required: string[] } } } }> } } }>;
    expect(Object.keys(webhooks).sort()).toEqual([...DETAIL_TYPES].sort());
    for (const type of DETAIL_TYPES) {
      const { description, requestBody } = webhooks[type]!.post;
      const required = requestBody.content['application/json']!.schema.properties.detail.required;
      if (type === 'billing.instrument.held') expect(required).not.toContain('sequence');
      else expect(required).toEqual(expect.arrayContaining(['sequence', 'ordinal']));
      expect(description).toContain('(sequence, ordinal)');
    }
  });
});
