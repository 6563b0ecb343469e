import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BILLING_RETRY_WAITS_MS } from '../../src/domain/ladder.js';
import { parseDurationMs } from '../../src/domain/time.js';
import { LOCAL_SECRET_DEFAULTS } from '../../src/local/options.js';
import { tryCommands } from '../../src/local/terminal.js';

const run = promisify(execFile);
import { chargesFor, LADDER_WAITS, newMember, periodOf, simulatedNow, startLocalRuntime, type LocalRuntime } from '../support/local-runtime.js';

/**
 * The README tour, black-box: `npm start` as a child process (fresh data dir, no seed, no
 * schedule) driven only through HTTP — the control surface, the API and a signed ACH webhook.
 */

const ACH_SECRET = LOCAL_SECRET_DEFAULTS.ACH_WEBHOOK_SECRET;

let runtime: LocalRuntime;

beforeAll(async () => {
  // As the README tour: --no-schedule, so no scheduled run takes an attempt between two steps.
  runtime = await startLocalRuntime({ args: ['--no-schedule'] });
}, 100_000);

afterAll(async () => {
  if (runtime) expect(await runtime.stop(), runtime.output()).toBe(0);
}, 30_000);

describe('local runtime (npm start)', () => {
  it('answers health, refuses a missing or wrong token like API Gateway, and validates control bodies', async () => {
    expect((await runtime.call('GET', '/health')).body).toMatchObject({ status: 'ok' });
    expect(await runtime.call('GET', '/v1/users/nobody/subscriptions')).toMatchObject({ status: 401, body: { message: 'Unauthorized' } });
    expect((await runtime.call('GET', '/v1/users/nobody/subscriptions', undefined, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect(await runtime.api('GET', '/v1/users/nobody/subscriptions')).toMatchObject({ status: 200, body: { items: [], next: null } });

    const badClock = await runtime.call('POST', '/local/clock', { advance: 'fifteen minutes' });
    expect(badClock.status).toBe(400);
    expect(badClock.body.error.code).toBe('invalid_body');
    expect(badClock.body.error.details.length).toBeGreaterThan(0);
    expect((await runtime.call('POST', '/local/clock', { now: '2026-02-30T00:00:00Z' })).status).toBe(400);
    expect((await runtime.call('POST', '/local/clock', '{not json')).status).toBe(400);
    expect((await runtime.call('PUT', '/local/processor', { default: 'maybe' })).status).toBe(400);
    expect((await runtime.call('POST', '/local/memberships', { type: 'NEW', user_id: 'u' })).status).toBe(400);
  });

  it('bills a new ACH member and completes it when the bank settles by signed webhook', async () => {
    // Settlement three simulated days after submission, so the record is seen in ACHSENT first.
    expect((await runtime.call('PUT', '/local/processor', { default: 'approve', ach_settle_delay_ms: 3 * 86_400_000 })).status).toBe(200);
    const billingDate = await newMember(runtime, 'tour-ach', 'ach');
    expect((await periodOf(runtime, 'tour-ach', billingDate)).billing_status).toBe('PENDING');

    const run = await runtime.call('POST', '/local/collections/run');
    expect(run.status).toBe(200);
    expect(run.body.enqueued).toBeGreaterThanOrEqual(1);
    expect(run.body.outcomes.submitted).toBeGreaterThanOrEqual(1);
    const sent = await periodOf(runtime, 'tour-ach', billingDate);
    expect(sent.billing_status).toBe('ACHSENT');
    const [charge] = await chargesFor(runtime, 'tour-ach');
    expect(charge).toMatchObject({ rail: 'ach', amount_cents: 1999, outcome: 'submitted', confirmation_id: sent.transaction_id });

    const now = await simulatedNow(runtime);
    const body = JSON.stringify({
      event_id: 'ach-evt-tour-1',
      type: 'settled',
      confirmation_id: sent.transaction_id,
      amount_cents: 1999,
      occurred_at: now,
      reference: { kind: 'subscription', user_id: 'tour-ach', billing_date: billingDate },
    });
    // Signed at wall time, as the bank's sender would (`date +%s`), whatever the simulated now is.
    const t = Math.floor(Date.now() / 1000);
    const signature = `t=${t},v1=${createHmac('sha256', ACH_SECRET).update(`${t}.${body}`).digest('hex')}`;
    expect((await runtime.call('POST', '/webhooks/ach', body, { 'x-ach-signature': 't=1,v1=00' })).status).toBe(400);
    const settled = await runtime.call('POST', '/webhooks/ach', body, { 'x-ach-signature': signature });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    expect((await periodOf(runtime, 'tour-ach', billingDate)).billing_status).toBe('COMPLETED');
    // The same event id again (DESIGN 15): its claim answers it, nothing is applied twice.
    const history = (await runtime.api('GET', `/v1/subscriptions/${sent.subscription_id}/history`)).body.items;
    const replayed = await runtime.call('POST', '/webhooks/ach', body, { 'x-ach-signature': signature });
    expect(replayed).toMatchObject({ status: 200, body: { status: 'duplicate' } });
    expect((await runtime.api('GET', `/v1/subscriptions/${sent.subscription_id}/history`)).body.items).toEqual(history);

    // Three days on, the simulator's own settlement arrives through the pump: a replay, no change.
    expect((await runtime.call('POST', '/local/clock', { advance: 'P3DT1M' })).status).toBe(200);
    expect((await periodOf(runtime, 'tour-ach', billingDate)).billing_status).toBe('COMPLETED');
    expect(await chargesFor(runtime, 'tour-ach')).toHaveLength(1);
  });

  it('parks a subscription whose processor keeps erroring on the eighth counted failure, then bills it on operator retry', async () => {
    expect((await runtime.call('PUT', '/local/processor', { default: 'approve', users: { 'tour-pinless': 'error' } })).status).toBe(200);
    const billingDate = await newMember(runtime, 'tour-pinless', 'pinless');

    // The README's waits: each ladder wait plus a second.
    const waits = LADDER_WAITS;
    expect(waits.map((w) => parseDurationMs(w) - 1000)).toEqual(BILLING_RETRY_WAITS_MS);
    for (let failure = 1; failure <= 8; failure++) {
      const run = await runtime.call('POST', '/local/collections/run');
      expect(run.status).toBe(200);
      expect(run.body.outcomes.failed_counted, `run ${failure}: ${JSON.stringify(run.body)}`).toBe(1);
      expect(run.body.outcomes.parked).toBe(failure === 8 ? 1 : 0);
      const record = await periodOf(runtime, 'tour-pinless', billingDate);
      expect(record.billing_status).toBe('PENDING');
      expect(record.billing_failure).toMatchObject({ count: failure, state: failure < 8 ? 'retrying' : 'parked' });
      if (failure < 8) {
        // Not yet: the ladder holds it until its wait is over.
        // (not read at all: the due-index keys it at the ladder's next attempt)
        expect((await runtime.call('POST', '/local/collections/run')).body).toMatchObject({ enqueued: 0 });
        expect((await runtime.call('POST', '/local/clock', { advance: waits[failure - 1] })).status).toBe(200);
      }
    }
    const parked = await runtime.call('POST', '/local/collections/run');
    // A parked record is not in the due-index: the run does not read it.
    expect(parked.body).toMatchObject({ enqueued: 0, skipped_parked: 0 });
    const failing = await runtime.api('GET', '/v1/subscriptions?billing=failing&state=parked');
    expect(failing.body.items.map((r: any) => r.user_id)).toContain('tour-pinless');
    expect(await chargesFor(runtime, 'tour-pinless')).toHaveLength(0);

    expect((await runtime.call('PUT', '/local/processor', { default: 'approve' })).status).toBe(200);
    const subscriptionId = (await periodOf(runtime, 'tour-pinless', billingDate)).subscription_id;
    const retried = await runtime.api('POST', `/v1/subscriptions/${subscriptionId}/retry-billing`, { reason: 'processor outage over' });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body).toMatchObject({ outcome: 'billed', still_due: false });
    expect(retried.body.billing_failure).toBeUndefined();
    expect((await periodOf(runtime, 'tour-pinless', billingDate)).billing_status).toBe('COMPLETED');
    expect(await chargesFor(runtime, 'tour-pinless')).toHaveLength(1);
  }, 120_000); // 23 collections runs through the real process tree: slow on a loaded machine

  it('dunning: a lost card is not retried and manual pay answers 409 payment_method_required; a low balance is retried on the schedule, 8 attempts in 14 days, then exhausted', async () => {
    const users = { 'tour-lost': 'decline:lost_card', 'tour-low': 'decline:insufficient_funds' };
    expect((await runtime.call('PUT', '/local/processor', { default: 'approve', users })).status).toBe(200);
    const lostDate = await newMember(runtime, 'tour-lost', 'card');
    const lowDate = await newMember(runtime, 'tour-low', 'card');
    const run = await runtime.call('POST', '/local/collections/run');
    expect(run.body.outcomes.declined, JSON.stringify(run.body)).toBe(2);
    const lost = await periodOf(runtime, 'tour-lost', lostDate);
    expect(lost.dunning).toEqual({ state: 'exhausted', attempts: 1, next_attempt_at: null, decline_code: 'lost_card', decline_class: 'do_not_retry' });
    const low = await periodOf(runtime, 'tour-low', lowDate);
    expect(Date.parse(low.dunning.next_attempt_at) - Date.parse(low.last_attempt_date)).toBe(86_400_000);
    const pay = await runtime.call('POST', `/v1/subscriptions/${lost.subscription_id}/pay`, undefined, { authorization: `Bearer ${LOCAL_SECRET_DEFAULTS.LOCAL_API_TOKEN}`, 'idempotency-key': 'tour-lost-pay' });
    expect(pay.status).toBe(409);
    expect(pay.body.error.code).toBe('payment_method_required');
    for (let day = 1; day <= 15; day++) {
      expect((await runtime.call('POST', '/local/clock', { advance: 'P1D' })).status).toBe(200);
      expect((await runtime.call('POST', '/local/collections/run')).status).toBe(200);
    }
    const exhausted = await runtime.api('GET', '/v1/subscriptions?billing=dunning&state=exhausted');
    // 8: the daily run that reaches the day-14 slot comes seconds after it, inside the window's late-run grace.
    expect(exhausted.body.items.map((r: any) => `${r.user_id} ${r.dunning.attempts}`).sort()).toEqual(['tour-lost 1', 'tour-low 8']);
    expect(await chargesFor(runtime, 'tour-lost')).toHaveLength(0);
  }, 120_000);
});

describe('the way in', () => {
  it("runs the banner's Try lines as printed: each answers JSON, none Unauthorized", async () => {
    const commands = tryCommands(runtime.output());
    expect(commands.length, runtime.output()).toBeGreaterThanOrEqual(5);
    for (const command of commands) {
      const { stdout } = await run('/bin/sh', ['-c', `${command} -w '\\n%{http_code}'`]);
      const [body, status] = [stdout.slice(0, stdout.lastIndexOf('\n')), stdout.slice(stdout.lastIndexOf('\n') + 1)];
      expect(status, `${command}: ${body}`).toBe('200');
      expect(() => JSON.parse(body), command).not.toThrow();
      expect(body, command).not.toContain('Unauthorized');
    }
  }, 60_000);

  it('GET / leads to the console', async () => {
    const root = await fetch(`${runtime.base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
  });
});
