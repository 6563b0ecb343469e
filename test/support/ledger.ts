import { GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import type { SimulatedCharge } from '../../src/adapters/processor/simulator.js';
import { userLockKey } from '../../src/domain/lock.js';
import type { BillingStore } from '../../src/domain/ports/billing-store.js';
import type { PaymentProcessor, PaymentRequest, PaymentResult } from '../../src/domain/ports/processor.js';
import type { BillingRecord, HistoryRow } from '../../src/domain/records.js';
import type { TestApp } from './app.js';

export { dueRecord } from './billing-fixtures.js';

/**
 * The books of the reliability suites: what the processor accepted against what the tables
 * recorded, and the invariants that must hold between them after any interleaving or crash.
 */

/** Every page of a subscription's audit rows. */
export async function allHistory(billing: BillingStore, subscriptionId: string): Promise<HistoryRow[]> {
  const rows: HistoryRow[] = [];
  let cursor: string | null = null;
  do {
    const page = await billing.history(subscriptionId, { limit: 100, cursor });
    rows.push(...page.items);
    cursor = page.next;
  } while (cursor !== null);
  return rows;
}

/** Every billing period of a user, newest first. */
export async function allRecords(billing: BillingStore, userId: string): Promise<BillingRecord[]> {
  const records: BillingRecord[] = [];
  let cursor: string | null = null;
  do {
    const page = await billing.listByUser(userId, { limit: 100, cursor });
    records.push(...page.items);
    cursor = page.next;
  } while (cursor !== null);
  return records;
}

/** The attempt number of an idempotency key `{subscription_id}:{n}`. */
export function attemptNumberOf(key: string): number {
  return Number(key.slice(key.lastIndexOf(':') + 1));
}

/** Records every submission a processor receives (declines and errors included), by idempotency key. */
export class SubmissionLog implements PaymentProcessor {
  readonly submissions = new Map<string, number>();
  constructor(private readonly inner: PaymentProcessor) {}
  async submit(request: PaymentRequest, signal?: AbortSignal): Promise<PaymentResult> {
    this.submissions.set(request.idempotency_key, (this.submissions.get(request.idempotency_key) ?? 0) + 1);
    return this.inner.submit(request, signal);
  }
}

export interface LedgerExpectations {
  /** Every accepted charge must be on the books (after the normal flow resumed). */
  readonly settled: boolean;
  /** The user's lock must be free (absent or past its lease) at the clock's now. */
  readonly lockFree: boolean;
  /** Most counted failures that may have been saved on one record (0: only uncounted faults happened). */
  readonly maxCountedFailures?: number;
  /** Charges per period allowed (ACH re-presentments after a return make more than one legitimate). */
  readonly maxChargesPerPeriod?: number;
}

/**
 * Checks one user's books and answers every violation (empty when sound):
 * - each subscription's audit rows are versions first..current, each exactly once, the newest equal
 *   to the record (no missing or overwritten history row);
 * - payment_attempts moves by at most one per version;
 * - at most one processor charge per idempotency key and per period (no double charge);
 * - every accepted charge is recorded on its period with its attempt number (no lost charge);
 * - the lock is not held past its lease; the ladder counted no more than it may.
 */
export async function ledgerViolations(app: TestApp, userId: string, expect: LedgerExpectations): Promise<string[]> {
  const problems: string[] = [];
  const records = await allRecords(app.deps.billing, userId);
  const charges = app.simulator.charges().filter((c) => c.user_id === userId);

  const byKey = new Map<string, SimulatedCharge[]>();
  for (const c of charges) byKey.set(c.idempotency_key, [...(byKey.get(c.idempotency_key) ?? []), c]);
  for (const [key, list] of byKey) if (list.length > 1) problems.push(`key ${key} charged ${list.length} times`);

  for (const record of records) {
    const sub = record.subscription_id;
    const rows = (await allHistory(app.deps.billing, sub)).sort((a, b) => a.version - b.version);
    const versions = rows.map((r) => r.version);
    const first = versions[0] ?? 0;
    const expected = Array.from({ length: record.version - first + 1 }, (_, i) => first + i);
    if (versions.join(',') !== expected.join(',')) {
      problems.push(`${sub}: history versions [${versions.join(',')}] but the record is at version ${record.version}`);
    }
    const newest = rows[rows.length - 1];
    if (newest && (newest.last_run_date !== record.last_run_date || newest.billing_status !== record.billing_status)) {
      problems.push(`${sub}: newest history row (${newest.billing_status} ${newest.last_run_date}) is not the record (${record.billing_status} ${record.last_run_date})`);
    }
    for (let i = 1; i < rows.length; i++) {
      const step = rows[i]!.payment_attempts - rows[i - 1]!.payment_attempts;
      if (step < 0 || step > 1) problems.push(`${sub}: payment_attempts moved by ${step} at version ${rows[i]!.version}`);
    }

    const periodCharges = charges.filter((c) => c.reference.kind === 'subscription' && c.reference.subscription_id === sub);
    const allowed = expect.maxChargesPerPeriod ?? 1;
    if (periodCharges.length > allowed) {
      problems.push(`${sub}: ${periodCharges.length} charges for one period (${periodCharges.map((c) => c.idempotency_key).join(', ')})`);
    }
    for (const charge of periodCharges) {
      const n = attemptNumberOf(charge.idempotency_key);
      if (n > record.payment_attempts + 1) problems.push(`${sub}: charge for attempt ${n} but payment_attempts is ${record.payment_attempts}`);
      if (!expect.settled) continue;
      const recorded = rows.some((r) => r.transaction_id === charge.confirmation_id && r.payment_attempts === n);
      if (!recorded) problems.push(`${sub}: accepted charge ${charge.idempotency_key} (${charge.confirmation_id}) is not recorded`);
    }
    const count = record.billing_failure_count ?? 0;
    if (expect.maxCountedFailures !== undefined && count > expect.maxCountedFailures) {
      problems.push(`${sub}: billing_failure_count ${count} > ${expect.maxCountedFailures} counted failures possible`);
    }
  }

  if (expect.lockFree) {
    const lock = await app.db.client.send(
      new GetItemCommand({ TableName: app.db.tables.locks, Key: { PartitionKey: { S: userLockKey(userId) } }, ConsistentRead: true }),
    );
    const expires = Number(lock.Item?.lease_expires_at?.N ?? 0);
    if (lock.Item && expires >= app.clock.now().getTime()) {
      problems.push(`lock of ${userId} held by ${lock.Item.owner_name?.S} until ${new Date(expires).toISOString()}`);
    }
  }
  return problems;
}

/** Item counts of every table: a rejected input must leave them unchanged. */
export async function tableItemCounts(app: TestApp): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const [id, name] of Object.entries(app.db.tables)) {
    let count = 0;
    let start: Record<string, any> | undefined;
    do {
      const out = await app.db.client.send(new ScanCommand({ TableName: name, Select: 'COUNT', ConsistentRead: true, ExclusiveStartKey: start }));
      count += out.Count ?? 0;
      start = out.LastEvaluatedKey;
    } while (start);
    counts[id] = count;
  }
  return counts;
}

