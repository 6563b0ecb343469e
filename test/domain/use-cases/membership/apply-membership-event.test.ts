import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { UseCaseDeps } from '../../../../src/domain/use-cases/deps.js';
import { LockedError } from '../../../../src/domain/errors.js';
import { applyMembershipEvent, membershipEventSchema, type MembershipEvent } from '../../../../src/domain/use-cases/membership/apply-membership-event.js';
import { formatInstant } from '../../../../src/domain/time.js';
import { nextPeriodDate } from '../../../../src/domain/billing-record.js';
import { createTestApp, type TestApp } from '../../../support/app.js';
import { makeRecord } from '../../../support/billing-fixtures.js';
import { holdUserLock, recordsOf, seedRecords } from '../../../support/seed.js';
import { DAY, HOUR } from '../../../support/time.js';

const NOW = '2026-12-01T12:00:00.000Z';
const at = (offsetMs: number) => formatInstant(new Date(Date.parse(NOW) + offsetMs));

function event(type: string, userId: string, extra: Record<string, unknown> = {}): MembershipEvent {
  return membershipEventSchema.parse({ event_id: randomUUID(), type, user_id: userId, occurred_at: NOW, ...extra });
}

const plan = { amount: '19.99', term: 'MONTHLY', tier: 'plus:v3', payment_method: 'pinless', first_billing_date: '2026-12-15T00:00:00Z' };

describe('applyMembershipEvent', () => {
  let app: TestApp;
  let deps: UseCaseDeps;
  const owner = 'test-invocation';
  beforeAll(async () => {
    app = await createTestApp({ label: 'members-domain', now: NOW });
    deps = app.deps;
  });

  it('ignores NEW for a user whose membership is open: one billing stream per user', async () => {
    const record = makeRecord({ billing_date: at(5 * DAY) });
    await seedRecords(app, record);
    const outcome = await applyMembershipEvent(deps, { event: event('NEW', record.user_id, { plan }), owner });
    expect(outcome).toMatchObject({ kind: 'ignored', reason: 'already_member' });
    expect(await recordsOf(app, record.user_id)).toHaveLength(1);
  });

  it('opens a NEW whose first date holds a closed membership’s record at the next free instant (the old record untouched)', async () => {
    const old = makeRecord({ billing_status: 'CANCELLED', billing_date: '2026-12-15T00:00:00.000000000Z' });
    await seedRecords(app, old);
    const outcome = await applyMembershipEvent(deps, { event: event('NEW', old.user_id, { plan }), owner });
    expect(outcome).toMatchObject({ kind: 'applied' });
    expect(await app.deps.billing.get(old)).toEqual(old);
    const opened = await app.deps.billing.get({ user_id: old.user_id, billing_date: '2026-12-15T00:00:00.000000001Z' });
    expect(opened).toMatchObject({ billing_status: 'PENDING', payment_attempts: 0 });
    expect(opened!.chain_id).toBe(opened!.subscription_id);
    expect((await app.deps.billing.history(opened!.subscription_id)).items.map((r) => r.billing_date)).toEqual([opened!.billing_date]);
  });

  it('a CANCEL of a banned member lands even when a closed chain’s record holds the next period’s date (F10 class)', async () => {
    const head = makeRecord({ billing_status: 'INACTIVE', billing_date: at(-DAY), chain_id: 'chain-new' });
    const nextDate = nextPeriodDate(head);
    const closed = makeRecord({ user_id: head.user_id, billing_status: 'CANCELLED', billing_date: nextDate, chain_id: 'chain-old' });
    await seedRecords(app, head, closed);
    const outcome = await applyMembershipEvent(deps, { event: event('CANCEL', head.user_id), owner });
    expect(outcome).toMatchObject({ kind: 'applied' });
    const requested = (await recordsOf(app, head.user_id)).filter((r) => r.chain_id === 'chain-new' && r.cancel_requested_at !== undefined);
    expect(requested.map((r) => r.billing_date)).toEqual([nextDate.replace('000000Z', '000001Z')]);
    expect(await app.deps.billing.get(closed)).toEqual(closed);
  });

  it('answers a replay of the same event as a duplicate', async () => {
    const user = `user-${randomUUID()}`;
    const e = event('NEW', user, { plan });
    expect((await applyMembershipEvent(deps, { event: e, owner })).kind).toBe('applied');
    expect(await applyMembershipEvent(deps, { event: e, owner })).toEqual({ kind: 'duplicate' });
  });

  it('throws LockedError when the user lock is held, and writes nothing', async () => {
    const record = makeRecord({ billing_date: at(5 * DAY) });
    await seedRecords(app, record);
    await holdUserLock(app, record.user_id);
    await expect(applyMembershipEvent(deps, { event: event('PAUSE', record.user_id, { months: 1 }), owner })).rejects.toBeInstanceOf(LockedError);
    expect(await app.deps.billing.get(record)).toEqual(record);
  });

  it('does not pause over a requested cancel, nor pause twice', async () => {
    const cancelled = makeRecord({ billing_date: at(5 * DAY), updated_event: 'CANCEL_REQUESTED' });
    const paused = makeRecord({ billing_status: 'PAUSED', paused_months: 1, billing_date: at(5 * DAY) });
    await seedRecords(app, cancelled, paused);
    expect(await applyMembershipEvent(deps, { event: event('PAUSE', cancelled.user_id, { months: 2 }), owner })).toMatchObject({ kind: 'ignored', reason: 'cancel_requested' });
    expect(await applyMembershipEvent(deps, { event: event('PAUSE', paused.user_id, { months: 2 }), owner })).toMatchObject({ kind: 'ignored', reason: 'already_paused' });
  });

  it('CANCEL while the due period keeps failing: the period stays owed and the next one is created with the cancel marker', async () => {
    const due = makeRecord({ billing_date: at(-HOUR) });
    await seedRecords(app, due);
    app.simulator.configure({ users: { [due.user_id]: 'error' } });
    const outcome = await applyMembershipEvent(deps, { event: event('CANCEL', due.user_id), owner });
    expect(outcome.kind).toBe('applied');
    const [next, owed] = await recordsOf(app, due.user_id);
    expect(owed).toMatchObject({ billing_status: 'PENDING', billing_failure_count: 1 });
    expect(next).toMatchObject({ billing_status: 'PENDING', updated_event: 'CANCEL_REQUESTED', billing_date: '2027-01-01T11:00:00.000000000Z' });
    app.simulator.configure({});
  });

  it('PAUSE catches up every due period, oldest first, before pausing the first one not yet due', async () => {
    const user = `user-${randomUUID()}`;
    const first = makeRecord({ user_id: user, billing_date: at(-45 * DAY), payment_method: 'pinless', billing_anchor_day: 17 });
    await seedRecords(app, first);
    const outcome = await applyMembershipEvent(deps, { event: event('PAUSE', user, { months: 1 }), owner });
    expect(outcome.kind).toBe('applied');
    if (outcome.kind !== 'applied') return;
    expect(outcome.attempts.map((a) => a.kind)).toEqual(['collected', 'collected']);
    expect((await recordsOf(app, user)).map((r) => r.billing_status)).toEqual(['PAUSED', 'COMPLETED', 'COMPLETED']);
  });

  it('PAUSE of a user whose owed period cannot be collected never erases the periods that came due since', async () => {
    const user = `user-${randomUUID()}`;
    const stuck = makeRecord({ user_id: user, billing_date: at(-45 * DAY), payment_method: 'pinless', billing_anchor_day: 17 });
    await seedRecords(app, stuck);
    app.simulator.configure({ users: { [user]: 'error' } });
    const outcome = await applyMembershipEvent(deps, { event: event('PAUSE', user, { months: 1 }), owner });
    app.simulator.configure({});
    expect(outcome.kind).toBe('applied');
    const records = await recordsOf(app, user);
    // Newest first: the first future period is paused; the one that came due meanwhile is owed.
    expect(records.map((r) => [r.billing_status, Date.parse(r.billing_date) > Date.parse(NOW)])).toEqual([
      ['PAUSED', true],
      ['PENDING', false],
      ['PENDING', false],
    ]);
    expect(records[1]?.updated_event).toBeUndefined();
  });

  it('CLOSEACCOUNT of a user far behind keeps every period that came due owed and marks only the first future one', async () => {
    const user = `user-${randomUUID()}`;
    const stuck = makeRecord({ user_id: user, billing_date: at(-45 * DAY), billing_anchor_day: 17 });
    await seedRecords(app, stuck);
    await applyMembershipEvent(deps, { event: event('CLOSEACCOUNT', user), owner });
    const records = await recordsOf(app, user);
    expect(records.map((r) => [r.billing_status, r.updated_event ?? null])).toEqual([
      ['PENDING', 'CANCEL_REQUESTED'],
      ['PENDING', null],
      ['PENDING', null],
    ]);
    expect(Date.parse(records[0]!.billing_date)).toBeGreaterThan(Date.parse(NOW));
    expect(Date.parse(records[1]!.billing_date)).toBeLessThanOrEqual(Date.parse(NOW));
  });

  it('CLOSEACCOUNT cancels paused and not-yet-due periods and marks the successor of a due, never-attempted period', async () => {
    const user = `user-${randomUUID()}`;
    const due = makeRecord({ user_id: user, billing_date: at(-HOUR) });
    await seedRecords(app, due);
    const outcome = await applyMembershipEvent(deps, { event: event('CLOSEACCOUNT', user), owner });
    expect(outcome.kind).toBe('applied');
    const [next, owed] = await recordsOf(app, user);
    expect(owed).toEqual(due);
    expect(next).toMatchObject({ billing_status: 'PENDING', updated_event: 'CANCEL_REQUESTED' });

    const paused = makeRecord({ billing_status: 'PAUSED', paused_months: 2, billing_date: at(-HOUR) });
    await seedRecords(app, paused);
    await applyMembershipEvent(deps, { event: event('CLOSEACCOUNT', paused.user_id), owner });
    expect(await app.deps.billing.get(paused)).toMatchObject({ billing_status: 'CANCELLED', updated_event: 'ACCOUNT_CLOSED' });
  });

  it('REACTIVATE after a BAN of two periods brings both back and collects the due one', async () => {
    const user = `user-${randomUUID()}`;
    const failed = makeRecord({ user_id: user, billing_status: 'FAILED', billing_date: at(-3 * DAY), payment_attempts: 1, last_attempt_date: at(-2 * DAY), payment_method: 'pinless' });
    const next = makeRecord({ user_id: user, billing_date: at(27 * DAY), payment_method: 'pinless' });
    await seedRecords(app, failed, next);
    await applyMembershipEvent(deps, { event: event('BAN', user), owner });
    expect(await applyMembershipEvent(deps, { event: event('UNPAUSE', user), owner })).toMatchObject({ kind: 'ignored', reason: 'not_paused' });
    const outcome = await applyMembershipEvent(deps, { event: event('REACTIVATE', user), owner });
    expect(outcome.kind).toBe('applied');
    expect(await app.deps.billing.get(failed)).toMatchObject({ billing_status: 'COMPLETED', process: 'REACTIVATION' });
    expect(await app.deps.billing.get(next)).toMatchObject({ billing_status: 'PENDING', updated_event: 'REACTIVATED' });
    expect(await applyMembershipEvent(deps, { event: event('REACTIVATE', user), owner })).toMatchObject({ kind: 'ignored', reason: 'not_inactive' });
  });
});
