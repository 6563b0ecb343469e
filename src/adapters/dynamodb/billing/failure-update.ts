import { dueKey, isFailureLive, type BillingFailureFields } from '../../../domain/ladder.js';
import type { BillingRecord, HistoryRow } from '../../../domain/records.js';
import { COLLECTIBLE_STATUSES } from '../../../domain/statuses.js';
import { marshallItem } from '../attribute-codec.js';
import { describeKey, dueIndexKey, failingIndexKey, primaryKey } from '../billing-item.js';
import { InvalidTransactionError, cancellationCodes } from '../errors.js';
import { gaugeDelta } from '../gauge-counters.js';
import { keyId, type BillingTables } from './tables.js';
import { planGauges, planHistory, transact, type PlannedWrite } from './transaction.js';

type Failed = BillingRecord & BillingFailureFields;

/** `:pending`, `:failed`: the collectible statuses as condition values. */
const COLLECTIBLE_VALUES = Object.fromEntries([...COLLECTIBLE_STATUSES].map((status) => [`:${status.toLowerCase()}`, status]));

/**
 * RecordBillingFailure (DESIGN 5): an Update of the failure attributes only, proving what the attempt
 * read (version, status, due key, live count), with its audit row. False when the record moved on.
 */
export async function recordBillingFailure(t: BillingTables, read: BillingRecord, after: Failed, history: HistoryRow): Promise<boolean> {
  const key = failureKeyOf(read, after);
  const written = failureAsWritten(read, after, key);
  // A first failure, a parked ladder or a retry after parking changes the failing gauge: its counter rides along.
  const gauges = planGauges(t, gaugeDelta(read, written));
  try {
    await transact(t, 'billing.recordBillingFailure', [failureUpdate(t, read, after, written, key), planHistory(t, history), ...(gauges ? [gauges] : [])]);
    return true;
  } catch (error) {
    if (cancellationCodes(error)?.includes('ConditionalCheckFailed')) return false;
    throw error;
  }
}

/** The due key the failure is recorded for, once `after` is proven to be the next version of `read` failing that work. */
function failureKeyOf(read: BillingRecord, after: Failed): string {
  if (after.user_id !== read.user_id || after.billing_date !== read.billing_date) {
    throw new InvalidTransactionError('recordBillingFailure: `after` is another record');
  }
  if (after.version !== read.version + 1) {
    throw new InvalidTransactionError(`recordBillingFailure: version must advance from ${read.version} to ${read.version + 1}`);
  }
  const key = dueKey(read);
  if (after.billing_failed_for !== key) {
    throw new InvalidTransactionError(`recordBillingFailure: the failure must be keyed to the work read (${key})`);
  }
  if (presents(read, after) && after.billing_presented_for !== key) {
    throw new InvalidTransactionError(`recordBillingFailure: a presented key must be the work read (${key})`);
  }
  return key;
}

/** The attempt presented this key before it failed: recorded in the same UpdateItem, no extra request. */
function presents(read: BillingRecord, after: Failed): boolean {
  return after.billing_presented_for !== undefined && after.billing_presented_for !== read.billing_presented_for;
}

/** The item as this update leaves it (the version condition proves it was `read`): its index keys and gauge class. */
function failureAsWritten(read: BillingRecord, after: Failed, key: string): BillingRecord {
  const { billing_next_attempt_at: _next, ...readRest } = read;
  return {
    ...readRest,
    billing_failed_for: key,
    billing_failure_count: after.billing_failure_count,
    billing_failed_at: after.billing_failed_at,
    billing_last_error: after.billing_last_error,
    last_run_date: after.last_run_date,
    version: after.version,
    process: after.process,
    ...(presents(read, after) ? { billing_presented_for: key } : {}),
    ...(after.billing_next_attempt_at !== undefined ? { billing_next_attempt_at: after.billing_next_attempt_at } : {}),
  };
}

function failureUpdate(t: BillingTables, read: BillingRecord, after: Failed, written: BillingRecord, key: string): PlannedWrite {
  const { sets, removes, values } = failureAssignments(t, read, after, written, key);
  const proofs = ['version = :readVersion', `billing_status IN (${Object.keys(COLLECTIBLE_VALUES).join(', ')})`, 'payment_attempts = :pa', 'billing_date = :bd'];
  if (isFailureLive(read)) {
    proofs.push('billing_failed_for = :key', 'billing_failure_count = :count');
    values[':count'] = read.billing_failure_count ?? 0;
  } else {
    proofs.push('(attribute_not_exists(billing_failed_for) OR billing_failed_for <> :key)');
  }
  return {
    item: {
      Update: {
        TableName: t.table,
        Key: primaryKey(read),
        UpdateExpression: `SET ${sets.join(', ')}` + (removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''),
        ConditionExpression: proofs.join(' AND '),
        ExpressionAttributeNames: { '#process': 'process' },
        ExpressionAttributeValues: marshallItem(values),
      },
    },
    description: { onConditionFailed: 'concurrent', label: describeKey(t.table, read) },
    identity: `${t.table}|${keyId(read)}`,
  };
}

/** The failure's attributes, and the failing- and due-index keys following the failure as written. */
function failureAssignments(t: BillingTables, read: BillingRecord, after: Failed, written: BillingRecord, key: string) {
  // process: what last acted on it, so the audit row written beside this update is the item as written.
  const sets = ['billing_failed_for = :key', 'billing_failure_count = :newCount', 'billing_failed_at = :failedAt', 'billing_last_error = :lastError', 'last_run_date = :lastRun', 'version = :next', '#process = :process'];
  const removes: string[] = [];
  const values: Record<string, unknown> = {
    ':key': key,
    ':newCount': after.billing_failure_count,
    ':failedAt': after.billing_failed_at,
    ':lastError': after.billing_last_error,
    ':lastRun': after.last_run_date,
    ':next': after.version,
    ':process': after.process,
    ':readVersion': read.version,
    ...COLLECTIBLE_VALUES,
    ':pa': read.payment_attempts,
    ':bd': read.billing_date,
  };
  const failing = failingIndexKey(written, t.shardCount);
  if (failing) {
    sets.push('failing_shard = :failingShard');
    values[':failingShard'] = failing.failing_shard;
  } else removes.push('failing_shard');
  if (presents(read, after)) sets.push('billing_presented_for = :key');
  if (after.billing_next_attempt_at !== undefined) {
    sets.push('billing_next_attempt_at = :nextAttempt');
    values[':nextAttempt'] = after.billing_next_attempt_at;
  } else removes.push('billing_next_attempt_at');
  // The ladder's next attempt, or out of the due-index when parked.
  const due = dueIndexKey(after, t.shardCount);
  if (due) {
    sets.push('due_shard = :dueShard', 'due_at = :dueAt');
    values[':dueShard'] = due.due_shard;
    values[':dueAt'] = due.due_at;
  } else removes.push('due_shard', 'due_at');
  return { sets, removes, values };
}
