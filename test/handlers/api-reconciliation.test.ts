import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SimulatedProcessorReport } from '../../src/adapters/processor/simulator-report.js';
import type { ReconciliationEvents } from '../../src/domain/ports/reconciliation.js';
import { reconciliationExceptionSchema, reconciliationRunSchema } from '../../src/domain/reconciliation/schemas.js';
import { formatInstant } from '../../src/domain/time.js';
import { runCollectionAttempt } from '../../src/domain/use-cases/collect.js';
import { createApiHandler } from '../../src/handlers/api.js';
import { createReconciliationJobHandler } from '../../src/handlers/reconciliation-job.js';
import { createTestApp, type TestApp } from '../support/app.js';
import { httpEvent, readerAuth, responseOf, type JwtAuth } from '../support/http-events.js';
import { seedRecords } from '../support/seed.js';
import { billingRecord } from './api-fixtures.js';

/** The reconciliation routes (DESIGN 14) on the api's grants, over a run the job wrote on DynamoDB Local. */

let app: TestApp;
let report: SimulatedProcessorReport;
let date: string;
let userId: string;
const quiet: ReconciliationEvents = { completed: async () => undefined, exception: async () => undefined };

const api = async (method: string, route: string, options: Parameters<typeof httpEvent>[1] = {}) =>
  responseOf(await createApiHandler(app.depsFor('api'))(httpEvent(method, { route, timeEpoch: app.clock.now().getTime(), ...options })));
const runJob = () => createReconciliationJobHandler(app.depsFor('reconciliation-job', { processorReports: { card: report, ach: report, pinless: report }, reconciliationEvents: quiet }))({ date });

beforeAll(async () => {
  app = await createTestApp({ label: 'api-recon' });
  report = new SimulatedProcessorReport(app.simulator);
  const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'pinless', amount_cents: 2599 }));
  userId = record.user_id;
  await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `t-${randomUUID()}` });
  date = formatInstant(app.clock.now()).slice(0, 10);
  report.inject({ kind: 'drop', date, user_id: record.user_id });
  await runJob();
});

async function theException() {
  const run = await api('GET', '/v1/reconciliation/runs/{date}/{rail}', { pathParameters: { date, rail: 'pinless' } });
  expect(run.status).toBe(200);
  return run.body.exceptions[0];
}

describe('GET /v1/reconciliation/runs', () => {
  it("lists the day's run of every rail with both sides' totals and the drifts, for a read-only token", async () => {
    const answer = await api('GET', '/v1/reconciliation/runs', { query: { date }, auth: readerAuth });
    expect(answer.status).toBe(200);
    expect(answer.body.date).toBe(date);
    expect(answer.body.items.map((r: { rail: string }) => r.rail).sort()).toEqual(['ach', 'card', 'pinless']);
    const pinless = answer.body.items.find((r: { rail: string }) => r.rail === 'pinless');
    expect(reconciliationRunSchema.safeParse(pinless).success).toBe(true);
    expect(pinless).toMatchObject({ gross_drift_cents: 2599, net_drift_cents: -2599, ours: { count: 1, total_cents: 2599 }, theirs: { count: 0, total_cents: 0 } });
  });

  it('answers an empty list for a day that never ran, and defaults to yesterday', async () => {
    expect((await api('GET', '/v1/reconciliation/runs', { query: { date: '2001-01-01' } })).body).toEqual({ date: '2001-01-01', items: [], next: null });
    const yesterday = new Date(app.clock.now().getTime() - 86_400_000).toISOString().slice(0, 10);
    expect((await api('GET', '/v1/reconciliation/runs')).body.date).toBe(yesterday);
  });

  it('refuses a malformed date or an unknown query field with 400', async () => {
    for (const query of [{ date: '2026-13' }, { date: '26-12-01' }, { date, rail: 'card' }] as Record<string, string>[]) {
      const answer = await api('GET', '/v1/reconciliation/runs', { query });
      expect(answer.status, JSON.stringify(query)).toBe(400);
      expect(answer.body.error.code).toBe('invalid_query');
    }
  });
});

describe('GET /v1/reconciliation/runs/{date}/{rail}', () => {
  it('answers the run with its exception: code, signed amount, member and transaction', async () => {
    const exception = await theException();
    expect(reconciliationExceptionSchema.safeParse(exception).success).toBe(true);
    expect(exception).toMatchObject({ code: 'missing_at_processor', amount_cents: -2599, user_id: userId, rail: 'pinless', date });
    expect(exception.resolution).toBeUndefined();
  });

  it('answers 404 for a day with no run and 400 for a rail that does not exist', async () => {
    expect((await api('GET', '/v1/reconciliation/runs/{date}/{rail}', { pathParameters: { date: '2001-01-01', rail: 'card' } })).status).toBe(404);
    expect((await api('GET', '/v1/reconciliation/runs/{date}/{rail}', { pathParameters: { date, rail: 'wire' } })).status).toBe(400);
  });
});

describe('POST /v1/reconciliation/exceptions/{id}/resolve', () => {
  const resolve = (id: string, body: unknown, auth?: JwtAuth) =>
    api('POST', '/v1/reconciliation/exceptions/{id}/resolve', { pathParameters: { id }, body, ...(auth !== undefined ? { auth } : {}) });

  it('refuses a missing reason, an unknown resolution or an extra field with 400, and a read-only token with 403, writing nothing', async () => {
    const { exception_id } = await theException();
    for (const body of [{ resolution: 'written_off' }, { resolution: 'written_off', reason: '   ' }, { resolution: 'forgiven', reason: 'x' }, { resolution: 'no_action', reason: 'x', amount_cents: 1 }]) {
      expect((await resolve(exception_id, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await resolve(exception_id, { resolution: 'no_action', reason: 'x' }, readerAuth)).status).toBe(403);
    expect((await theException()).resolution).toBeUndefined();
    expect(await app.deps.reconciliation.openExceptions('pinless')).toEqual([expect.objectContaining({ exception_id, date })]);
  });

  it('answers 404 for an unknown id', async () => {
    const answer = await resolve('rx_nope', { resolution: 'no_action', reason: 'looked' });
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('not_found');
  });

  it('stores the resolution with the actor and reason, takes it off the open list, keeps it on a re-run, and answers 409 to a second one', async () => {
    const { exception_id } = await theException();
    const answer = await resolve(exception_id, { resolution: 'written_off', reason: 'the processor confirmed the debit never moved' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ exception_id, resolution: { resolution: 'written_off', reason: 'the processor confirmed the debit never moved', actor: 'operator-1', at: formatInstant(app.clock.now()) } });
    expect(await app.deps.reconciliation.openExceptions('pinless')).toEqual([]);

    await runJob();
    expect((await theException()).resolution).toMatchObject({ resolution: 'written_off', actor: 'operator-1' });
    expect(await app.deps.reconciliation.openExceptions('pinless')).toEqual([]);

    const again = await resolve(exception_id, { resolution: 'recorded', reason: 'changed my mind' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('already_resolved');
    expect((await theException()).resolution.resolution).toBe('written_off');
  });
});

describe('the reconciliation gauges (DESIGN 14)', () => {
  it("emit the run's gross drift and the rail's open exceptions of every day, and count one as overdue past RECONCILIATION_EXCEPTION_MAX_AGE_HOURS", async () => {
    const [record] = await seedRecords(app, billingRecord(app, { payment_method: 'ach', amount_cents: 1500 }));
    await runCollectionAttempt(app.depsFor('batch-worker'), { key: record, process: 'SCHEDULED', owner: `t-${randomUUID()}` });
    const day = formatInstant(app.clock.now()).slice(0, 10);
    report.inject({ kind: 'drop', date: day, user_id: record.user_id });
    const job = (settings: Record<string, number>) => {
      const deps = app.depsFor('reconciliation-job', { processorReports: { card: report, ach: report, pinless: report }, reconciliationEvents: quiet });
      return createReconciliationJobHandler({ ...deps, settings: { ...deps.settings, ...settings } });
    };
    const achGauge = () => app.metrics.reconciliationGauges.filter((g) => g.rail === 'ach').at(-1);

    await job({})({ date: day, rails: ['ach'] });
    expect(achGauge()).toEqual({ rail: 'ach', grossDriftCents: 1500, openExceptions: 1, overdueExceptions: 0 });

    // A day later, a clean day's run still counts the open exception, now past a 12-hour setting.
    const restore = formatInstant(app.clock.now());
    app.clock.set(formatInstant(new Date(app.clock.now().getTime() + 86_400_000)));
    await job({ reconciliationExceptionMaxAgeHours: 12 })({ date: '2001-01-01', rails: ['ach'] });
    expect(achGauge()).toEqual({ rail: 'ach', grossDriftCents: 0, openExceptions: 1, overdueExceptions: 1 });
    await job({})({ date: '2001-01-01', rails: ['ach'] });
    expect(achGauge()?.overdueExceptions).toBe(0);
    app.clock.set(restore);
  });
});
