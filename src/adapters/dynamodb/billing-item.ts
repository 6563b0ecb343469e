import * as z from '../../domain/zod.js';
import { NumberValueImpl as NumberValue } from '@aws-sdk/util-dynamodb';
import { nextAutomaticAttemptAt, dunningState, type DunningState } from '../../domain/dunning.js';
import { nextEligibleAt } from '../../domain/due-work.js';
import { appliedEventIds } from '../../domain/intent.js';
import { isFailureLive } from '../../domain/ladder.js';
import { centsToDollars, dollarsToCents } from '../../domain/money.js';
import {
  billingRecordSchema,
  historyRowSchema,
  type BillingKey,
  type BillingRecord,
  type HistoryRow,
} from '../../domain/records.js';
import { integerNumbers, marshallItem, unmarshallItem, type Item, type NumberDecoder } from './attribute-codec.js';
import { parseCold, safeParseCold } from '../../domain/lazy-schema.js';
import { CorruptItemError } from './errors.js';
import { shardOf } from './sharding.js';
import { heldIndexAt } from '../../domain/instruments/attempt.js';

/**
 * BillingRecord / HistoryRow ↔ billing-activity and billing-activity-history items (DESIGN 2.1, 2.5).
 * The domain's `amount_cents` is stored as `amount`, an N with two decimals, converted by string
 * arithmetic both ways. The primary item also carries the sparse index keys its record derives;
 * it never carries the history-only `data_*`, `actor` and `reason` attributes.
 */

export const DEFAULT_STATUS_SHARD_COUNT = 16;

/** `FAILING#{n}`: the failing-index partition key, present only while the record's failure is live. */
export function failingShard(userId: string, shardCount: number): string {
  return `FAILING#${shardOf(userId, shardCount)}`;
}

/** `EXCEPTION#{n}`: the exceptions-index partition key, present only while the record carries an exception. */
export function exceptionShard(userId: string, shardCount: number): string {
  return `EXCEPTION#${shardOf(userId, shardCount)}`;
}

/** When the record's exception was raised (the earlier of the two when both are present), or undefined. */
export function exceptionAt(record: Pick<BillingRecord, 'ach_exception' | 'card_exception'>): string | undefined {
  const times = [record.ach_exception?.at, record.card_exception?.at].filter((t): t is string => t !== undefined).sort();
  return times[0];
}

/** Partitions of the dunning index: declined periods in dunning, by state. */
export type DunningPartition = 'RETRYING' | 'EXHAUSTED';

export function dunningShard(partition: DunningPartition, userId: string, shardCount: number): string {
  return `${partition}#${shardOf(userId, shardCount)}`;
}

/** A FAILED record in dunning, in its state's partition, sorted by its next automatic attempt (exhausted: its last). */
function dunningIndexEntry(record: BillingRecord): { partition: DunningPartition; due_at: string } | undefined {
  if (record.billing_status !== 'FAILED') return undefined;
  const state = dunningState(record);
  if (state === 'exhausted') return { partition: 'EXHAUSTED', due_at: record.last_attempt_date ?? record.last_run_date };
  if (state !== 'retrying') return undefined;
  return { partition: 'RETRYING', due_at: nextAutomaticAttemptAt(record) ?? record.billing_date };
}

/** The dunning-index key of a record, derived on every full put (`dunningIndexEntry`). */
export function dunningIndexKey(record: BillingRecord, shardCount: number): { dunning_shard: string; dunning_due_at: string } | undefined {
  const entry = dunningIndexEntry(record);
  return entry === undefined ? undefined : { dunning_shard: dunningShard(entry.partition, record.user_id, shardCount), dunning_due_at: entry.due_at };
}

/** While the saved failure is live (ladder.ts): `retrying` with a next attempt, `parked` without. */
function failingIndexEntry(record: BillingRecord): 'retrying' | 'parked' | undefined {
  if (!isFailureLive(record)) return undefined;
  return record.billing_next_attempt_at !== undefined ? 'retrying' : 'parked';
}

/** The failing-index key of a record, derived on every full put and by RecordBillingFailure's update. */
export function failingIndexKey(record: BillingRecord, shardCount: number): { failing_shard: string } | undefined {
  return failingIndexEntry(record) === undefined ? undefined : { failing_shard: failingShard(record.user_id, shardCount) };
}

/** What the gauges count a record as: derived by the same functions as its index keys, so counters and indexes agree. */
export interface GaugeClass {
  readonly failing?: 'retrying' | 'parked';
  readonly dunning?: DunningState;
}

export function gaugeClassOf(record: BillingRecord): GaugeClass {
  const failing = failingIndexEntry(record);
  const dunning = dunningIndexEntry(record)?.partition;
  return {
    ...(failing !== undefined ? { failing } : {}),
    ...(dunning !== undefined ? { dunning: dunning === 'RETRYING' ? 'retrying' : 'exhausted' } : {}),
  };
}

/** `DUE#{n}`: the due-index partition of shard n. Every status shares it: the planner reads a shard's due work in one stream. */
export function dueShardOf(shard: number): string {
  return `DUE#${shard}`;
}

/**
 * The due-index key: `DUE#{n}` for every status and the next instant a run may act on the record
 * (due-work.ts). Absent when only a write can make it due again, so the planner never reads it.
 */
export function dueIndexKey(record: BillingRecord, shardCount: number): { due_shard: string; due_at: string } | undefined {
  const at = nextEligibleAt(record);
  return at === undefined ? undefined : { due_shard: dueShardOf(shardOf(record.user_id, shardCount)), due_at: at };
}

/** The held-index key (DESIGN 3.2): `HELD#{n}` and since when a hold keeps the period off the schedule. */
export function heldIndexKey(record: BillingRecord, shardCount: number): { held_shard: string; held_at: string } | undefined {
  const at = heldIndexAt(record);
  return at === undefined ? undefined : { held_shard: `HELD#${shardOf(record.user_id, shardCount)}`, held_at: at };
}

export function primaryKey(key: BillingKey): Item {
  return { user_id: { S: key.user_id }, billing_date: { S: key.billing_date } };
}

export function describeKey(table: string, key: BillingKey): string {
  return `${table} item (user_id=${key.user_id}, billing_date=${key.billing_date})`;
}

function withStoredAmount<T extends { amount_cents: number }>(value: T): Omit<T, 'amount_cents'> & { amount: NumberValue } {
  const { amount_cents, ...rest } = value;
  return { ...rest, amount: NumberValue.from(centsToDollars(amount_cents)) };
}

/** The primary item: only BillingRecord attributes (the schema strips anything else), plus its index keys. */
export function primaryItem(record: BillingRecord, shardCount: number): Item {
  const parsed = parseCold(billingRecordSchema, record);
  return marshallItem({
    ...withStoredAmount(parsed),
    // Every primary write is a full put, so the sparse index follows the live predicate exactly.
    ...failingIndexKey(parsed, shardCount),
    ...exceptionKeys(parsed, shardCount),
    ...dunningIndexKey(parsed, shardCount),
    ...dueIndexKey(parsed, shardCount),
    ...heldIndexKey(parsed, shardCount),
  });
}

/** The sparse exceptions-index keys, derived from the record on every full put like `failing_shard`. */
function exceptionKeys(record: BillingRecord, shardCount: number): { exception_shard?: string; exception_at?: string } {
  const at = exceptionAt(record);
  return at === undefined ? {} : { exception_shard: exceptionShard(record.user_id, shardCount), exception_at: at };
}

export function historyItem(row: HistoryRow): Item {
  return marshallItem(withStoredAmount(parseCold(historyRowSchema, row)));
}

/** `amount` exactly from its decimal text; everything else must be a safe integer. */
const billingNumbers: NumberDecoder = (text, attribute) => {
  if (attribute !== 'amount') return integerNumbers(text, attribute);
  try {
    return dollarsToCents(text);
  } catch {
    return text; // not a two-decimal amount: left as text so validation names it
  }
};

function decode<T>(schema: z.ZodMiniType<T>, item: Item, label: string): T {
  const raw = unmarshallItem(item, billingNumbers);
  const {
    amount,
    // Items written while the status-index existed still carry its key.
    status_shard: _shard,
    failing_shard: _failing,
    exception_shard: _exception,
    exception_at: _exceptionAt,
    dunning_shard: _dunning,
    dunning_due_at: _dunningDue,
    due_shard: _dueShard,
    due_at: _dueAt,
    held_shard: _heldShard,
    held_at: _heldAt,
    ...rest
  } = raw;
  const parsed = safeParseCold(schema, { ...rest, amount_cents: amount });
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(item)'}: ${i.message}`).join('; ');
    throw new CorruptItemError(`${label} is corrupt: ${issues}`);
  }
  return parsed.data;
}

function keyLabel(table: string, item: Item, sortKey: string): string {
  return `${table} item (user_id=${item.user_id?.S ?? '?'}, ${sortKey}=${item[sortKey]?.S ?? '?'})`;
}

/** A primary item as the domain sees it; an item written before intent had its attributes is read in the new form. */
export function recordFromItem(item: Item, table: string): BillingRecord {
  return upgradeLegacyIntent(decode(billingRecordSchema, item, keyLabel(table, item, 'billing_date')));
}

export function historyFromItem(item: Item, table: string): HistoryRow {
  return decode(historyRowSchema, item, keyLabel(table, item, 'last_run_date'));
}

/**
 * Items written before membership intent had its own attributes (design 2.9) kept a cancel request in `updated_event` and
 * one event id in `membership_event_id`: read the old marker once; the next write stores the new form.
 */
export function upgradeLegacyIntent(record: BillingRecord): BillingRecord {
  let upgraded = record;
  if (record.updated_event === 'CANCEL_REQUESTED' && record.cancel_requested_at === undefined && (record.billing_status === 'PENDING' || record.billing_status === 'PAUSED')) {
    upgraded = { ...upgraded, cancel_requested_at: record.last_run_date };
  }
  if (record.membership_event_id !== undefined) {
    const { membership_event_id: _legacy, ...rest } = upgraded;
    upgraded = { ...rest, membership_event_ids: [...appliedEventIds(record)] };
  }
  return upgraded;
}
