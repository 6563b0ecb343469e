import { randomUUID } from 'node:crypto';
import { DeleteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoReconciliationStore } from '../../../src/adapters/dynamodb/reconciliation-store.js';
import type { ProcessorReport } from '../../../src/domain/ports/processor-report.js';
import type { ReconciliationEvents } from '../../../src/domain/ports/reconciliation.js';
import type { ProcessorMovement } from '../../../src/domain/reconciliation/match.js';
import { formatInstant, toDate } from '../../../src/domain/time.js';
import { reconcileDay, shiftDay, type ReconcileDeps } from '../../../src/domain/use-cases/reconcile-day.js';
import { createTestApp, type TestApp } from '../../support/app.js';

/**
 * An exception, the pointer a resolution finds it by, and its open entry are written together
 * (DESIGN 14): a run that dies after any of its writes, run again, lists only exceptions that
 * `POST /v1/reconciliation/exceptions/{id}/resolve` can resolve. On DynamoDB Local.
 */

let app: TestApp;
const processor: ProcessorMovement[] = [];
const report: ProcessorReport = {
  page: async (_rail, from, to) => ({ items: processor.filter((m) => toDate(m.occurred_at) >= toDate(from) && toDate(m.occurred_at) < toDate(to)), next: null }),
};
const events: ReconciliationEvents = { completed: async () => undefined, exception: async () => undefined };

beforeAll(async () => {
  app = await createTestApp({ label: 'recon-store' });
});

class ProcessDied extends Error {}

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

/** The table's client for a process that dies just before its write number `diesAt` (counting from 0); it counts the writes it made. */
function dyingClient(diesAt: number): { client: DynamoDBClient; writes: () => number } {
  let writes = 0;
  const real = app.db.client;
  const client = {
    send: async (command: { constructor: { name: string } }, ...rest: unknown[]) => {
      if (WRITES.has(command.constructor.name)) {
        if (writes === diesAt) throw new ProcessDied(`died before write ${diesAt}`);
        writes += 1;
      }
      return (real.send as (c: unknown, ...r: unknown[]) => Promise<unknown>)(command, ...rest);
    },
  } as unknown as DynamoDBClient;
  return { client, writes: () => writes };
}

const deps = (client: DynamoDBClient): ReconcileDeps => ({
  clock: app.clock,
  ids: app.deps.ids,
  movements: app.deps.movements,
  reports: { card: report, ach: report, pinless: report },
  reconciliation: new DynamoReconciliationStore(client, app.db.tables.reconciliation),
  events,
});

let nextDay = 0;
/** A fresh day with one movement the processor made and our records miss: one new exception. */
function phantomDay(): string {
  nextDay += 5;
  const day = shiftDay('2027-03-01', nextDay);
  processor.push({ kind: 'debit', transaction_id: `pi_${randomUUID().slice(0, 8)}`, amount_cents: 1234, occurred_at: formatInstant(new Date(`${day}T12:00:00Z`)), record_key: `sub#${randomUUID()}`, user_id: 'u_phantom' });
  return day;
}

const resolution = () => ({ resolution: 'written_off' as const, reason: 'processor error', actor: 'ops@example.com', at: formatInstant(app.clock.now()) });

describe('a new exception and its pointer', () => {
  it('a run that dies before any of its writes, run again, lists only exceptions it can resolve, each open until resolved', async () => {
    const store = new DynamoReconciliationStore(app.db.client, app.db.tables.reconciliation);
    const counted = dyingClient(Number.POSITIVE_INFINITY);
    await reconcileDay(deps(counted.client), 'pinless', phantomDay());
    const writesOfARun = counted.writes();
    expect(writesOfARun).toBeGreaterThan(1);

    for (let diesAt = 0; diesAt < writesOfARun; diesAt += 1) {
      const day = phantomDay();
      await expect(reconcileDay(deps(dyingClient(diesAt).client), 'pinless', day)).rejects.toBeInstanceOf(ProcessDied);
      await reconcileDay(deps(app.db.client), 'pinless', day);
      const listed = (await store.getRun(day, 'pinless'))!.exceptions;
      expect(listed.map((e) => e.code), `died before write ${diesAt}`).toEqual(['missing_in_records']);
      const id = listed[0]!.exception_id;
      expect((await store.openExceptions('pinless')).map((e) => e.exception_id), `died before write ${diesAt}`).toContain(id);
      expect(await store.resolve(id, resolution()), `died before write ${diesAt}`).toMatchObject({ exception_id: id, resolution: { resolution: 'written_off' } });
      expect((await store.openExceptions('pinless')).map((e) => e.exception_id)).not.toContain(id);
    }
  }, 120_000);

  it('an exception stored without its pointer (as an older run could leave it) gets the pointer back on the next run', async () => {
    const store = new DynamoReconciliationStore(app.db.client, app.db.tables.reconciliation);
    const day = phantomDay();
    const first = await reconcileDay(deps(app.db.client), 'pinless', day);
    const id = first.result.exceptions[0]!.exception_id;
    await app.db.client.send(new DeleteItemCommand({ TableName: app.db.tables.reconciliation, Key: { pk: { S: `EXC#${id}` }, sk: { S: 'AT' } } }));
    expect(await store.resolve(id, resolution())).toBeUndefined();

    const again = await reconcileDay(deps(app.db.client), 'pinless', day);
    expect(again.created).toEqual([]);
    expect(await store.resolve(id, resolution())).toMatchObject({ exception_id: id, first_seen_at: (await store.getRun(day, 'pinless'))!.exceptions[0]!.first_seen_at });
  }, 60_000);
});
