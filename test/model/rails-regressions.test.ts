import { describe, expect, it } from 'vitest';
import { DAY, HOUR, MINUTE } from '../support/time.js';
import { BalanceWebhook, checkoutEvent, Clock, CollectionsRun, Crash, Hopeless, LoanPay, ManualPay, Membership, NewMember, SetOutcome } from './commands.js';
import { BillingWorld } from './harness.js';
import { sharedApp } from './shared-app.js';
import type { Plan } from './reference-model.js';

/**
 * The rails' counterexamples (test/model/rails.ts), each as a named test through the same handlers;
 * each ends with the model's full check, which judges the rails from the processor's log.
 */

const START = '2026-12-01T09:00:00.000Z';

async function world(users = 1): Promise<BillingWorld> {
  const { app, recorder } = await sharedApp();
  return new BillingWorld(app, recorder, users, START);
}

/** Runs the steps, each ending with the model's check, which judges the rails from the simulator's log. */
async function play(w: BillingWorld, steps: readonly { run(model: BillingWorld['model'], world: BillingWorld): Promise<void> }[]): Promise<void> {
  for (const step of steps) await step.run(w.model, w);
  expect(w.railProblems()).toEqual([]);
}

function cardPlan(w: BillingWorld): Plan {
  const now = new Date(w.now());
  return { method: 'card', term: 'MONTHLY', amountCents: 1999, firstDate: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1, 15) };
}

describe('rails counterexamples, as regressions', () => {
  it('a card dispute with the funds withdrawn holds the card for the next period too', async () => {
    const w = await world();
    const plan = cardPlan(w);
    await w.checkout(0, checkoutEvent(w.users[0]!, plan, w.now()), plan);
    w.app.clock.advance(DAY + 7 * HOUR);
    await w.collectionsRun();
    const [charge] = w.charges(w.users[0]!);
    expect(charge).toBeDefined();
    await w.sendCardEvent(charge!, 'charge.dispute.created');
    await w.check('dispute applied');
    w.app.clock.advance(32 * DAY);
    await w.collectionsRun();
    expect(w.railProblems()).toEqual([]);
    const presented = w.app.simulator.presentments().filter((p) => p.user_id === w.users[0] && !p.resend);
    expect(presented).toHaveLength(1);
    await w.check('the next period after a dispute');
  }, 60_000);

  it('a loan payment declined stolen_card holds the pinless card for the subscription too (long run seed 92696311, path 15)', async () => {
    const w = await world(3);
    await play(w, [
      new NewMember(0, 'ach', 'MONTHLY', undefined, 9, 1999),
      new NewMember(1, 'ach', 'MONTHLY', undefined, 0, 1999),
      new NewMember(2, 'pinless', 'MONTHLY', undefined, 9, 1999),
      new Hopeless(0, 'parked'),
      new SetOutcome(2, 'decline:stolen_card'),
      new LoanPay(2, 'pinless', 500, undefined),
      new Hopeless(2, 'parked'),
    ]);
    const user = w.users[2]!;
    const log = w.app.simulator.presentments().filter((p) => p.user_id === user);
    const declined = log.findIndex((p) => p.reference.kind !== 'subscription');
    expect(declined).toBeGreaterThanOrEqual(0);
    expect(log.slice(declined + 1).filter((p) => p.reference.kind === 'subscription' && !p.resend)).toEqual([]);
    await w.settle();
  }, 120_000);

  it('a manual pay after a pause that crashed before its lock release is refused by the stolen_card hold (long run seed 1037514179, path 7)', async () => {
    const w = await world(3);
    await play(w, [
      new NewMember(0, 'ach', 'MONTHLY', undefined, 0, 1999),
      new NewMember(1, 'ach', 'MONTHLY', undefined, 0, 1999),
      new NewMember(2, 'card', 'MONTHLY', undefined, 0, 1999),
      new Hopeless(2, 'exhausted'),
      new Crash('lock.release.before', 'crash'),
      new Membership(2, 'PAUSE', 1),
      new Clock(60 * MINUTE),
      new ManualPay(2, 0, false),
    ]);
    expect(w.trace.at(-1)).toMatch(/→ 409 payment_method_required$/);
    await w.settle();
  }, 120_000);

  it('a manual pay after a balance webhook that a hold refused and that crashed before its lock release is refused too', async () => {
    const w = await world(3);
    await play(w, [
      new NewMember(0, 'ach', 'MONTHLY', undefined, 0, 1999),
      new NewMember(1, 'ach', 'MONTHLY', undefined, 0, 1999),
      new NewMember(2, 'pinless', 'MONTHLY', undefined, 0, 1999),
      new SetOutcome(2, 'decline:stolen_card'),
      new Clock(4 * HOUR),
      new CollectionsRun(),
      new SetOutcome(2, 'approve'),
      new Crash('lock.release.before', 'crash'),
      new BalanceWebhook(2, 100_000),
      new Clock(60 * MINUTE),
      new ManualPay(2, 0, false),
    ]);
    expect(w.trace.join('\n')).toMatch(/→ 409 payment_method_required$/);
    await w.settle();
  }, 120_000);
});
