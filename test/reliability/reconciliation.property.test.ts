import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoReconciliationStore } from '../../src/adapters/dynamodb/reconciliation-store.js';
import { SimulatedProcessorReport, FaultTargetsExhaustedError, PROCESSOR_FAULT_KINDS, type InjectedFault, type ProcessorFaultKind } from '../../src/adapters/processor/simulator-report.js';
import type { ReconciliationEvents, ReconciliationRun, StoredException } from '../../src/domain/ports/reconciliation.js';
import type { BillingRecord, PaymentMethod } from '../../src/domain/records.js';
import { formatInstant } from '../../src/domain/time.js';
import { applyAchEvent } from '../../src/domain/use-cases/apply-ach-outcome.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { reconcileDay, type ReconcileDeps } from '../../src/domain/use-cases/reconcile-day.js';
import { createStripeWebhookHandler } from '../../src/handlers/stripe-webhook.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';
import { stripeDelivery, stripeEvent } from '../support/webhooks.js';
import { billingRecord } from '../handlers/api-fixtures.js';

/**
 * DESIGN 14's proof: a day of collections on every rail (card, pinless, ACH settled and returned,
 * refunds), the simulator's report changed by a random set of faults; the run reports exactly the
 * injected faults, each with its code and amount, and nothing else; gross drift is the sum of their
 * absolute amounts; a clean day reports nothing; a second run gives the same result and no new events.
 */

const DAY = 86_400_000;
const RAILS: readonly PaymentMethod[] = ['card', 'pinless', 'ach'];

let app: TestApp;
let report: SimulatedProcessorReport;
let store: DynamoReconciliationStore;

class RecordingEvents implements ReconciliationEvents {
  readonly completed_: ReconciliationRun[] = [];
  readonly exceptions: StoredException[] = [];
  async completed(run: ReconciliationRun): Promise<void> {
    this.completed_.push(run);
  }
  async exception(exception: StoredException): Promise<void> {
    this.exceptions.push(exception);
  }
}

beforeAll(async () => {
  app = await createTestApp({ label: 'recon-prop' });
  report = new SimulatedProcessorReport(app.simulator);
  store = new DynamoReconciliationStore(app.db.client, app.db.tables.reconciliation);
});

function reconcileDeps(events: ReconciliationEvents): ReconcileDeps {
  return { clock: app.clock, ids: app.deps.ids, movements: app.deps.movements, reports: { card: report, ach: report, pinless: report }, reconciliation: store, events };
}

interface Member {
  readonly rail: PaymentMethod;
  readonly cents: number;
  readonly returned: boolean;
  readonly refunded: boolean;
}

const memberArb: fc.Arbitrary<Member> = fc.record({
  rail: fc.constantFrom<PaymentMethod>('card', 'pinless', 'ach'),
  cents: fc.integer({ min: 100, max: 9_999 }),
  returned: fc.boolean(),
  refunded: fc.boolean(),
});

/** One day of collections through the real attempt and outcome paths; the processor's own outcomes reported as it made them. */
async function collectDay(members: readonly Member[]): Promise<void> {
  const records: BillingRecord[] = [];
  for (const m of members) {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: m.rail, amount_cents: m.cents }));
    if (m.rail === 'ach' && m.returned) app.simulator.configure({ ...app.simulator.current(), users: { ...app.simulator.current().users, [record.user_id]: 'ach_return:R01' } });
    records.push(record);
  }
  for (const record of records) await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `prop-${randomUUID()}` });
  for (const outcome of app.simulator.takeDueAchOutcomes(app.clock.now().getTime())) {
    const c = outcome.charge;
    if (c.reference.kind !== 'subscription') continue;
    await applyAchEvent(app.depsFor('ach-handler'), {
      event_id: `ach_${c.confirmation_id}`,
      type: outcome.type,
      confirmation_id: c.confirmation_id,
      ...(outcome.return_code ? { return_code: outcome.return_code } : {}),
      amount_cents: c.amount_cents,
      occurred_at: formatInstant(new Date(c.ach!.due_at)),
      reference: { kind: 'subscription', user_id: c.user_id, billing_date: c.reference.billing_date },
    });
  }
  for (const [i, m] of members.entries()) {
    if (!m.refunded || m.rail === 'ach') continue;
    const record = (await app.deps.billing.get(records[i]!))!;
    if (record.billing_status !== 'COMPLETED') continue;
    await refund(record);
  }
}

async function refund(record: BillingRecord): Promise<void> {
  const now = app.clock.now();
  if (record.payment_method === 'card') {
    const charge = { id: `ch_${randomUUID().slice(0, 8)}`, object: 'charge', payment_intent: record.transaction_id, amount: record.amount_cents, amount_refunded: record.amount_cents, refunded: true, metadata: { user_id: record.user_id, billing_date: record.billing_date, subscription_id: record.subscription_id } };
    await createStripeWebhookHandler(app.depsFor('stripe-webhook'))(stripeDelivery(stripeEvent('charge.refunded', charge, now.getTime()), { signedAtMs: app.wallClock.now().getTime() }));
  } else {
    await applyAchEvent(app.depsFor('ach-handler'), {
      event_id: `ach_${randomUUID()}`,
      type: 'refunded',
      confirmation_id: record.transaction_id!,
      amount_cents: record.amount_cents,
      occurred_at: formatInstant(now),
      reference: { kind: 'subscription', user_id: record.user_id, billing_date: record.billing_date },
    });
  }
  report.reportOutcome(record.payment_method, {
    kind: 'refund',
    transaction_id: `re_${randomUUID()}`,
    original_transaction_id: record.transaction_id!,
    amount_cents: record.amount_cents,
    occurred_at: formatInstant(now),
    record_key: `sub#${record.subscription_id}`,
    user_id: record.user_id,
  });
}

function inject(kinds: readonly ProcessorFaultKind[], date: string): InjectedFault[] {
  const injected: InjectedFault[] = [];
  for (const kind of kinds) {
    try {
      injected.push(...report.inject({ kind, date }));
    } catch (error) {
      // Fewer debits that day than faults asked for: that fault is simply not injected.
      if (!(error instanceof FaultTargetsExhaustedError)) throw error;
    }
  }
  return injected;
}

async function reconcileAll(day: string, events: ReconciliationEvents) {
  const runs = [];
  for (const rail of RAILS) runs.push(await reconcileDay(reconcileDeps(events), rail, day));
  return runs;
}

const summary = (e: { code: string; transaction_id?: string; amount_cents: number }) => `${e.code}|${e.transaction_id}|${e.amount_cents}`;

describe('reconciliation of a day against the simulator with faults', () => {
  it('reports exactly the injected faults, with gross drift their absolute sum; a clean day reports nothing; a re-run is the same', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(memberArb, { minLength: 1, maxLength: 6 }), fc.array(fc.constantFrom(...PROCESSOR_FAULT_KINDS), { maxLength: 4 }), async (members, kinds) => {
        app.clock.advance(3 * DAY);
        const day = formatInstant(app.clock.now()).slice(0, 10);
        await collectDay(members);
        const injected = inject(kinds, day);
        const events = new RecordingEvents();
        const runs = await reconcileAll(day, events);

        const found = runs.flatMap((r) => r.result.exceptions);
        expect(found.map(summary).sort()).toEqual(injected.map((f) => `${f.expected_code}|${f.transaction_id}|${f.amount_cents}`).sort());
        const gross = runs.reduce((sum, r) => sum + r.run.gross_drift_cents, 0);
        expect(gross).toBe(injected.reduce((sum, f) => sum + Math.abs(f.amount_cents), 0));
        expect(events.exceptions).toHaveLength(injected.length);

        const again = new RecordingEvents();
        const rerun = await reconcileAll(day, again);
        expect(rerun.flatMap((r) => r.result.exceptions).map(summary).sort()).toEqual(found.map(summary).sort());
        expect(again.exceptions).toEqual([]);
        expect(again.completed_).toHaveLength(RAILS.length);
      }),
      { numRuns: 5, seed: 3301, endOnFailure: true },
    );
  }, 240_000);

  it('a clean day of every rail reports nothing, with both sides equal', async () => {
    app.clock.advance(3 * DAY);
    const day = formatInstant(app.clock.now()).slice(0, 10);
    await collectDay([
      { rail: 'card', cents: 1999, returned: false, refunded: true },
      { rail: 'pinless', cents: 2500, returned: false, refunded: false },
      { rail: 'ach', cents: 999, returned: true, refunded: false },
      { rail: 'ach', cents: 4999, returned: false, refunded: false },
    ]);
    const runs = await reconcileAll(day, new RecordingEvents());
    for (const { run, result } of runs) {
      expect(result.exceptions).toEqual([]);
      expect(run.gross_drift_cents).toBe(0);
      expect(run.ours).toEqual({ count: run.theirs.count, total_cents: run.theirs.total_cents });
    }
    expect(runs.map((r) => r.run.ours.total_cents)).toEqual([0, 2500, 4999]);
  }, 120_000);

  it('a re-run keeps a resolution, and the stored run lists its exceptions', async () => {
    app.clock.advance(3 * DAY);
    const day = formatInstant(app.clock.now()).slice(0, 10);
    await collectDay([{ rail: 'pinless', cents: 1500, returned: false, refunded: false }]);
    const [fault] = inject(['drop'], day);
    const first = await reconcileDay(reconcileDeps(new RecordingEvents()), 'pinless', day);
    const id = first.result.exceptions[0]!.exception_id;
    expect(first.created).toEqual([id]);
    const resolved = await store.resolve(id, { resolution: 'written_off', reason: 'processor confirmed the loss', actor: 'ops@example.com', at: formatInstant(app.clock.now()) });
    expect(resolved).toMatchObject({ exception_id: id, resolution: { resolution: 'written_off' } });
    await reconcileDay(reconcileDeps(new RecordingEvents()), 'pinless', day);
    const stored = await store.getRun(day, 'pinless');
    expect(stored!.run).toMatchObject({ date: day, rail: 'pinless', gross_drift_cents: Math.abs(fault!.amount_cents), exception_ids: [id] });
    expect(stored!.exceptions).toEqual([expect.objectContaining({ exception_id: id, code: 'missing_at_processor', resolution: expect.objectContaining({ resolution: 'written_off' }) })]);
    expect(await store.resolve('rx_unknown', { resolution: 'no_action', reason: 'x', actor: 'a', at: formatInstant(app.clock.now()) })).toBeUndefined();
  });
});
