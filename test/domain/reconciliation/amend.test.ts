import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoReconciliationStore } from '../../../src/adapters/dynamodb/reconciliation-store.js';
import type { MoneyMovement, MovementKind } from '../../../src/domain/money-movements.js';
import type { ProcessorReport } from '../../../src/domain/ports/processor-report.js';
import type { ReconciliationEvents, StoredException } from '../../../src/domain/ports/reconciliation.js';
import type { ProcessorMovement } from '../../../src/domain/reconciliation/match.js';
import type { PaymentMethod } from '../../../src/domain/records.js';
import { formatInstant, toDate } from '../../../src/domain/time.js';
import { reconcileDay, shiftDay, type ReconcileDeps } from '../../../src/domain/use-cases/reconcile-day.js';
import { createTestApp, type TestApp } from '../../support/app.js';

/**
 * A return (60 days) or a dispute (120 days) that appears on a later day amends the result of the
 * day its debit's money moved (DESIGN 14), on DynamoDB Local: the earlier day gets the exception
 * and its totals, the later day does not count it; when our side catches up, the exception closes.
 */

let app: TestApp;
let store: DynamoReconciliationStore;
const processor: (ProcessorMovement & { rail: PaymentMethod })[] = [];
const published: StoredException[] = [];

/** The processor's side of these tests: what they put in `processor`, paged in one page. */
const report: ProcessorReport = {
  page: async (rail, from, to) => ({
    items: processor.filter((m) => m.rail === rail && toDate(m.occurred_at) >= toDate(from) && toDate(m.occurred_at) < toDate(to)),
    next: null,
  }),
};
const events: ReconciliationEvents = { completed: async () => undefined, exception: async (e) => void published.push(e) };

beforeAll(async () => {
  app = await createTestApp({ label: 'recon-amend' });
  store = new DynamoReconciliationStore(app.db.client, app.db.tables.reconciliation);
});

const deps = (): ReconcileDeps => ({ clock: app.clock, ids: app.deps.ids, movements: app.deps.movements, reports: { card: report, ach: report, pinless: report }, reconciliation: store, events });
const at = (day: string) => formatInstant(new Date(`${day}T15:00:00Z`));

async function ours(rail: PaymentMethod, kind: MovementKind, debit: string, cents: number, day: string): Promise<void> {
  const movement: MoneyMovement = {
    movement_id: `${kind}:${randomUUID()}`,
    rail,
    kind,
    ...(kind === 'debit' ? { transaction_id: debit } : { original_transaction_id: debit }),
    amount_cents: cents,
    occurred_at: at(day),
    user_id: 'u_amend',
    record_key: `sub#${debit}`,
    source: 'test',
  };
  await app.deps.movements.record(movement);
}

function theirs(rail: PaymentMethod, kind: MovementKind, debit: string, cents: number, day: string): void {
  const id = kind === 'debit' ? debit : `${kind}_${debit}`;
  processor.push({ rail, kind, transaction_id: id, ...(kind === 'debit' ? {} : { original_transaction_id: debit }), amount_cents: cents, occurred_at: at(day), record_key: `sub#${debit}`, user_id: 'u_amend' });
}

/** A debit both sides agree on, and its day's clean run. */
async function cleanDebit(rail: PaymentMethod, debit: string, cents: number, day: string): Promise<void> {
  await ours(rail, 'debit', debit, cents, day);
  theirs(rail, 'debit', debit, cents, day);
  const { run } = await reconcileDay(deps(), rail, day);
  expect(run.gross_drift_cents).toBe(0);
}

describe('a late return or dispute amends its debit day', () => {
  it('a return 30 days on: the debit day gets the status_mismatch, the return day none; our late return row closes it as explained', async () => {
    const debitDay = '2026-10-05';
    const returnDay = shiftDay(debitDay, 30);
    const debit = `ach_${randomUUID()}`;
    await cleanDebit('ach', debit, 5000, debitDay);

    theirs('ach', 'return', debit, 5000, returnDay);
    const later = await reconcileDay(deps(), 'ach', returnDay);
    expect(later.run.exception_ids).toEqual([]);
    expect(later.run.theirs.count).toBe(0);

    const amended = (await store.getRun(debitDay, 'ach'))!;
    expect(amended.run).toMatchObject({ gross_drift_cents: 5000, net_drift_cents: -5000, amended_by: [returnDay], theirs: { count: 2, total_cents: 0 } });
    expect(amended.exceptions).toEqual([expect.objectContaining({ code: 'status_mismatch', amount_cents: -5000, date: debitDay, kind: 'return' })]);
    expect(published.filter((e) => e.date === debitDay && e.code === 'status_mismatch')).toHaveLength(1);
    const exceptionId = amended.exceptions[0]!.exception_id;
    expect((await store.openExceptions('ach')).map((o) => o.exception_id)).toContain(exceptionId);

    // The withheld return webhook arrives: our row, dated by the bank's return, and the return day is run again.
    await ours('ach', 'return', debit, 5000, returnDay);
    await reconcileDay(deps(), 'ach', returnDay);
    const explained = (await store.getRun(debitDay, 'ach'))!;
    expect(explained.run).toMatchObject({ gross_drift_cents: 0, net_drift_cents: 0, exception_ids: [], ours: { count: 2, total_cents: 0 } });
    // Explained is not open: the overdue alarm no longer counts it.
    expect((await store.openExceptions('ach')).map((o) => o.exception_id)).not.toContain(exceptionId);
    const closed = await store.resolve(amended.exceptions[0]!.exception_id, { resolution: 'no_action', reason: 'read back', actor: 'test', at: at(returnDay) });
    expect(closed).toMatchObject({ explained_by: returnDay });
    expect(published.filter((e) => e.date === debitDay)).toHaveLength(1);
  });

  it('running the later day again changes nothing on the debit day', async () => {
    const debitDay = '2026-09-01';
    const returnDay = shiftDay(debitDay, 45);
    const debit = `pin_${randomUUID()}`;
    await cleanDebit('pinless', debit, 1234, debitDay);
    theirs('pinless', 'return', debit, 1234, returnDay);
    await reconcileDay(deps(), 'pinless', returnDay);
    const once = (await store.getRun(debitDay, 'pinless'))!;
    const before = published.length;
    await reconcileDay(deps(), 'pinless', returnDay);
    const twice = (await store.getRun(debitDay, 'pinless'))!;
    expect(twice.run).toEqual(once.run);
    expect(twice.exceptions.map((e) => e.exception_id)).toEqual(once.exceptions.map((e) => e.exception_id));
    expect(published.length).toBe(before);
  });

  it('a dispute 100 days on amends the card debit day; a return 70 days on is past its window and stays on its own day', async () => {
    const cardDay = '2026-06-01';
    const disputeDay = shiftDay(cardDay, 100);
    const card = `pi_${randomUUID()}`;
    await cleanDebit('card', card, 2500, cardDay);
    theirs('card', 'chargeback', card, 2500, disputeDay);
    expect((await reconcileDay(deps(), 'card', disputeDay)).run.exception_ids).toEqual([]);
    expect((await store.getRun(cardDay, 'card'))!.exceptions).toEqual([expect.objectContaining({ code: 'status_mismatch', kind: 'chargeback', amount_cents: -2500 })]);

    const achDay = '2026-06-10';
    const lateDay = shiftDay(achDay, 70);
    const ach = `ach_${randomUUID()}`;
    await cleanDebit('ach', ach, 800, achDay);
    theirs('ach', 'return', ach, 800, lateDay);
    const own = await reconcileDay(deps(), 'ach', lateDay);
    expect(own.result.exceptions).toEqual([expect.objectContaining({ code: 'status_mismatch', amount_cents: -800 })]);
    expect((await store.getRun(achDay, 'ach'))!.run.amended_by).toBeUndefined();
  });
});
