import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SimulatedProcessorReport } from '../../src/adapters/processor/simulator-report.js';
import type { ReconciliationEvents, ReconciliationRun, StoredException } from '../../src/domain/ports/reconciliation.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { createReconciliationJobHandler } from '../../src/handlers/reconciliation-job.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord } from './api-fixtures.js';

/** The reconciliation-job through its manifest's grants: it reads money-movements, writes only its own table. */

let app: TestApp;
let report: SimulatedProcessorReport;
const published: { runs: ReconciliationRun[]; exceptions: StoredException[] } = { runs: [], exceptions: [] };
const events: ReconciliationEvents = {
  completed: async (run) => void published.runs.push(run),
  exception: async (e) => void published.exceptions.push(e),
};

beforeAll(async () => {
  app = await createTestApp({ label: 'recon-job' });
  report = new SimulatedProcessorReport(app.simulator);
});

const handler = () => createReconciliationJobHandler(app.depsFor('reconciliation-job', { processorReports: { card: report, ach: report, pinless: report }, reconciliationEvents: events }));

describe('reconciliation-job', () => {
  it('reconciles every rail of a day within its grants, and names the dropped debit on its member', async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless', amount_cents: 4321 }));
    await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `t-${randomUUID()}` });
    const date = formatInstant(app.clock.now()).slice(0, 10);

    const clean = await handler()({ date });
    expect(clean.failed).toEqual([]);
    expect(clean.runs.map((r) => [r.rail, r.gross_drift_cents, r.exception_ids.length])).toEqual([['card', 0, 0], ['ach', 0, 0], ['pinless', 0, 0]]);

    const [fault] = report.inject({ kind: 'drop', date, user_id: record.user_id });
    const faulty = await handler()({ date });
    expect(faulty.runs.find((r) => r.rail === 'pinless')).toMatchObject({ gross_drift_cents: 4321, net_drift_cents: -4321 });
    expect(published.exceptions).toEqual([expect.objectContaining({ code: 'missing_at_processor', user_id: record.user_id, transaction_id: fault!.transaction_id, amount_cents: -4321 })]);
    expect(published.runs).toHaveLength(6);
  });

  it('the scheduled run (no date) reconciles yesterday', async () => {
    const result = await handler()({ 'detail-type': 'Scheduled Event' });
    const yesterday = new Date(app.clock.now().getTime() - 86_400_000).toISOString().slice(0, 10);
    expect(result.runs.map((r) => r.date)).toEqual([yesterday, yesterday, yesterday]);
  });
});
