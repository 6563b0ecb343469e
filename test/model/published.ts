import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { eventIdOf } from '../../src/adapters/eventbridge/event-id.js';
import type { PublishedEvent } from '../../src/domain/published-events.js';
import { createEventsPublisherHandler } from '../../src/handlers/events-publisher.js';
import { createLogger } from '../../src/runtime/logger.js';

/**
 * The published events against the history (DESIGN 11): the history rows go through the real
 * events-publisher as the table's stream delivers them (INSERT, NEW_IMAGE, twice: a stream
 * redelivers), and what it puts on the bus must say what the rows say:
 * - every event names its row: user, period, status, amount, occurred_at = the row's last_run_date;
 * - the same row yields the same event ids when redelivered, and no two events share an id;
 * - a period collected, submitted or returned by the bank (a return the system accepted) is published
 *   as such, and a row that set a hold publishes `billing.instrument.held` naming it;
 * - no stream record is refused (a row that cannot be published is a lost event).
 */

type Json = Record<string, any>;
const logger = createLogger({ level: 'silent' });

export async function publishedOf(rows: readonly Json[]): Promise<{ events: PublishedEvent[]; refused: number }> {
  const events: PublishedEvent[] = [];
  const handler = createEventsPublisherHandler({
    logger,
    eventIdOf,
    historyTableName: 'billing-activity-history',
    publisher: {
      publish: async (batch) => {
        events.push(...batch);
        return batch.map((_, i) => ({ ok: true as const, eventBridgeId: `eb-${events.length + i}`, attempts: 1 }));
      },
    },
  });
  const records = rows.map((row, i) => ({
    eventID: `e${i}`,
    eventName: 'INSERT' as const,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'us-east-1',
    dynamodb: { Keys: marshall({ user_id: row.user_id, last_run_date: row.last_run_date }) as never, NewImage: marshall(row, { removeUndefinedValues: true }) as never, SequenceNumber: String(1000 + i), SizeBytes: 100, StreamViewType: 'NEW_IMAGE' as const },
    eventSourceARN: 'arn:aws:dynamodb:us-east-1:123456789012:table/billing-activity-history/stream/2026-12-01T00:00:00.000',
  }));
  let refused = 0;
  for (let i = 0; i < records.length; i += 100) {
    const out = await handler({ Records: records.slice(i, i + 100) } as DynamoDBStreamEvent);
    refused += out.batchItemFailures.length;
  }
  return { events, refused };
}

/** Every disagreement between the rows, the events the publisher made of them (twice) and the returns the system accepted. */
export async function publishedViolations(user: string, rows: readonly Json[], returnsAccepted: ReadonlyMap<string, string>): Promise<string[]> {
  const problems: string[] = [];
  const first = await publishedOf(rows);
  const again = await publishedOf(rows);
  if (first.refused > 0) problems.push(`${user}: the events-publisher refused ${first.refused} history row(s): their events are lost`);
  const ids = first.events.map((e) => e.detail.event_id);
  if (new Set(ids).size !== ids.length) problems.push(`${user}: two published events share an event_id`);
  if (JSON.stringify(ids) !== JSON.stringify(again.events.map((e) => e.detail.event_id))) problems.push(`${user}: a redelivered history row yields other event ids`);
  const byRow = new Map<string, PublishedEvent[]>();
  for (const e of first.events) byRow.set(e.detail.occurred_at, [...(byRow.get(e.detail.occurred_at) ?? []), e]);
  const ordered = [...rows].sort((a, b) => (a.last_run_date < b.last_run_date ? -1 : 1));
  const previous = new Map<string, Json>();
  for (const row of ordered) {
    const events = byRow.get(row.last_run_date) ?? [];
    byRow.delete(row.last_run_date);
    const at = `${user}: history row ${row.last_run_date} (${row.billing_status}, ${row.billing_date})`;
    for (const e of events) {
      const d = e.detail as Json;
      const amount = Math.round(Number(row.amount) * 100);
      if (d.subscription_id !== row.subscription_id || d.billing_date !== row.billing_date || d.billing_status !== row.billing_status || d.user_id !== row.user_id || d.amount_cents !== amount) {
        problems.push(`${at}: ${e['detail-type']} says ${d.billing_status} ${d.amount_cents} for ${d.subscription_id} ${d.billing_date}`);
      }
    }
    const types = events.map((e) => e['detail-type']);
    const before = previous.get(row.subscription_id);
    previous.set(row.subscription_id, row);
    const changed = before?.billing_status !== row.billing_status;
    if (changed && row.billing_status === 'COMPLETED' && before?.billing_status !== 'REFUNDED' && !types.includes('billing.period.collected')) problems.push(`${at}: collected but no billing.period.collected (${types.join(', ') || 'nothing'})`);
    if (changed && row.billing_status === 'ACHSENT' && !types.includes('billing.period.submitted')) problems.push(`${at}: submitted to the bank but no billing.period.submitted (${types.join(', ') || 'nothing'})`);
    if (row.held_instrument_id !== undefined && row.hold_code !== undefined) {
      const held = events.find((e) => e['detail-type'] === 'billing.instrument.held');
      if (!held || (held.detail as Json).instrument_id !== row.held_instrument_id || (held.detail as Json).hold_code !== row.hold_code) problems.push(`${at}: set hold ${row.hold_code} on ${row.held_instrument_id} but published ${held ? JSON.stringify(held.detail) : 'no billing.instrument.held'}`);
    }
  }
  for (const [occurred] of byRow) problems.push(`${user}: an event occurred at ${occurred}, when no history row was written`);
  // A return the system accepted for a period is published with its code (once per payment, whichever row wrote it).
  for (const [confirmation, code] of returnsAccepted) {
    const rowsOf = rows.filter((r) => r.transaction_id === confirmation && r.ach_return_code === code);
    if (rowsOf.length === 0) continue;
    const published = first.events.some((e) => e['detail-type'] === 'billing.ach.returned' && (e.detail as Json).transaction_id === confirmation && (e.detail as Json).return_code === code);
    if (!published) problems.push(`${user}: the ${code} return of ${confirmation} is on the history but no billing.ach.returned says so`);
  }
  return problems;
}
