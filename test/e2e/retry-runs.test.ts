import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_TOKEN, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';
import { chargesPerUser, httpCaller, parkFleet, runItems, waitForRun, type Call } from '../support/retry-run-fleet.js';

/**
 * A bulk retry run through `npm start` (black-box, HTTP only): 120 subscriptions parked by a
 * processor outage through the real failure ladder, then a dry run, the real run and its replay,
 * with a collections run racing the real run. Charges are counted on the simulator.
 */

const FLEET = 120;
let runtime: LocalRuntime;
let call: Call;
let api: Call;
let users: string[];

beforeAll(async () => {
  runtime = await startLocalRuntime();
  ({ call, api } = httpCaller(runtime.base, LOCAL_TOKEN));
  users = await parkFleet(call, api, FLEET, 'bulk');
}, 600_000);

afterAll(async () => {
  await runtime?.stop();
});

describe(`a bulk retry run over ${FLEET} parked subscriptions through npm start`, () => {
  it('dry run selects all of them and charges nothing; the real run bills each once; its replay and a racing collections run add nothing', async () => {
    const parked = await api('GET', '/v1/subscriptions?billing=failing&state=parked&limit=100');
    expect(parked.status).toBe(200);
    expect((await chargesPerUser(call, users)).size).toBe(0);

    const dry = await api('POST', '/v1/billing/retry-runs', { state: 'parked', reason: 'dry run first', dry_run: true }, { 'idempotency-key': 'e2e-dry' });
    expect(dry.status, JSON.stringify(dry.body)).toBe(202);
    expect(dry.body).toMatchObject({ dry_run: true, selected: FLEET, status: 'done' });
    expect(new Set(dry.body.items.map((i: any) => i.user_id))).toEqual(new Set(users));
    expect((await chargesPerUser(call, users)).size).toBe(0);

    const body = { state: 'parked', reason: 'processor outage over' };
    const real = await api('POST', '/v1/billing/retry-runs', body, { 'idempotency-key': 'e2e-real' });
    expect(real.status, JSON.stringify(real.body)).toBe(202);
    expect(real.body).toMatchObject({ dry_run: false, selected: FLEET, replayed: false });
    // The schedule runs while the run's items are being worked.
    const racing = await call('POST', '/local/collections/run');
    expect(racing.status).toBe(200);
    const done = await waitForRun(api, real.body.run_id, 300_000);
    expect(done.counts).toEqual({ billed: FLEET, failed: 0, still_due: 0, skipped: 0 });

    const replay = await api('POST', '/v1/billing/retry-runs', body, { 'idempotency-key': 'e2e-real' });
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ run_id: real.body.run_id, replayed: true, status: 'done' });
    expect((await call('POST', '/local/collections/run')).status).toBe(200);

    const charges = await chargesPerUser(call, users);
    expect(charges.size).toBe(FLEET);
    expect([...charges.values()].every((n) => n === 1)).toBe(true);
    const items = await runItems(api, real.body.run_id);
    expect(items).toHaveLength(FLEET);
    expect(items.every((i) => i.outcome === 'billed')).toBe(true);
    expect((await api('GET', '/v1/subscriptions?billing=failing&state=parked')).body.items).toHaveLength(0);

    // An audit row of the run, through the history endpoint.
    const history = await api('GET', `/v1/subscriptions/${items[0].subscription_id}/history`);
    expect(history.body.items.some((r: any) => r.run_id === real.body.run_id && r.reason === 'processor outage over' && r.actor)).toBe(true);
  }, 600_000);
});
