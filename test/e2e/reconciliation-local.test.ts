import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_TOKEN, newMember, simulatedNow, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * Reconciliation through `npm start`, black-box (DESIGN 9, 14): a day of card, pinless and ACH
 * collections and loan payments, the ACH debits settled by the simulator's bank, reconciles with
 * no exception; then each fault the simulator offers, on its own member, is reported with its
 * code on that member and nothing else, and a second run of the day changes nothing. The API the
 * console reads, the gauges (EMF lines, in the log at debug level locally) and GET /local/events
 * show the same.
 */

const RAILS = ['card', 'ach', 'pinless'] as const;
type Rail = (typeof RAILS)[number];

const MEMBERS: Readonly<Record<string, 'card' | 'pinless' | 'ach'>> = {
  'rl-card-1': 'card',
  'rl-card-2': 'card',
  'rl-card-3': 'card',
  'rl-pin-1': 'pinless',
  'rl-pin-2': 'pinless',
  'rl-pin-3': 'pinless',
  'rl-ach-1': 'ach',
  'rl-ach-2': 'ach',
  'rl-ach-3': 'ach',
};
/** Members who pay a loan instead of a subscription: one on each rail that carries loans. */
const LOANS: Readonly<Record<string, 'pinless' | 'ach'>> = { 'rl-loan-pin': 'pinless', 'rl-loan-ach': 'ach' };
const LOAN_CENTS = 5000;

/** Each fault the simulator offers, each on a member of its own, with the exception DESIGN 14 expects. */
const FAULTS = [
  { kind: 'drop', user_id: 'rl-card-1', rail: 'card', code: 'missing_at_processor', amount_cents: -1999 },
  { kind: 'phantom', user_id: 'rl-card-2', rail: 'card', code: 'missing_in_records', amount_cents: 1234 },
  { kind: 'duplicate', user_id: 'rl-pin-1', rail: 'pinless', code: 'duplicate_charge', amount_cents: 1999 },
  { kind: 'amount_skew', user_id: 'rl-loan-pin', rail: 'pinless', code: 'amount_mismatch', amount_cents: 37 },
  { kind: 'late_return', user_id: 'rl-ach-1', rail: 'ach', code: 'status_mismatch', amount_cents: -1999 },
  { kind: 'drop', user_id: 'rl-ach-2', rail: 'ach', code: 'missing_at_processor', amount_cents: -1999 },
] as const;

let runtime: LocalRuntime;

beforeAll(async () => {
  // Debug level: the gauges are EMF lines in the log (CloudWatch's, in AWS).
  runtime = await startLocalRuntime({ env: { LOG_LEVEL: 'debug' } });
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
});

async function reconcile(date: string): Promise<any> {
  const run = await runtime.call('POST', '/local/reconciliation/run', { date });
  expect(run.status, JSON.stringify(run.body)).toBe(200);
  expect(run.body.failed).toEqual([]);
  expect(run.body.continued).toEqual([]);
  expect(run.body.runs.map((r: any) => r.rail).sort()).toEqual([...RAILS].sort());
  return run.body;
}

/** The day's runs as the console reads them: the list, then each rail's run with its exceptions. */
async function runsOf(date: string): Promise<Record<Rail, any>> {
  const list = await runtime.api('GET', `/v1/reconciliation/runs?date=${date}`);
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  expect(list.body.date).toBe(date);
  expect(list.body.items.map((r: any) => r.rail).sort()).toEqual([...RAILS].sort());
  const runs = {} as Record<Rail, any>;
  for (const rail of RAILS) {
    const one = await runtime.api('GET', `/v1/reconciliation/runs/${date}/${rail}`);
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    const listed = list.body.items.find((r: any) => r.rail === rail);
    const { exceptions, ...run } = one.body;
    expect(run).toEqual(listed);
    expect(run).toMatchObject({ date, rail, status: 'completed' });
    expect(exceptions.map((e: any) => e.exception_id).sort()).toEqual([...run.exception_ids].sort());
    runs[rail] = one.body;
  }
  return runs;
}

/** The last value of each reconciliation gauge per rail, from the EMF lines in the log, and how many lines each gauge had. */
function gauges(): Record<string, Record<string, number>> {
  const last: Record<string, Record<string, number>> = { lines: {} };
  for (const line of runtime.output().split('\n')) {
    if (!line.includes('billing_reconciliation_')) continue;
    let emf: any;
    try {
      emf = JSON.parse(line).emf;
    } catch {
      continue;
    }
    for (const { Name } of emf?._aws?.CloudWatchMetrics?.[0]?.Metrics ?? []) {
      if (!String(Name).startsWith('billing_reconciliation_')) continue;
      (last[Name] ??= {})[emf.rail] = emf[Name];
      last.lines![Name] = (last.lines![Name] ?? 0) + 1;
    }
  }
  return last;
}

/** The gauges once `runs` runs' lines have reached this process (the child's stdout may trail its HTTP answer). */
async function gaugesAfter(runs: number): Promise<Record<string, Record<string, number>>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const read = gauges();
    if ((read.lines!.billing_reconciliation_open_exceptions ?? 0) >= 3 * runs || Date.now() > deadline) return read;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function eventsOf(detailType: string): Promise<any[]> {
  const answer = await runtime.call('GET', `/local/events?detail_type=${detailType}`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.items;
}

/** An exception as the test compares it: what, where, whose and how much. */
const summary = (e: any) => ({ rail: e.rail, code: e.code, user_id: e.user_id, amount_cents: e.amount_cents });
const byUser = (a: { user_id: string; code: string }, b: { user_id: string; code: string }) => (a.user_id + a.code < b.user_id + b.code ? -1 : 1);

describe('reconciliation of a local day through npm start', () => {
  it('a clean day of card, pinless and ACH collections and loan payments reconciles with no exception; each injected fault is reported on its member and nothing else, the same on a second run, in the API, the gauges and the events', async () => {
    expect((await runtime.call('PUT', '/local/processor', { default: 'approve' })).status).toBe(200);
    // Noon of the next day: the whole day's movements fall on one UTC day.
    const day = new Date(Date.parse(await simulatedNow(runtime)) + 86_400_000).toISOString().slice(0, 10);
    expect((await runtime.call('POST', '/local/clock', { now: `${day}T12:00:00Z` })).status).toBe(200);

    const joined = Object.entries(MEMBERS).map(([userId, rail]) => newMember(runtime, userId, rail));
    const loans = Object.entries(LOANS).map(async ([userId, rail]) => {
      const paid = await runtime.call('POST', `/v1/users/${userId}/loans/loan-1/payments`, { amount_cents: LOAN_CENTS, payment_method: rail, account_last_four: '6789' }, {
        authorization: `Bearer ${LOCAL_TOKEN}`,
        'idempotency-key': `${userId}-first`,
      });
      expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    });
    await Promise.all([...joined, ...loans]);
    const collected = await runtime.call('POST', '/local/collections/run');
    expect(collected.status, JSON.stringify(collected.body)).toBe(200);
    expect(collected.body.outcomes).toMatchObject({ collected: 6, submitted: 3 });
    // The run's ACH pump has delivered the simulator's bank outcomes (delay 0): every ACH debit settled, the loan's too.
    const report = await runtime.call('GET', `/local/processor/report?date=${day}`);
    expect(report.status).toBe(200);
    expect(report.body.items.filter((m: any) => m.kind === 'settlement').map((m: any) => m.user_id).sort()).toEqual(['rl-ach-1', 'rl-ach-2', 'rl-ach-3', 'rl-loan-ach']);
    expect(report.body.items.filter((m: any) => m.kind === 'debit')).toHaveLength(11);

    // A clean day: both sides agree on every rail.
    await reconcile(day);
    const clean = await runsOf(day);
    for (const rail of RAILS) {
      expect(clean[rail].exceptions, rail).toEqual([]);
      expect(clean[rail]).toMatchObject({ net_drift_cents: 0, gross_drift_cents: 0, exception_ids: [] });
      expect(clean[rail].ours, rail).toEqual(clean[rail].theirs);
    }
    expect(clean.card.ours).toEqual({ count: 3, total_cents: 3 * 1999 });
    expect(clean.pinless.ours).toEqual({ count: 4, total_cents: 3 * 1999 + LOAN_CENTS });
    // Debits and their settlements (which move no money of their own).
    expect(clean.ach.ours).toEqual({ count: 8, total_cents: 3 * 1999 + LOAN_CENTS });
    // One line per gauge and rail for each run.
    const perRun = (runs: number) => ({ billing_reconciliation_gross_drift_cents: 3 * runs, billing_reconciliation_open_exceptions: 3 * runs, billing_reconciliation_overdue_exceptions: 3 * runs });
    expect(await gaugesAfter(1)).toEqual({
      lines: perRun(1),
      billing_reconciliation_gross_drift_cents: { card: 0, ach: 0, pinless: 0 },
      billing_reconciliation_open_exceptions: { card: 0, ach: 0, pinless: 0 },
      billing_reconciliation_overdue_exceptions: { card: 0, ach: 0, pinless: 0 },
    });
    expect(await eventsOf('billing.reconciliation.exception')).toEqual([]);
    expect(await eventsOf('billing.reconciliation.completed')).toHaveLength(3);

    // Each fault on its own member.
    for (const fault of FAULTS) {
      const injected = await runtime.call('POST', '/local/processor/faults', { kind: fault.kind, date: day, user_id: fault.user_id });
      expect(injected.status, JSON.stringify(injected.body)).toBe(200);
      expect(injected.body.injected).toEqual([expect.objectContaining({ kind: fault.kind, user_id: fault.user_id, rail: fault.rail, expected_code: fault.code, amount_cents: fault.amount_cents })]);
    }
    const expected = FAULTS.map((f) => ({ rail: f.rail, code: f.code, user_id: f.user_id, amount_cents: f.amount_cents })).sort(byUser);

    await reconcile(day);
    const first = await runsOf(day);
    const reported = RAILS.flatMap((rail) => first[rail].exceptions).map(summary).sort(byUser);
    expect(reported).toEqual(expected);
    for (const rail of RAILS) {
      const own = expected.filter((e) => e.rail === rail);
      const run = first[rail];
      expect(run.net_drift_cents, rail).toBe(own.reduce((sum, e) => sum + e.amount_cents, 0));
      expect(run.gross_drift_cents, rail).toBe(own.reduce((sum, e) => sum + Math.abs(e.amount_cents), 0));
      // What the processor moved minus what we recorded is the net drift.
      expect(run.theirs.total_cents - run.ours.total_cents, rail).toBe(run.net_drift_cents);
      for (const e of run.exceptions) expect(e, rail).toMatchObject({ date: day, known: false });
    }
    const openAfterFirst = await gaugesAfter(2);
    expect(openAfterFirst.lines).toEqual(perRun(2));
    expect(openAfterFirst.billing_reconciliation_gross_drift_cents).toEqual({ card: 1999 + 1234, ach: 2 * 1999, pinless: 1999 + 37 });
    expect(openAfterFirst.billing_reconciliation_open_exceptions).toEqual({ card: 2, ach: 2, pinless: 2 });
    const exceptionEvents = await eventsOf('billing.reconciliation.exception');
    expect(exceptionEvents.map((e) => summary(e.detail)).sort(byUser)).toEqual(expected);
    const ids = RAILS.flatMap((rail) => first[rail].exceptions.map((e: any) => e.exception_id)).sort();
    expect(new Set(ids).size).toBe(FAULTS.length);
    expect(exceptionEvents.map((e) => e.detail.exception_id).sort()).toEqual(ids);
    expect(await eventsOf('billing.reconciliation.completed')).toHaveLength(6);

    // An operator resolves the dropped card debit (as the console does); the run of the day again keeps it.
    const dropped = first.card.exceptions.find((e: any) => e.code === 'missing_at_processor');
    const resolved = await runtime.api('POST', `/v1/reconciliation/exceptions/${dropped.exception_id}/resolve`, { resolution: 'written_off', reason: 'processor confirmed the debit never moved (e2e)' });
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(200);

    // The same day again: the same exceptions under the same ids, the same totals, no new event.
    await reconcile(day);
    const second = await runsOf(day);
    for (const rail of RAILS) {
      const strip = ({ completed_at: _c, run_id: _r, exceptions, ...run }: any) => ({ ...run, exceptions: exceptions.map(({ last_seen_at: _l, resolution: _s, ...e }: any) => e) });
      expect(strip(second[rail]), rail).toEqual(strip(first[rail]));
    }
    expect(second.card.exceptions.find((e: any) => e.exception_id === dropped.exception_id).resolution).toMatchObject({ resolution: 'written_off', actor: 'local-operator' });
    expect(RAILS.flatMap((rail) => second[rail].exceptions).filter((e: any) => e.resolution !== undefined)).toHaveLength(1);
    // The gross drift is the run's; the open exceptions leave out the one resolved.
    expect(await gaugesAfter(3)).toEqual({ ...openAfterFirst, lines: perRun(3), billing_reconciliation_open_exceptions: { card: 1, ach: 2, pinless: 2 } });
    expect((await eventsOf('billing.reconciliation.exception')).map((e) => e.detail.exception_id).sort()).toEqual(ids);
    expect(await eventsOf('billing.reconciliation.completed')).toHaveLength(9);
  }, 120_000);
});
