import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import * as z from '../domain/zod.js';
import { lazySchema, safeParseCold } from '../domain/lazy-schema.js';
import { publishedEventsOf, UnpublishableRowError, type EventIdOf, type EventPublisher, type PublishedEvent } from '../domain/published-events.js';
import type { Logger } from '../runtime/logger.js';
import { CorruptItemError, historyFromItem, type Item } from '../runtime/stored-items.js';
import { invocationOwner } from './shared/batch.js';

export interface EventsPublisherDeps {
  readonly logger: Logger;
  readonly publisher: EventPublisher;
  readonly eventIdOf: EventIdOf;
  /** For log lines and error messages only: the table whose stream this is. */
  readonly historyTableName: string;
}

/** The part of a DynamoDB stream record the publisher reads; anything else AWS sends is ignored. */
const streamRecordSchema = lazySchema(() => z.object({
  eventName: z.enum(['INSERT', 'MODIFY', 'REMOVE']),
  dynamodb: z.object({
    SequenceNumber: z.string().check(z.minLength(1)),
    NewImage: z.optional(z.record(z.string(), z.unknown())),
  }),
}));

type Mapped =
  | { readonly ok: true; readonly sequence: string; readonly events: PublishedEvent[]; readonly key: RowKey }
  | { readonly ok: false; readonly sequence: string; readonly issues: readonly string[]; readonly key?: RowKey };

interface RowKey {
  readonly user_id: string;
  readonly last_run_date: string;
  readonly subscription_id?: string;
}

/** A stream record as the events it stands for, or why it can never be published. */
export function mapStreamRecord(record: DynamoDBRecord, deps: Pick<EventsPublisherDeps, 'eventIdOf' | 'historyTableName'>): Mapped {
  const parsed = safeParseCold(streamRecordSchema, record);
  if (!parsed.success) {
    return { ok: false, sequence: record.dynamodb?.SequenceNumber ?? '', issues: parsed.error.issues.map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`) };
  }
  const { eventName, dynamodb } = parsed.data;
  const sequence = dynamodb.SequenceNumber;
  const image = dynamodb.NewImage as Item | undefined;
  const keyOf = (item: Item | undefined): RowKey | undefined =>
    item?.user_id?.S && item.last_run_date?.S ? { user_id: item.user_id.S, last_run_date: item.last_run_date.S } : undefined;
  // The history table is append-only (an audit row is never overwritten or deleted): anything but an insert is an alarm, not an event.
  if (eventName !== 'INSERT') return { ok: false, sequence, issues: [`${eventName} on the append-only history table`], ...withKey(keyOf(image)) };
  if (!image) return { ok: false, sequence, issues: ['the record carries no NewImage (the stream must be NEW_IMAGE)'] };
  try {
    const row = historyFromItem(image, deps.historyTableName);
    const key = { user_id: row.user_id, last_run_date: row.last_run_date, subscription_id: row.subscription_id };
    return { ok: true, sequence, key, events: publishedEventsOf(row, deps.eventIdOf) };
  } catch (error) {
    if (error instanceof UnpublishableRowError) return { ok: false, sequence, issues: error.issues, ...withKey(keyOf(image)) };
    if (error instanceof CorruptItemError) return { ok: false, sequence, issues: [error.message], ...withKey(keyOf(image)) };
    throw error;
  }
}

function withKey(key: RowKey | undefined): { key?: RowKey } {
  return key ? { key } : {};
}

/**
 * billing-activity-history stream → the events of DESIGN 11 on the bus. A record that cannot be
 * mapped or put is a batch item failure, retried and then sent to the on-failure destination, so
 * one bad record never blocks the shard; a redelivery yields the same event ids (consumers
 * deduplicate on `event_id`).
 */
export function createEventsPublisherHandler(deps: EventsPublisherDeps) {
  return async (event: DynamoDBStreamEvent, context?: Context): Promise<DynamoDBBatchResponse> => {
    const logger = deps.logger.child({ fn: 'events-publisher', request_id: invocationOwner(context) });
    const records = Array.isArray(event?.Records) ? event.Records : [];
    const mapped = records.map((record) => mapStreamRecord(record, deps));
    // Lambda reads an empty itemIdentifier as "the whole batch failed"; a record without a sequence number cannot be checkpointed anyway.
    if (mapped.some((m) => m.sequence === '')) throw new Error('a stream record without dynamodb.SequenceNumber: the batch is retried whole');

    const failed = new Set<string>();
    for (const m of mapped) {
      if (m.ok) continue;
      failed.add(m.sequence);
      logger.error({ sequence_number: m.sequence, ...m.key, issues: m.issues }, 'history row not publishable');
    }

    const owners: string[] = [];
    const events: PublishedEvent[] = [];
    for (const m of mapped) {
      if (!m.ok) continue;
      for (const e of m.events) {
        owners.push(m.sequence);
        events.push(e);
      }
    }
    const outcomes = events.length > 0 ? await deps.publisher.publish(events) : [];
    let published = 0;
    outcomes.forEach((outcome, i) => {
      const e = events[i]!;
      if (outcome.ok) {
        published += 1;
        logger.debug({ event_id: e.detail.event_id, detail_type: e['detail-type'], user_id: e.detail.user_id, subscription_id: e.detail.subscription_id }, 'event published');
        return;
      }
      failed.add(owners[i]!);
      logger.error(
        { sequence_number: owners[i], event_id: e.detail.event_id, detail_type: e['detail-type'], user_id: e.detail.user_id, code: outcome.code, message: outcome.message, attempts: outcome.attempts },
        'event not published',
      );
    });

    logger.info({ records: records.length, events: events.length, published, failed_records: failed.size }, 'history stream batch');
    return { batchItemFailures: mapped.filter((m) => failed.has(m.sequence)).map((m) => ({ itemIdentifier: m.sequence })) };
  };
}
