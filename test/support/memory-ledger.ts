import { randomUUID } from 'node:crypto';
import { PaymentSimulator } from '../../src/adapters/processor/simulator.js';
import type { AchRateTally } from '../../src/domain/ach-return-rates.js';
import { MAX_PLACEMENT_PROBES, nextFreeInstant, sameChain } from '../../src/domain/chain.js';
import { AlreadyExistsError, ConcurrentModificationError } from '../../src/domain/errors.js';
import { dueKey, isFailureLive, type BillingFailureFields } from '../../src/domain/ladder.js';
import type { AttemptRead, BillingLedger, BillingTransaction, LockRelease } from '../../src/domain/ports/billing-ledger.js';
import { applyInstrumentWrite, emptyInstruments, type InstrumentsItem, type InstrumentWrite } from '../../src/domain/instruments/instrument.js';
import type { HoldCode } from '../../src/domain/instruments/holds.js';
import type { InstrumentStore } from '../../src/domain/ports/instruments.js';
import type { Page, PageRequest } from '../../src/domain/ports/page.js';
import type { BillingKey, BillingRecord, HistoryRow } from '../../src/domain/records.js';
import { COLLECTIBLE_STATUSES } from '../../src/domain/statuses.js';
import type { UseCaseDeps } from '../../src/domain/use-cases/deps.js';
import { InMemoryLockStore, ManualClock } from './fakes.js';

const keyOf = (key: BillingKey): string => `${key.user_id}|${key.billing_date}`;
const rowKeyOf = (row: HistoryRow): string => `${row.user_id}|${row.last_run_date}`;

/** The tables as one transaction sees them: copied, changed, and swapped in only when every condition held. */
interface State {
  readonly records: Map<string, BillingRecord>;
  readonly rows: Map<string, HistoryRow>;
  /** The instruments table, by user (written without conditions, as DESIGN 3.2 says). */
  readonly instruments: Map<string, InstrumentsItem>;
}

/**
 * billing-activity and its history in memory, with the conditions of the DynamoDB ledger
 * (src/adapters/dynamodb/billing/): creates conditioned on absence (another chain's record moves a
 * displaceable create, the same chain's drops the optional successor), updates and deletes on
 * `version`, audit rows never overwritten, the lock release inside the transaction, and
 * RecordBillingFailure's proofs. Everything a commit writes lands together or not at all. The
 * condition tests themselves stay on DynamoDB Local; this is for fast use-case tests.
 */
export class InMemoryBillingLedger implements BillingLedger {
  private state: State = { records: new Map(), rows: new Map(), instruments: new Map() };
  /** The ACH return-rate tallies the commits carried, in order. */
  readonly achRates: AchRateTally[] = [];
  readonly calls = { commit: 0, recordBillingFailure: 0 };

  /** `locks`: the lock table a commit's `releaseLock` deletes from. */
  constructor(private readonly locks?: InMemoryLockStore) {}

  async get(key: BillingKey): Promise<BillingRecord | undefined> {
    const record = this.state.records.get(keyOf(key));
    return record && { ...record };
  }

  async getForAttempt(key: BillingKey): Promise<AttemptRead> {
    return { record: await this.get(key), instruments: this.instrumentsOf(key.user_id) };
  }

  /** The user's instruments item as stored (an empty one when none is). */
  instrumentsOf(userId: string): InstrumentsItem {
    return structuredClone(this.state.instruments.get(userId) ?? emptyInstruments(userId));
  }

  /** The instruments table as its own store, over the same state as the ledger's transactions. */
  readonly instrumentStore: InstrumentStore = {
    get: async (userId) => this.instrumentsOf(userId),
    write: async (write) => this.writeInstruments(this.state, write),
    release: async (userId: string, instrumentId: string, code: HoldCode) => {
      if (!this.state.instruments.get(userId)?.holds[instrumentId]?.[code]) return false;
      this.writeInstruments(this.state, { user_id: userId, releases: [{ instrument_id: instrumentId, code }] });
      return true;
    },
  };

  private writeInstruments(state: State, write: InstrumentWrite): void {
    state.instruments.set(write.user_id, applyInstrumentWrite(state.instruments.get(write.user_id) ?? emptyInstruments(write.user_id), write));
  }

  async listByUser(userId: string, page?: PageRequest): Promise<Page<BillingRecord>> {
    const records = [...this.state.records.values()].filter((r) => r.user_id === userId).sort((a, b) => (a.billing_date < b.billing_date ? 1 : -1));
    return paged(records, page);
  }

  async locateSubscription(subscriptionId: string): Promise<readonly BillingKey[]> {
    return [...this.state.records.values()].filter((r) => r.subscription_id === subscriptionId).map((r) => ({ user_id: r.user_id, billing_date: r.billing_date }));
  }

  async findBySubscriptionId(subscriptionId: string): Promise<BillingRecord | undefined> {
    const current = [...this.state.records.values()].filter((r) => r.subscription_id === subscriptionId);
    const newest = current.sort((a, b) => (a.last_run_date < b.last_run_date ? 1 : -1))[0];
    return newest && { ...newest };
  }

  async history(subscriptionId: string, page?: PageRequest): Promise<Page<HistoryRow>> {
    const rows = [...this.state.rows.values()].filter((r) => r.subscription_id === subscriptionId).sort((a, b) => (a.last_run_date < b.last_run_date ? 1 : -1));
    return paged(rows, page);
  }

  async commit(tx: BillingTransaction): Promise<{ created: boolean }> {
    this.calls.commit += 1;
    const next: State = { records: new Map(this.state.records), rows: new Map(this.state.rows), instruments: new Map(this.state.instruments) };
    let history = [...tx.history];
    for (const write of tx.writes) {
      if (write.kind === 'create') {
        const placed = place(next, write.record, { movable: write.displace === true, optional: false })!;
        history = history.map((row) => movedWith(row, write.record, placed));
        next.records.set(keyOf(placed), placed);
      } else {
        const current = next.records.get(keyOf(write.read));
        if (current?.version !== write.read.version) throw new ConcurrentModificationError(`${keyOf(write.read)} is no longer version ${write.read.version}`);
        if (write.kind === 'update') next.records.set(keyOf(write.record), { ...write.record });
        else next.records.delete(keyOf(write.read));
      }
    }
    let created = false;
    if (tx.createIfAbsent) {
      const placed = place(next, tx.createIfAbsent.record, { movable: true, optional: true });
      if (placed) {
        next.records.set(keyOf(placed), placed);
        history.push(movedWith(tx.createIfAbsent.history, tx.createIfAbsent.record, placed));
        created = true;
      }
    }
    for (const row of history) putRow(next, row);
    if (tx.instruments) this.writeInstruments(next, tx.instruments);
    if (tx.releaseLock) this.releaseLock(tx.releaseLock);
    this.state = next;
    if (tx.achRates) this.achRates.push(tx.achRates);
    return { created };
  }

  async addAll(records: readonly BillingRecord[], history: readonly HistoryRow[]): Promise<void> {
    for (const record of records) {
      const rows = history.filter((row) => row.user_id === record.user_id && row.billing_date === record.billing_date);
      if (rows.length === 0) throw new Error(`addAll: record ${keyOf(record)} has no history row`);
      await this.commit({ writes: [{ kind: 'create', record }], history: rows });
    }
  }

  /** Writes only the failure's attributes, as the DynamoDB Update does; false when a proof fails. */
  async recordBillingFailure(read: BillingRecord, after: BillingRecord & BillingFailureFields, history: HistoryRow): Promise<boolean> {
    this.calls.recordBillingFailure += 1;
    const key = dueKey(read);
    if (after.version !== read.version + 1 || after.billing_failed_for !== key) throw new Error('recordBillingFailure: `after` is not the next version failing the work read');
    const current = this.state.records.get(keyOf(read));
    if (!current || !failureProofsHold(current, read, key) || this.state.rows.has(rowKeyOf(history))) return false;
    const presented = after.billing_presented_for !== undefined && after.billing_presented_for !== read.billing_presented_for;
    const { billing_next_attempt_at: _next, ...rest } = current;
    const written: BillingRecord = {
      ...rest,
      billing_failed_for: key,
      billing_failure_count: after.billing_failure_count,
      billing_failed_at: after.billing_failed_at,
      billing_last_error: after.billing_last_error,
      last_run_date: after.last_run_date,
      version: after.version,
      process: after.process,
      ...(presented ? { billing_presented_for: key } : {}),
      ...(after.billing_next_attempt_at !== undefined ? { billing_next_attempt_at: after.billing_next_attempt_at } : {}),
    };
    this.state.records.set(keyOf(read), written);
    this.state.rows.set(rowKeyOf(history), { ...history });
    return true;
  }

  /** Every audit row of a user, oldest first (a test's view of the history table). */
  rowsOf(userId: string): HistoryRow[] {
    return [...this.state.rows.values()].filter((r) => r.user_id === userId).sort((a, b) => (a.last_run_date < b.last_run_date ? -1 : 1));
  }

  /** Every record of a user, oldest billing_date first. */
  recordsOf(userId: string): BillingRecord[] {
    return [...this.state.records.values()].filter((r) => r.user_id === userId).sort((a, b) => (a.billing_date < b.billing_date ? -1 : 1));
  }

  /** Puts a record as another writer would have, bypassing every condition. */
  put(record: BillingRecord): void {
    this.state.records.set(keyOf(record), { ...record });
  }

  /** The lock must still be the holder's (its record_version_number), as the transaction's conditional Delete. */
  private releaseLock(release: LockRelease): void {
    if (!this.locks) throw new Error('commit: releaseLock needs the lock store');
    if (this.locks.get(release.key)?.record_version_number !== release.recordVersionNumber) {
      throw new ConcurrentModificationError(`lock ${release.key} is no longer held by this holder`);
    }
    void this.locks.release(release.key, release.recordVersionNumber);
  }
}

/** Where a create lands: its key, the next free instant past other chains' records, or nowhere (the optional successor exists). */
function place(state: State, record: BillingRecord, how: { movable: boolean; optional: boolean }): BillingRecord | undefined {
  let candidate = record;
  for (let probe = 0; probe <= MAX_PLACEMENT_PROBES; probe++) {
    const holder = state.records.get(keyOf(candidate));
    if (!holder) return { ...candidate };
    if (sameChain(holder, candidate) && how.optional) return undefined;
    if (sameChain(holder, candidate) || !how.movable) break;
    candidate = { ...candidate, billing_date: nextFreeInstant(candidate.billing_date) };
  }
  throw new AlreadyExistsError(`${keyOf(candidate)} exists`);
}

/** A history row of `record` follows it when it moved. */
function movedWith(row: HistoryRow, record: BillingRecord, placed: BillingRecord): HistoryRow {
  const ofRecord = row.user_id === record.user_id && row.billing_date === record.billing_date && row.subscription_id === record.subscription_id;
  return ofRecord ? { ...row, billing_date: placed.billing_date } : row;
}

function putRow(state: State, row: HistoryRow): void {
  if (state.rows.has(rowKeyOf(row))) throw new ConcurrentModificationError(`history row ${rowKeyOf(row)} exists`);
  state.rows.set(rowKeyOf(row), { ...row });
}

/** RecordBillingFailure's condition: the version, a collectible status, the attempts and the live failure the attempt read. */
function failureProofsHold(current: BillingRecord, read: BillingRecord, key: string): boolean {
  if (current.version !== read.version || !COLLECTIBLE_STATUSES.has(current.billing_status) || current.payment_attempts !== read.payment_attempts) return false;
  return isFailureLive(read)
    ? current.billing_failed_for === key && current.billing_failure_count === (read.billing_failure_count ?? 0)
    : current.billing_failed_for !== key;
}

function paged<T>(items: T[], page: PageRequest | undefined): Page<T> {
  const start = page?.cursor ? Number(page.cursor) : 0;
  const end = start + (page?.limit ?? 50);
  return { items: items.slice(start, end), next: end < items.length ? String(end) : null };
}

/** The attempt's dependencies on memory: a clock the test moves, the lock table, the ledger and the local processor. */
export interface MemoryAttempt {
  readonly deps: UseCaseDeps;
  readonly clock: ManualClock;
  readonly locks: InMemoryLockStore;
  readonly ledger: InMemoryBillingLedger;
  readonly processor: PaymentSimulator;
}

export function memoryAttempt(now: string): MemoryAttempt {
  const clock = new ManualClock(now);
  const locks = new InMemoryLockStore();
  const ledger = new InMemoryBillingLedger(locks);
  const processor = new PaymentSimulator(clock);
  const deps: UseCaseDeps = { clock, locks, billing: ledger, processor, accounts: processor, ids: { newId: () => randomUUID() }, accountClockSkewMs: 0 };
  return { deps, clock, locks, ledger, processor };
}
