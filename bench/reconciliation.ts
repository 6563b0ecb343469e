import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { createDynamoClient } from '../src/adapters/dynamodb/client.js';
import { createAllTables } from '../src/adapters/dynamodb/create-tables.js';
import { DynamoMoneyMovementStore, movementItem } from '../src/adapters/dynamodb/money-movements.js';
import { DynamoReconciliationStore } from '../src/adapters/dynamodb/reconciliation-store.js';
import { tableNamesFor } from '../src/adapters/dynamodb/table-definitions.js';
import type { MoneyMovement } from '../src/domain/money-movements.js';
import type { ProcessorReport } from '../src/domain/ports/processor-report.js';
import type { QueueMessage } from '../src/domain/ports/queue.js';
import type { ProcessorMovement } from '../src/domain/reconciliation/match.js';
import type { Continuation } from '../src/domain/reconciliation/request.js';
import { formatInstant } from '../src/domain/time.js';
import { runReconciliation, shiftDay, type ReconcileDeps } from '../src/domain/use-cases/reconcile-day.js';
import { systemClock, uuidIds } from '../src/runtime/compose.js';

/**
 * The reconciliation-job's cost (DESIGN 14): DynamoDB requests, items and read units it uses, and
 * its wall time, per 1,000 movements of the day, with the table holding that day only and holding
 * 20 more days of the same size (what it reads must not grow with the table). The processor's
 * report is in memory (its pages are the processor's cost, not ours), 100 items a page.
 */

const DAY = '2026-11-15';
const PAGE = 100;

export interface ReconciliationFigures {
  readonly movements: number;
  readonly daysInTable: number;
  /** Hand-overs: 0 for one uninterrupted invocation. */
  readonly continuations: number;
  readonly requests: Record<string, number>;
  readonly itemsRead: number;
  readonly readUnits: number;
  readonly ms: number;
  readonly per1000: { readonly requests: number; readonly itemsRead: number; readonly readUnits: number; readonly ms: number };
}

/** Counts every request, the items its answer held and the read units it consumed. */
function meter(client: DynamoDBClient): { requests: Record<string, number>; items: number; units: number; reset(): void } {
  const state = { requests: {} as Record<string, number>, items: 0, units: 0, reset: () => {} };
  state.reset = () => {
    state.requests = {};
    state.items = 0;
    state.units = 0;
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String((context as { commandName?: string }).commandName ?? 'unknown').replace(/Command$/, '');
      const input = args.input as { ReturnConsumedCapacity?: string };
      if (name === 'Query' || name === 'GetItem') input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const body = out.output as { Items?: unknown[]; Item?: unknown; ConsumedCapacity?: { CapacityUnits?: number } };
      state.requests[name] = (state.requests[name] ?? 0) + 1;
      state.items += body.Items?.length ?? (body.Item ? 1 : 0);
      state.units += body.ConsumedCapacity?.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name: 'benchMeter' },
  );
  return state;
}

function debit(day: string, i: number): { ours: MoneyMovement; theirs: ProcessorMovement } {
  const id = `pm_${day}_${i}_${randomUUID().slice(0, 8)}`;
  const occurred = formatInstant(new Date(Date.parse(`${day}T00:00:00Z`) + Math.floor((i * 86_400_000) / 1_000_007)));
  const ours: MoneyMovement = { movement_id: `debit:${id}`, rail: 'pinless', kind: 'debit', transaction_id: id, amount_cents: 1999, occurred_at: occurred, user_id: `u${i}`, record_key: `sub#${id}`, idempotency_key: id, source: 'attempt' };
  return { ours, theirs: { transaction_id: id, kind: 'debit', amount_cents: 1999, occurred_at: occurred, record_key: `sub#${id}`, user_id: `u${i}` } };
}

async function writeMovements(client: DynamoDBClient, table: string, movements: readonly MoneyMovement[]): Promise<void> {
  const batches: MoneyMovement[][] = [];
  for (let i = 0; i < movements.length; i += 25) batches.push(movements.slice(i, i + 25));
  for (let i = 0; i < batches.length; i += 8) {
    await Promise.all(
      batches.slice(i, i + 8).map(async (batch) => {
        let requests = batch.map((m) => ({ PutRequest: { Item: movementItem(m) } }));
        while (requests.length > 0) {
          const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
          requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
        }
      }),
    );
  }
}

function memoryReport(items: readonly ProcessorMovement[]): ProcessorReport {
  return {
    page: async (_rail, from, to, cursor) => {
      const inWindow = items.filter((m) => Date.parse(m.occurred_at) >= Date.parse(from) && Date.parse(m.occurred_at) < Date.parse(to));
      const offset = cursor === null ? 0 : Number(cursor);
      return { items: inWindow.slice(offset, offset + PAGE), next: offset + PAGE < inWindow.length ? String(offset + PAGE) : null };
    },
  };
}

/** One run of `DAY` on fresh tables holding `movements` on that day and on `otherDays` days away from its window. */
export async function measureReconciliation(endpoint: string, options: { movements: number; otherDays: number; handOverEverySteps?: number }): Promise<ReconciliationFigures> {
  const client = createDynamoClient({ region: 'local', endpoint });
  const tables = tableNamesFor(`bench-recon-${randomUUID().slice(0, 8)}`);
  await createAllTables(client, tables, { streams: false });
  const today = Array.from({ length: options.movements }, (_, i) => debit(DAY, i));
  await writeMovements(client, tables.moneyMovements, today.map((d) => d.ours));
  for (let d = 0; d < options.otherDays; d += 1) {
    await writeMovements(client, tables.moneyMovements, Array.from({ length: options.movements }, (_, i) => debit(shiftDay(DAY, -(d + 6)), i).ours));
  }
  const metered = createDynamoClient({ region: 'local', endpoint });
  const counts = meter(metered);
  const sent: QueueMessage[] = [];
  const report = memoryReport(today.map((d) => d.theirs));
  const deps: ReconcileDeps = {
    clock: systemClock,
    ids: uuidIds,
    movements: new DynamoMoneyMovementStore(metered, tables.moneyMovements),
    reports: { card: report, ach: report, pinless: report },
    reconciliation: new DynamoReconciliationStore(metered, tables.reconciliation),
    events: { completed: async () => undefined, exception: async () => undefined },
    continuations: { sendBatch: async (messages) => void sent.push(...messages) },
  };
  let steps = 0;
  const every = options.handOverEverySteps;
  const timeLeft = () => every !== undefined && ++steps % every === 0;
  const started = performance.now();
  let outcome = await runReconciliation(deps, { date: DAY, rail: 'pinless', run_id: randomUUID(), step: 0 }, timeLeft);
  let continuations = 0;
  while (outcome.kind === 'continued') {
    continuations += 1;
    outcome = await runReconciliation(deps, JSON.parse(sent.shift()!.body) as Continuation, timeLeft);
  }
  const ms = performance.now() - started;
  if (outcome.kind !== 'completed' || outcome.run.gross_drift_cents !== 0 || outcome.run.ours.count !== options.movements) throw new Error(`bench run did not reconcile cleanly: ${JSON.stringify(outcome)}`);
  metered.destroy();
  client.destroy();
  const total = Object.values(counts.requests).reduce((a, b) => a + b, 0);
  const k = options.movements / 1000;
  return {
    movements: options.movements,
    daysInTable: 1 + options.otherDays,
    continuations,
    requests: counts.requests,
    itemsRead: counts.items,
    readUnits: Math.round(counts.units * 10) / 10,
    ms: Math.round(ms),
    per1000: { requests: Math.round((total / k) * 10) / 10, itemsRead: Math.round(counts.items / k), readUnits: Math.round((counts.units / k) * 10) / 10, ms: Math.round(ms / k) },
  };
}
