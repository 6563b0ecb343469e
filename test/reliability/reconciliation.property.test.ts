import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatInstant } from '../../src/domain/time.js';
import { reconcileDay } from '../../src/domain/use-cases/reconcile-day.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { dayPlanArb, expectedKey, RecordingEvents, ReconciliationWorld, type DayPlan, type Member } from './reconciliation-scenario.js';

/**
 * DESIGN 14's proof: days of collections on every rail (card, pinless, ACH; subscription periods and
 * loan payments, first attempts and retries), with refunds (partial ones, and on waived, cancelled and
 * ACHSENT periods), returns (at settlement, and late ones that amend the collection day), chargebacks
 * and their outcomes; a random set of faults on each day, at the processor (drop, duplicate, skew, late
 * return, phantom) or on the way to us (a webhook withheld). The runs report exactly the injected
 * faults (code, member, transaction, amount), nothing else; gross drift is the sum of their absolute
 * amounts; a re-run reports the same and publishes nothing new.
 *
 * `npm test` runs a fixed seed and budget; `RECON_PROPERTY_RUNS=200 RECON_PROPERTY_SEED=<n>` a longer run.
 */

const RUNS = Number(process.env.RECON_PROPERTY_RUNS ?? 6);
const SEED = Number(process.env.RECON_PROPERTY_SEED ?? 3301);

let app: TestApp;
let world: ReconciliationWorld;

beforeAll(async () => {
  app = await createTestApp({ label: 'recon-prop' });
  world = new ReconciliationWorld(app);
});

/** Runs a plan and checks that the stored runs of its days report exactly what it injected. */
async function reportsExactlyTheFaults(plan: DayPlan): Promise<void> {
  const { expected, days, events } = await world.runDay(plan);
  const found = await world.reported(days);
  expect(found.exceptions.map(expectedKey).sort()).toEqual(expected.map(expectedKey).sort());
  expect(found.gross).toBe(expected.reduce((sum, e) => sum + Math.abs(e.amount_cents), 0));
  expect(events.exceptions.map(expectedKey).sort()).toEqual(expected.map(expectedKey).sort());

  const again = new RecordingEvents();
  await world.reconcile(days, again);
  expect((await world.reported(days)).exceptions.map(expectedKey).sort()).toEqual(expected.map(expectedKey).sort());
  expect(again.exceptions).toEqual([]);
}

const member = (m: Partial<Member> & Pick<Member, 'record' | 'rail' | 'outcome'>): Member => ({ cents: 2500, retry: false, writtenOff: 'waived', fault: null, ...m });
const plan = (members: readonly Member[], overrides: Partial<DayPlan> = {}): DayPlan => ({ members, minuteOfDay: 12 * 60, settleDelayMinutes: 30, lateAfterDays: 5, ...overrides });

describe('reconciliation of days against the simulator with faults', () => {
  it('reports exactly the injected faults, with gross drift their absolute sum; a re-run is the same', async () => {
    let cases = 0;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(dayPlanArb, async (p) => {
        cases += 1;
        await reportsExactlyTheFaults(p);
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    console.info(`reconciliation property: ${cases} cases in ${Date.now() - started} ms`);
  }, 600_000);

  it('a clean day of every kind of movement reports nothing, with both sides equal', async () => {
    const { days } = await world.runDay(
      plan([
        member({ record: 'sub', rail: 'card', outcome: 'partial_refunds' }),
        member({ record: 'sub', rail: 'card', outcome: 'dispute_won' }),
        member({ record: 'sub', rail: 'card', outcome: 'chargeback' }),
        member({ record: 'sub', rail: 'card', outcome: 'late_dispute' }),
        member({ record: 'sub', rail: 'card', outcome: 'unowed_refund', writtenOff: 'cancelled' }),
        member({ record: 'sub', rail: 'pinless', outcome: 'refund' }),
        member({ record: 'sub', rail: 'ach', outcome: 'return' }),
        member({ record: 'sub', rail: 'ach', outcome: 'late_return' }),
        member({ record: 'sub', rail: 'ach', outcome: 'achsent_refund' }),
        member({ record: 'loan', rail: 'ach', outcome: 'partial_refunds', retry: true }),
        member({ record: 'loan', rail: 'pinless', outcome: 'chargeback' }),
        member({ record: 'loan', rail: 'ach', outcome: 'return_retried' }),
      ]),
    );
    expect(await world.reported(days)).toEqual({ exceptions: [], gross: 0 });
    for (const day of days) {
      for (const rail of ['card', 'pinless', 'ach'] as const) {
        const { run } = (await world.store.getRun(day, rail))!;
        expect(run.ours.total_cents).toBe(run.theirs.total_cents);
      }
    }
  }, 120_000);

  describe('counterexamples the property found', () => {
    it('a won card dispute reconciles: its reinstatement has a row (was missing_in_records)', async () => {
      await reportsExactlyTheFaults(plan([member({ record: 'sub', rail: 'card', outcome: 'dispute_won' })]));
    }, 60_000);

    it('a refund of an unowed payment on a cancelled period reconciles: the refund has a row (was status_mismatch)', async () => {
      await reportsExactlyTheFaults(plan([member({ record: 'sub', rail: 'card', outcome: 'unowed_refund', writtenOff: 'cancelled' })]));
    }, 60_000);

    it('a second partial refund of a pinless period the first one marked REFUNDED reconciles (was amount_mismatch)', async () => {
      await reportsExactlyTheFaults(plan([member({ record: 'sub', rail: 'pinless', cents: 3014, outcome: 'partial_refunds', fault: 'duplicate' })], { minuteOfDay: 5 }));
    }, 60_000);
  });

  it('a re-run keeps a resolution, and the stored run lists its exceptions', async () => {
    const { expected, days } = await world.runDay(plan([member({ record: 'sub', rail: 'pinless', outcome: 'none', cents: 1500, fault: 'drop' })]));
    const day = days[0]!;
    const { exceptions } = await world.reported([day]);
    const id = exceptions[0]!.exception_id;
    expect(exceptions.map(expectedKey)).toEqual(expected.map(expectedKey));
    const resolved = await world.store.resolve(id, { resolution: 'written_off', reason: 'processor confirmed the loss', actor: 'ops@example.com', at: formatInstant(app.clock.now()) });
    expect(resolved).toMatchObject({ exception_id: id, resolution: { resolution: 'written_off' } });
    const rerun = await reconcileDay(world.reconcileDeps(new RecordingEvents()), 'pinless', day);
    expect(rerun.created).toEqual([]);
    const stored = await world.store.getRun(day, 'pinless');
    expect(stored!.run).toMatchObject({ date: day, rail: 'pinless', gross_drift_cents: 1500, exception_ids: [id] });
    expect(stored!.exceptions).toEqual([expect.objectContaining({ exception_id: id, code: 'missing_at_processor', resolution: expect.objectContaining({ resolution: 'written_off' }) })]);
    expect(await world.store.resolve('rx_unknown', { resolution: 'no_action', reason: 'x', actor: 'a', at: formatInstant(app.clock.now()) })).toBeUndefined();
  });
});
