import type { MembershipEventType } from '../../src/domain/membership-events.js';
import { DAY, HOUR } from '../support/time.js';

/**
 * The reference model of the model-based billing test: what each member owes, period by period,
 * written separately from src/domain (it imports no domain function; its calendar is its own).
 *
 * Per member it keeps the billing chain(s) the member opened, and per chain the periods ("slots")
 * in order: their billing dates (from the plan's anchor day, term and Friday rule), and what the
 * member or an operator asked for each one: charge it, skip it (pause), cancel it (a cancel that
 * took effect ends the chain), or write it off (waive). Charges are not predicted; they are judged:
 * every charge the processor took must be for a slot that may be charged at that moment, at most
 * once per slot unless the money came back (return, chargeback, dispute, refund), and every due
 * slot must be collected, written off, or still owed and visible.
 *
 * Where the system's answer depends on timing the model cannot know (has the pause run already
 * advanced a paused period?), the harness passes what it observed right before the event; the
 * model resolves its choice from that and nothing else.
 *
 * Dunning (D1, `dunningViolations`): no automatic presentment of a period more than 14 days after
 * the first decline of its cycle, and at most 7 automatic retries in a cycle (8 attempts with the
 * first decline). The cycle's start is read from the period as the attempt found it
 * (`dunning_first_declined_at`): when a decline is recorded depends on crash repairs and on Stripe's
 * webhook, which the model does not predict. A manual pay (the customer) and retry-billing (an
 * operator, who starts a new cycle) are not automatic; a resent key is not a new presentment.
 *
 * Holds and ceilings are judged apart, per instrument rather than per period, from the
 * processor's log of presentments (test/model/rails.ts), over subscriptions and loans together.
 * Out of scope: short settlements, returns after settlement, trial checkouts. The model tolerates
 * them: reversals only widen what may be charged again.
 */

export type Term = 'MONTHLY' | 'ANNUAL';
export type Method = 'ach' | 'pinless' | 'card';

/** Instants as the tables store them (RFC3339 with up to 9 fractional digits) → epoch ms. */
export function ms(instant: string): number {
  const value = Date.parse(instant.replace(/(\.\d{3})\d*Z$/, '$1Z'));
  if (Number.isNaN(value)) throw new Error(`not an instant: ${instant}`);
  return value;
}

export function iso(t: number): string {
  return new Date(t).toISOString();
}

/* ---------------- the model's own calendar ---------------- */

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** Nth Friday (1-5) of a month; a month without one bills on its last Friday. */
function nthFriday(year: number, month: number, n: number): number {
  const fridays: number[] = [];
  for (let d = 1; d <= daysIn(year, month); d++) if (new Date(Date.UTC(year, month, d)).getUTCDay() === 5) fridays.push(d);
  return fridays[Math.min(n, fridays.length) - 1]!;
}

export interface Calendar {
  readonly anchorDay: number;
  readonly friday?: number | undefined;
}

/** `months` calendar months after `t`, on the anchor day (clamped to the month's end) or the Nth Friday, same time of day. */
export function monthsAfter(t: number, months: number, cal: Calendar): number {
  const d = new Date(t);
  const total = d.getUTCMonth() + months;
  const year = d.getUTCFullYear() + Math.floor(total / 12);
  const month = ((total % 12) + 12) % 12;
  const timeOfDay = t - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const day = cal.friday !== undefined ? nthFriday(year, month, cal.friday) : Math.min(cal.anchorDay, daysIn(year, month));
  return Date.UTC(year, month, day) + timeOfDay;
}

/* ---------------- state ---------------- */

export type SlotKind = 'charge' | 'pause' | 'cancel';

export interface Slot {
  date: number;
  kind: SlotKind;
  /** Pause slots: calendar months still to skip, this one included. */
  pauseLeft?: number;
  /** A charge is allowed from here on (an unpaused slot became chargeable when the UNPAUSE applied). */
  chargeableFrom: number;
  /** Written off by an operator at this time: no charge from then on. */
  waivedAt?: number;
  /** How the slot came to be, for failure messages. */
  why: string;
}

export interface Plan {
  readonly method: Method;
  readonly term: Term;
  readonly amountCents: number;
  readonly friday?: number | undefined;
  readonly firstDate: number;
}

export interface Chain {
  readonly id: number;
  readonly plan: Plan;
  readonly openedAt: number;
  /** The system's id of this chain (its records' `chain_id`), learned from the first period it wrote (`learnChainIds`). */
  systemId?: string;
  anchorDay: number;
  /** Materialized in order; the chain ends after a cancel slot. */
  readonly slots: Slot[];
}

export interface MemberModel {
  readonly userId: string;
  readonly chains: Chain[];
  /** Bans as [from, to) intervals; `to` undefined while banned. */
  readonly bans: { from: number; to?: number }[];
  /** occurred_at (ms) of the newest membership event that changed something. */
  newestAppliedAt?: number;
  /** event ids the system applied (a replay of any of them must be a no-op). */
  readonly appliedEvents: Set<string>;
  /** The applied events in the order they applied, with their occurred_at (ms). */
  readonly appliedLog: { id: string; at: number }[];
  /** Money that came back, per billing date (ms): ACH returns, chargebacks, disputes, refunds. */
  readonly reversals: Map<number, number>;
}

export interface ModelState {
  readonly members: MemberModel[];
  /** For failure messages: what the model did, step by step. */
  readonly log: string[];
}

export function newModel(userIds: readonly string[]): ModelState {
  return {
    members: userIds.map((userId) => ({ userId, chains: [], bans: [], appliedEvents: new Set(), appliedLog: [], reversals: new Map() })),
    log: [],
  };
}

export function isBanned(m: MemberModel, t?: number): boolean {
  if (t === undefined) return m.bans.some((b) => b.to === undefined);
  // Open at `from`: a charge in the same instant was made before the ban (the harness moves the clock 1 ms after a ban).
  return m.bans.some((b) => b.from < t && (b.to === undefined || t < b.to));
}

export function currentChain(m: MemberModel): Chain | undefined {
  return m.chains[m.chains.length - 1];
}

function isEnded(chain: Chain): boolean {
  return chain.slots[chain.slots.length - 1]?.kind === 'cancel';
}

/** The slot after `slot` (undefined once the chain ends): a pause moves one calendar month per paused month, whatever the term. */
function successorOf(chain: Chain, slot: Slot): Slot | undefined {
  const cal = { anchorDay: chain.anchorDay, friday: chain.plan.friday };
  if (slot.kind === 'cancel') return undefined;
  if (slot.kind === 'pause') {
    const left = (slot.pauseLeft ?? 1) - 1;
    const date = monthsAfter(slot.date, 1, cal);
    return left > 0
      ? { date, kind: 'pause', pauseLeft: left, chargeableFrom: date, why: `pause continues (${left} left)` }
      : { date, kind: 'charge', chargeableFrom: date, why: 'pause over' };
  }
  const date = monthsAfter(slot.date, chain.plan.term === 'ANNUAL' ? 12 : 1, cal);
  return { date, kind: 'charge', chargeableFrom: date, why: 'next period' };
}

/** Materializes the chain's slots up to `until`. */
export function slotsUntil(chain: Chain, until: number): Slot[] {
  let last = chain.slots[chain.slots.length - 1]!;
  while (last.date <= until) {
    const next = successorOf(chain, last);
    if (!next) break;
    chain.slots.push(next);
    last = next;
  }
  return chain.slots;
}

function truncateAfter(chain: Chain, slot: Slot): void {
  const i = chain.slots.indexOf(slot);
  chain.slots.splice(i + 1);
}

/* ---------------- what the harness observed ---------------- */

/** A record as the model needs it (from the table, read right before or after an event). */
export interface ObservedRecord {
  readonly billing_date: string;
  readonly billing_status: string;
  readonly subscription_id: string;
  readonly transaction_id?: string | undefined;
  readonly payment_method: string;
  readonly amount_cents: number;
  readonly created_date: string;
  /** The chain the record belongs to (the subscription_id of its first period), as the system wrote it. */
  readonly chain_id?: string | undefined;
}

export const OPEN_STATUSES = new Set(['PENDING', 'FAILED', 'PAUSED', 'ACHSENT']);

/** Slots already materialized that the system shows as PAUSED, or not yet created. */
function pauseNotSkipped(slot: Slot, records: ReadonlyMap<number, ObservedRecord>): boolean {
  if (slot.kind !== 'pause' || slot.waivedAt !== undefined) return false;
  const rec = records.get(slot.date);
  // No record yet: the pause has not reached this period, so it is still to be skipped.
  return rec ? rec.billing_status === 'PAUSED' : true;
}

function byDate(records: readonly ObservedRecord[]): Map<number, ObservedRecord> {
  return new Map(records.map((r) => [ms(r.billing_date), r]));
}

/** The first slot a membership change lands on: the first not yet due (a due period is attempted first), past any written-off one. */
function landingSlot(chain: Chain, t: number): Slot {
  for (let i = 0; ; i++) {
    slotsUntil(chain, t + 800 * DAY);
    const slot = chain.slots[i];
    if (!slot) throw new Error('model: chain ended before a landing slot');
    if (slot.date > t && slot.waivedAt === undefined) return slot;
  }
}

/* ---------------- membership events ---------------- */

export type MembershipType = MembershipEventType;

export interface MembershipInput {
  readonly event_id: string;
  readonly type: MembershipType;
  readonly occurredAt: number;
  readonly months?: number;
  readonly plan?: Plan;
}

/** What the model expects of an event, before it is delivered. */
export type Expectation =
  | { readonly kind: 'noop'; readonly why: string }
  | { readonly kind: 'apply'; readonly apply: () => void; readonly why: string }
  /** The design leaves it open here: the observed result decides (`opened` tells whether a chain was opened). */
  | { readonly kind: 'either'; readonly decide: (after: readonly ObservedRecord[], applied: boolean) => void; readonly why: string };

/**
 * The model's expectation for a membership event delivered at `t`, given the member's records as
 * observed right before it. Replays of applied events and events older than the newest applied
 * one are no-ops (DESIGN 2.9); everything else follows the member's intent.
 */
export function expectMembership(model: ModelState, m: MemberModel, event: MembershipInput, t: number, before: readonly ObservedRecord[]): Expectation {
  if (m.appliedEvents.has(event.event_id)) return { kind: 'noop', why: 'replay of an applied event' };
  if (m.newestAppliedAt !== undefined && event.occurredAt < m.newestAppliedAt) return { kind: 'noop', why: 'older than the newest applied event (reordered)' };
  learnChainIds(m, before);
  const chain = currentChain(m);
  const records = recordsOfChain(m, chain, before);
  const openRecords = before.filter((r) => OPEN_STATUSES.has(r.billing_status));
  const applied = (why: string, change: () => void): Expectation => ({
    kind: 'apply',
    why,
    apply: () => {
      change();
      m.appliedEvents.add(event.event_id);
      m.appliedLog.push({ id: event.event_id, at: event.occurredAt });
      m.newestAppliedAt = Math.max(m.newestAppliedAt ?? 0, event.occurredAt);
      model.log.push(`${m.userId}: ${event.type} applied at ${iso(t)} (${why})`);
    },
  });

  switch (event.type) {
    case 'NEW': {
      const plan = event.plan!;
      if (openRecords.length > 0) return { kind: 'noop', why: 'a chain is open: a second NEW opens nothing' };
      // A closed chain's record at that date does not stop it: the new chain's first period takes the next free instant.
      const open = () => openChain(m, plan, t);
      if (before.some((r) => r.billing_status === 'INACTIVE')) {
        // DESIGN 2.9 lists PENDING, FAILED, PAUSED, ACHSENT as open; an INACTIVE chain may count as open too.
        return { kind: 'either', why: 'only INACTIVE periods: open or not', decide: (after, applied) => { if (applied) decideOpened(model, m, event, after, plan, open); } };
      }
      return applied('no open chain: a new chain', open);
    }
    case 'PAUSE': {
      if (!chain || isEnded(chain)) return { kind: 'noop', why: 'no open chain or a cancel is requested' };
      slotsUntil(chain, t + 800 * DAY);
      if (chain.slots.some((s) => pauseNotSkipped(s, records))) return { kind: 'noop', why: 'already paused' };
      const pauseNow = () => {
        const slot = landingSlot(chain, t);
        slot.kind = 'pause';
        slot.pauseLeft = event.months!;
        slot.why = `PAUSE ${event.months} at ${iso(t)}`;
        truncateAfter(chain, slot);
      };
      // A banned member's pause may land (on a chain opened while banned) or not: the model follows what the system did.
      if (isBanned(m)) return { kind: 'either', why: 'pause while banned', decide: (_after, applied) => {
        if (!applied) return;
        pauseNow();
        markApplied(m, event);
        model.log.push(`${m.userId}: PAUSE while banned applied at ${iso(t)}`);
      } };
      if (openRecords.length === 0) {
        if (!before.some((r) => r.billing_status === 'INACTIVE')) return { kind: 'noop', why: 'nothing open to pause' };
        return { kind: 'either', why: 'pause of an INACTIVE chain', decide: (_after, applied) => {
          if (!applied) return;
          pauseNow();
          markApplied(m, event);
          model.log.push(`${m.userId}: PAUSE of an INACTIVE chain applied at ${iso(t)}`);
        } };
      }
      return applied(`pause ${event.months} month(s)`, pauseNow);
    }
    case 'UNPAUSE': {
      if (!chain) return { kind: 'noop', why: 'no chain' };
      slotsUntil(chain, t + 800 * DAY);
      const slot = chain.slots.find((s) => pauseNotSkipped(s, records));
      const unpauseNow = () => {
        slot!.kind = 'charge';
        delete slot!.pauseLeft;
        slot!.chargeableFrom = Math.max(slot!.date, t);
        slot!.why = `UNPAUSE at ${iso(t)}`;
        truncateAfter(chain, slot!);
      };
      // While banned the paused period is INACTIVE (the UNPAUSE finds nothing PAUSED), unless it was paused while banned.
      if (isBanned(m)) return { kind: 'either', why: 'unpause while banned', decide: (_after, applied) => {
        if (!applied || !slot) return;
        unpauseNow();
        markApplied(m, event);
      } };
      if (!slot) return { kind: 'noop', why: 'not paused' };
      return applied('unpause', unpauseNow);
    }
    case 'CANCEL':
    case 'CLOSEACCOUNT': {
      if (!chain) return { kind: 'noop', why: 'no chain' };
      if (isEnded(chain)) {
        // Already cancelled: closing may cancel the requested period now instead of at its date; either way nothing is owed.
        return { kind: 'either', why: 'a cancel is already requested', decide: (_after, applied) => {
          if (applied) markApplied(m, event);
        } };
      }
      if (openRecords.length === 0 && !before.some((r) => r.billing_status === 'INACTIVE')) return { kind: 'noop', why: 'nothing open to cancel' };
      // An INACTIVE (banned) chain is cancelled too: the member must not be charged after a REACTIVATE (DESIGN 2.9).
      return applied(event.type === 'CANCEL' ? 'cancel' : 'close account', () => {
        slotsUntil(chain, t + 800 * DAY);
        // A paused period owes nothing and can be cancelled at once, even when its date has come.
        const paused = chain.slots.find((s) => s.kind === 'pause' && s.waivedAt === undefined && records.get(s.date)?.billing_status === 'PAUSED');
        const slot = paused ?? landingSlot(chain, t);
        slot.kind = 'cancel';
        delete slot.pauseLeft;
        slot.why = `${event.type} at ${iso(t)}`;
        truncateAfter(chain, slot);
      });
    }
    case 'BAN':
      // A repeated BAN deactivates what opened since the first (a NEW or checkout while banned): either is fine.
      if (isBanned(m)) return { kind: 'either', why: 'already banned', decide: (_after, applied) => {
        if (applied) markApplied(m, event);
      } };
      // The ban is the account's (the harness tells the account directory at once): no charge from now on,
      // whether or not a period had to change (only PENDING, FAILED and PAUSED periods do).
      return { kind: 'either', why: 'ban', decide: (_after, applied) => {
        m.bans.push({ from: t });
        if (applied) markApplied(m, event);
        model.log.push(`${m.userId}: BAN at ${iso(t)}${applied ? '' : ' (account only)'}`);
      } };
    case 'REACTIVATE': {
      const ban = m.bans.find((b) => b.to === undefined);
      if (!ban) return { kind: 'noop', why: 'not banned' };
      return { kind: 'either', why: 'reactivate', decide: (_after, applied) => {
        ban.to = t;
        if (applied) markApplied(m, event);
        model.log.push(`${m.userId}: REACTIVATE at ${iso(t)}${applied ? '' : ' (account only)'}`);
      } };
    }
  }
}

function markApplied(m: MemberModel, event: MembershipInput): void {
  m.appliedEvents.add(event.event_id);
  m.appliedLog.push({ id: event.event_id, at: event.occurredAt });
  m.newestAppliedAt = Math.max(m.newestAppliedAt ?? 0, event.occurredAt);
}

function decideOpened(model: ModelState, m: MemberModel, event: MembershipInput, after: readonly ObservedRecord[], plan: Plan, open: () => void): void {
  if (after.some((r) => ms(r.billing_date) === plan.firstDate && r.billing_status === 'PENDING' && ms(r.created_date) >= (currentChain(m)?.openedAt ?? 0))) {
    open();
    markApplied(m, event);
    model.log.push(`${m.userId}: NEW opened a chain beside INACTIVE periods`);
  }
}

export function openChain(m: MemberModel, plan: Plan, t: number): Chain {
  const chain: Chain = {
    id: m.chains.length + 1,
    plan,
    openedAt: t,
    anchorDay: new Date(plan.firstDate).getUTCDate(),
    slots: [{ date: plan.firstDate, kind: 'charge', chargeableFrom: plan.firstDate, why: 'first period' }],
  };
  m.chains.push(chain);
  return chain;
}

/* ---------------- operator actions ---------------- */

/**
 * Links each model chain to the system's chain: the system's first period of it (its `chain_id` is
 * its own subscription_id) at the chain's first date, not linked to another chain yet. Two chains
 * can have a period at one date (a Friday plan after a closed one on the same rule): the system
 * keeps both records, a few nanoseconds apart, and the link tells whose each one is.
 */
export function learnChainIds(m: MemberModel, records: readonly ObservedRecord[]): void {
  const linked = new Set(m.chains.map((c) => c.systemId).filter((id) => id !== undefined));
  for (const chain of m.chains) {
    if (chain.systemId !== undefined) continue;
    const first = records
      .filter((r) => r.chain_id !== undefined && r.chain_id === r.subscription_id && !linked.has(r.chain_id) && ms(r.billing_date) === chain.plan.firstDate)
      .sort((a, b) => (a.billing_date < b.billing_date ? -1 : 1))[0];
    if (first) {
      chain.systemId = first.chain_id!;
      linked.add(first.chain_id!);
    }
  }
}

/** The chain and period a record is, by its chain when the model knows it, else by date (the newest chain with a period there). */
export function recordSlot(m: MemberModel, r: ObservedRecord): { chain: Chain; slot: Slot } | undefined {
  const date = ms(r.billing_date);
  const chain = r.chain_id !== undefined ? m.chains.find((c) => c.systemId === r.chain_id) : undefined;
  if (!chain) return chainSlotAt(m, date);
  const slot = slotsUntil(chain, date).find((s) => s.date === date);
  return slot ? { chain, slot } : undefined;
}

/** The records of `chain` (by `recordSlot`) by date. */
function recordsOfChain(m: MemberModel, chain: Chain | undefined, records: readonly ObservedRecord[]): Map<number, ObservedRecord> {
  return byDate(records.filter((r) => chain === undefined || recordSlot(m, r)?.chain === chain));
}

export function chainSlotAt(m: MemberModel, date: number): { chain: Chain; slot: Slot } | undefined {
  for (let i = m.chains.length - 1; i >= 0; i--) {
    const chain = m.chains[i]!;
    const slot = slotsUntil(chain, date).find((s) => s.date === date);
    if (slot) return { chain, slot };
  }
  return undefined;
}

/** A waive the API accepted: the period is written off from `t`; a paused or cancelled one keeps its kind (the rest of the pause, the end of the chain). */
export function applyWaive(model: ModelState, m: MemberModel, record: ObservedRecord, t: number): void {
  const date = ms(record.billing_date);
  const found = recordSlot(m, record);
  if (!found) return;
  found.slot.waivedAt = t;
  model.log.push(`${m.userId}: waive of ${iso(date)} at ${iso(t)}`);
}

/** A due-date change the API accepted: the period moves, the anchor follows the new date; the periods after follow it. */
export function applyDueDateChange(model: ModelState, m: MemberModel, record: ObservedRecord, to: number, t: number): void {
  const from = ms(record.billing_date);
  const found = recordSlot(m, record);
  if (!found) return;
  found.slot.date = to;
  found.slot.chargeableFrom = Math.max(to, found.slot.chargeableFrom === from ? to : found.slot.chargeableFrom);
  found.slot.why += `, moved to ${iso(to)} at ${iso(t)}`;
  found.chain.anchorDay = new Date(to).getUTCDate();
  truncateAfter(found.chain, found.slot);
  model.log.push(`${m.userId}: due date ${iso(from)} → ${iso(to)} at ${iso(t)}`);
}

/** Money came back for the period at `date` (ACH return or chargeback, card dispute, refund): it may be collected once more. */
export function applyReversal(model: ModelState, m: MemberModel, date: number, what: string): void {
  m.reversals.set(date, (m.reversals.get(date) ?? 0) + 1);
  model.log.push(`${m.userId}: reversal (${what}) of ${iso(date)}`);
}

/* ---------------- the invariants ---------------- */

export interface ObservedCharge {
  readonly user_id: string;
  readonly billing_date: string;
  readonly subscription_id: string;
  readonly amount_cents: number;
  readonly confirmation_id: string;
  readonly submitted_at: number;
  readonly rail: string;
  readonly idempotency_key: string;
}

export interface MemberObservation {
  readonly records: readonly ObservedRecord[];
  readonly charges: readonly ObservedCharge[];
  /** Records the API lists for the member (GET /v1/users/{id}/subscriptions): billing_date → billing_status as shown. */
  readonly visible: ReadonlyMap<number, string>;
  /**
   * When each idempotency key may first have reached a processor, as the system's evidence sees it (F11): presented,
   * handed to the processor port (a lost request looks the same), or named by the lease of a holder that died.
   */
  readonly firstPresentedAt?: ReadonlyMap<string, number>;
}

const CHARGED = new Set(['COMPLETED', 'ACHSENT', 'REFUNDED']);
/** Statuses after which the next period's record must exist (the period was attempted, skipped or written off). */
const ADVANCED = new Set(['COMPLETED', 'FAILED', 'ACHSENT', 'SKIPPED', 'WAIVED', 'REFUNDED', 'CANCELLED']);
const OWED_OR_COLLECTED = new Set(['PENDING', 'FAILED', 'ACHSENT', 'INACTIVE', 'COMPLETED', 'REFUNDED']);

/** Every violation of the invariants for one member at `now` (empty when the books are sound). */
export function violations(m: MemberModel, obs: MemberObservation, now: number): string[] {
  const problems: string[] = [];
  const who = m.userId;
  for (const chain of m.chains) slotsUntil(chain, now + 800 * DAY);
  learnChainIds(m, obs.records);
  // Whose period each record is (two chains can have one at the same date), and each charge by the record it was for.
  const owner = new Map(obs.records.map((r) => [r, recordSlot(m, r)]));
  const recordOf = new Map(obs.records.map((r) => [r.subscription_id, r]));
  const chargeSlot = (c: ObservedCharge) => {
    const r = recordOf.get(c.subscription_id);
    return r ? owner.get(r) : chainSlotAt(m, ms(c.billing_date));
  };

  // C1: at most one charge per period, unless the money came back and it was collected again.
  const perDate = new Map<string, ObservedCharge[]>();
  for (const c of obs.charges) {
    const key = `${chargeSlot(c)?.chain.id ?? '?'}|${ms(c.billing_date)}`;
    perDate.set(key, [...(perDate.get(key) ?? []), c]);
  }
  for (const list of perDate.values()) {
    const date = ms(list[0]!.billing_date);
    const allowed = 1 + (m.reversals.get(date) ?? 0);
    if (list.length > allowed) problems.push(`${who}: ${list.length} charges for the period of ${iso(date)} (allowed ${allowed}): ${list.map((c) => c.idempotency_key).join(', ')}`);
  }

  // C2: each charge is for a period that may be charged at that moment.
  for (const c of obs.charges) {
    const date = ms(c.billing_date);
    const found = chargeSlot(c);
    const at = `charge ${c.idempotency_key} for ${iso(date)} at ${iso(c.submitted_at)}`;
    if (!found) {
      problems.push(`${who}: ${at}: no period of the member's plan falls on that date`);
      continue;
    }
    const { slot } = found;
    if (slot.kind === 'pause') problems.push(`${who}: ${at}: the period is paused (${slot.why})`);
    else if (slot.kind === 'cancel') problems.push(`${who}: ${at}: the period was cancelled (${slot.why})`);
    else if (c.submitted_at < slot.chargeableFrom) problems.push(`${who}: ${at}: charged before it could be (${slot.why}, chargeable from ${iso(slot.chargeableFrom)})`);
    if (slot.waivedAt !== undefined && c.submitted_at > slot.waivedAt) problems.push(`${who}: ${at}: the period was waived at ${iso(slot.waivedAt)}`);
    // A key that may have reached the processor before the ban, its outcome unknown, is resent after it (F11: the period
    // stays owed, and the resend is its one charge, never a second; the price decisions.md names: when the request had
    // not arrived, that one resend charges a period owed before the ban). Only a key first handed over while banned is
    // a charge not owed. No path presents a period before its date, so evidence from before it (a dead lease naming a
    // period not yet due) is none: that charge is not owed.
    const firstPresented = obs.firstPresentedAt?.get(c.idempotency_key);
    const handedBeforeBan = firstPresented !== undefined && firstPresented >= date && !isBanned(m, firstPresented);
    if (isBanned(m, c.submitted_at) && !handedBeforeBan) problems.push(`${who}: ${at}: the member was banned then`);
    if (c.amount_cents !== found.chain.plan.amountCents) problems.push(`${who}: ${at}: amount ${c.amount_cents} but the plan is ${found.chain.plan.amountCents}`);
  }

  // C2r: every record is a period of the member's plan, and its status fits what the member asked for.
  for (const r of obs.records) {
    const date = ms(r.billing_date);
    const found = owner.get(r);
    if (!found) {
      problems.push(`${who}: a ${r.billing_status} record at ${r.billing_date} (${r.subscription_id}) is no period of the member's plan`);
      continue;
    }
    const { slot } = found;
    if (slot.kind !== 'charge' && (CHARGED.has(r.billing_status) || r.billing_status === 'FAILED')) {
      problems.push(`${who}: the ${slot.kind} period ${r.billing_date} (${slot.why}) is ${r.billing_status}`);
    }
    if (slot.kind === 'charge' && slot.waivedAt === undefined && (r.billing_status === 'CANCELLED' || r.billing_status === 'SKIPPED' || r.billing_status === 'WAIVED')) {
      problems.push(`${who}: the owed period ${r.billing_date} (${slot.why}) is ${r.billing_status}: a period was dropped`);
    }
    if (slot.kind === 'charge' && r.billing_status === 'PAUSED') {
      problems.push(`${who}: the owed period ${r.billing_date} (${slot.why}) is PAUSED`);
    }
    if (slot.kind === 'cancel' && r.billing_status === 'PENDING' && date <= now - DAY) {
      // A cancel-requested period is cancelled by the first collections run on or after its date; tolerated until then.
    }
  }

  // C3: no due period silently skipped: each due period is collected, written off, or still owed and visible.
  for (const chain of m.chains) {
    const records = byDate(obs.records.filter((r) => owner.get(r)?.chain === chain));
    let missingAllowed = false;
    for (let i = 0; i < chain.slots.length; i++) {
      const slot = chain.slots[i]!;
      if (slot.date > now) break;
      const rec = records.get(slot.date);
      if (!rec) {
        if (!missingAllowed) {
          const prev = i > 0 ? records.get(chain.slots[i - 1]!.date) : undefined;
          problems.push(`${who}: no record for the due period ${iso(slot.date)} (${slot.why}) although ${prev ? `the period before is ${prev.billing_status}` : 'it opens the chain'}`);
        }
        missingAllowed = true;
        continue;
      }
      if (!ADVANCED.has(rec.billing_status)) missingAllowed = true;
      if (slot.kind === 'charge' && slot.waivedAt === undefined) {
        if (!OWED_OR_COLLECTED.has(rec.billing_status)) continue; // reported by C2r
        const shown = obs.visible.get(slot.date);
        if (shown === undefined) problems.push(`${who}: the due period ${iso(slot.date)} (${rec.billing_status}) is not listed by the API`);
      }
    }
  }

  // C5: at most one open chain per member. A period reversed after it was collected (a return after settlement, a
  // chargeback, a dispute) owes again (FAILED) but opens no successor: a debt of its chain, not a second chain opened
  // (the one-chain rule binds where chains open, NEW and checkout, which the system refuses while it is FAILED;
  // long run 5 seed 555000021: a dispute of a closed chain's period after a NEW opened the next chain).
  const openChains = new Set<number>();
  for (const r of obs.records) {
    if (!OPEN_STATUSES.has(r.billing_status)) continue;
    if (r.billing_status === 'FAILED' && (m.reversals.get(ms(r.billing_date)) ?? 0) > 0) continue;
    const found = owner.get(r);
    if (found) openChains.add(found.chain.id);
  }
  if (openChains.size > 1) problems.push(`${who}: ${openChains.size} open chains (${[...openChains].join(', ')})`);

  // C6: what was charged matches what the records say.
  const byConfirmation = new Map(obs.charges.map((c) => [c.confirmation_id, c]));
  for (const r of obs.records) {
    if (r.billing_status !== 'COMPLETED' || r.payment_method === 'ach' || r.transaction_id === undefined) continue;
    const c = byConfirmation.get(r.transaction_id);
    if (!c) problems.push(`${who}: COMPLETED ${r.payment_method} period ${r.billing_date} names transaction ${r.transaction_id}, which the processor never confirmed`);
    else if (c.amount_cents !== r.amount_cents || ms(c.billing_date) !== ms(r.billing_date)) {
      problems.push(`${who}: COMPLETED period ${r.billing_date} names ${r.transaction_id}, a charge of ${c.amount_cents} for ${c.billing_date}`);
    }
  }
  for (const r of obs.records) {
    if (r.billing_status !== 'COMPLETED' || r.payment_method !== 'ach' || r.transaction_id === undefined) continue;
    if (!byConfirmation.has(r.transaction_id)) problems.push(`${who}: COMPLETED ach period ${r.billing_date} names ${r.transaction_id}, which the bank never accepted`);
  }
  return problems;
}

/* ---------------- D1: dunning's window and budget (DESIGN 5b) ---------------- */

/**
 * The model's own numbers: Smart Retries' 8 attempts within 14 days of the first decline, the last
 * slot taken by a run at most an hour late (runs come after the slot's instant, never on it).
 */
export const DUNNING_WINDOW = 14 * DAY + HOUR;
export const DUNNING_MAX_RETRIES = 7;

/** Who started a submission: an automatic path (schedule, retry, balance webhook, memberships catch-up), the customer, an operator. */
export type Initiator = 'merchant' | 'customer' | 'operator';

export interface ObservedPresentment {
  readonly user_id: string;
  readonly subscription_id: string;
  readonly idempotency_key: string;
  readonly at: number;
  readonly initiator: Initiator;
  /** The first decline of the retry_later cycle the period was in when the attempt read it; absent outside a cycle. */
  readonly cycle_start?: number;
}

/** Every automatic presentment outside its cycle's window or beyond its budget (a resent key is not a new presentment). */
export function dunningViolations(presentments: readonly ObservedPresentment[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const retries = new Map<string, number>();
  for (const p of presentments) {
    const fresh = !seen.has(p.idempotency_key);
    seen.add(p.idempotency_key);
    if (!fresh || p.initiator !== 'merchant' || p.cycle_start === undefined) continue;
    const at = `${p.user_id}: automatic presentment ${p.idempotency_key} at ${iso(p.at)}`;
    if (p.at > p.cycle_start + DUNNING_WINDOW) problems.push(`${at}: after the 14-day window (+1 h late-run grace) of the cycle first declined at ${iso(p.cycle_start)}`);
    const cycle = `${p.subscription_id}|${p.cycle_start}`;
    const n = (retries.get(cycle) ?? 0) + 1;
    retries.set(cycle, n);
    if (n > DUNNING_MAX_RETRIES) problems.push(`${at}: retry ${n} of the cycle first declined at ${iso(p.cycle_start)} (at most ${DUNNING_MAX_RETRIES})`);
  }
  return problems;
}
