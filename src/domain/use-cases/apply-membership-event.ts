import { applyIntentChange, firstBillingRecord, historyRowOf, successorRecord, withIntent } from '../billing-record.js';
import { chainPeriodAt } from '../chain.js';
import { isCollectibleAndDue } from '../collectible.js';
import { mayHoldUnrecordedCharge } from '../takeover.js';
import { AlreadyExistsError, UnbilledPeriodError } from '../errors.js';
import { dueKey } from '../ladder.js';
import { appliedEventIds, hasOpenChain, isCancelRequested, reactivationEvent, successorPlan, rememberEvent, type MembershipIntent } from '../intent.js';
import { OPEN_CHAIN_STATUSES, OWED_OR_PAID_STATUSES, REACTIVATABLE_STATUSES } from '../statuses.js';
import { withUserLock, type HeldLock } from '../lock.js';
import type { MembershipEvent } from '../membership-events.js';
import type { BillingWrite } from '../ports.js';
import type { BillingRecord, HistoryRow, Process, UpdatedEvent } from '../records.js';
import type { BillingEvent } from '../transitions.js';
import { runCollectionAttempt, type AttemptDeps, type AttemptOutcome } from './collect.js';

export { membershipEventSchema, type MembershipEvent, type MembershipEventType } from '../membership-events.js';

/**
 * Apply a membership event (DESIGN 7, 2.9), under the user's lock (CLOSEACCOUNT takes none).
 *
 * - What the member asked for lands in the intent attributes (intent.ts), never in `updated_event`.
 * - Replays are no-ops: the chain remembers the ids of the events applied to it; an event whose id
 *   is remembered, or that is older than the newest applied one, is not applied again.
 * - PAUSE and CANCEL never erase a due, unbilled period (seed 001's `unbilled_period`): the due
 *   periods are attempted first, and the change lands on the first period that is not yet due
 *   (created now when it does not exist yet, so a later attempt's next-period create finds it).
 */

export type MembershipOutcome =
  | { readonly kind: 'applied'; readonly written: readonly BillingRecord[]; readonly attempts: readonly AttemptOutcome[] }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'stale'; readonly newer_applied_at: string }
  | { readonly kind: 'ignored'; readonly reason: IgnoredReason; readonly attempts: readonly AttemptOutcome[] };

export type IgnoredReason =
  | 'already_member'
  | 'period_exists'
  | 'no_open_period'
  | 'already_paused'
  | 'cancel_requested'
  | 'not_paused'
  | 'not_inactive';

export interface MembershipRequest {
  readonly event: MembershipEvent;
  /** Invocation id: the lock's owner_name. */
  readonly owner: string;
  readonly signal?: AbortSignal;
}

/** Records of the user read per event, newest first: covers every period a replay can still touch. */
const RECENT_RECORDS = 24;
/** Due periods attempted by one PAUSE, CANCEL or REACTIVATE before the change lands. */
const MAX_CATCH_UP = 12;
/** Periods a user can fall behind by before a pause or cancel is refused rather than chained. */
const MAX_OWED_SUCCESSORS = 24;

/**
 * Applies one membership event. Throws LockedError when the user's lock is held and
 * ConcurrentModificationError / TransientError when a write must be retried: the caller reports
 * the record as failed and the stream delivers it again.
 */
export async function applyMembershipEvent(deps: AttemptDeps, request: MembershipRequest): Promise<MembershipOutcome> {
  const { event } = request;
  // DESIGN 2.6: closing an account takes no lock; the version fence on each write is enough.
  if (event.type === 'CLOSEACCOUNT') return closeAccount(deps, event);
  return withUserLock(deps, event.user_id, request.owner, (lock) => underLock(deps, request, lock));
}

async function underLock(deps: AttemptDeps, request: MembershipRequest, lock: HeldLock): Promise<MembershipOutcome> {
  const { event } = request;
  const records = await recentRecords(deps, event.user_id);
  const replay = replayOf(records, event);
  if (replay) return replay;
  const ctx: Ctx = { deps, request, lock, event };
  switch (event.type) {
    case 'NEW':
      return newMember(ctx, records, event);
    case 'PAUSE':
      return pause(ctx, records, event.months);
    case 'UNPAUSE':
      return unpause(ctx, records);
    case 'CANCEL':
      return cancel(ctx, records);
    case 'REACTIVATE':
      return reactivate(ctx, records);
    case 'BAN':
      return ban(ctx, records);
    case 'CLOSEACCOUNT':
      return closeAccount(deps, event);
  }
}

/** What a stamped write needs: the ports and the event being applied. */
interface Stamping {
  readonly deps: AttemptDeps;
  readonly event: MembershipEvent;
}

interface Ctx extends Stamping {
  readonly request: MembershipRequest;
  readonly lock: HeldLock;
}

async function recentRecords(deps: AttemptDeps, userId: string): Promise<BillingRecord[]> {
  return (await deps.billing.listByUser(userId, { limit: RECENT_RECORDS })).items;
}

/** Duplicate (the chain remembers this event) or stale (a newer event was already applied). */
function replayOf(records: readonly BillingRecord[], event: MembershipEvent): MembershipOutcome | undefined {
  if (records.some((r) => appliedEventIds(r).includes(event.event_id))) return { kind: 'duplicate' };
  const newest = records.reduce<string | undefined>(
    (max, r) => (r.membership_event_at !== undefined && (max === undefined || r.membership_event_at > max) ? r.membership_event_at : max),
    undefined,
  );
  if (newest !== undefined && event.occurred_at < newest) return { kind: 'stale', newer_applied_at: newest };
  return undefined;
}

/** The after-image of a membership change on one record: its intent changed and the event remembered. */
function changed(
  ctx: Stamping,
  record: BillingRecord,
  billingEvent: BillingEvent,
  updatedEvent: UpdatedEvent,
  intentChange: Partial<MembershipIntent> = {},
): BillingRecord {
  const intent = withoutUndefined({ ...rememberEvent(record, ctx.event), ...intentChange });
  return applyIntentChange(record, billingEvent, ctx.deps.clock.now(), intent, { updatedEvent });
}

function withoutUndefined(intent: Partial<MembershipIntent>): MembershipIntent {
  return Object.fromEntries(Object.entries(intent).filter(([, v]) => v !== undefined)) as MembershipIntent;
}

/**
 * Commits updates (version-fenced) and creates in one transaction, each with its audit row. A
 * create whose key holds another chain's record (a closed chain's period on the same date) takes
 * the next free instant (chain.ts): a new chain's period is never lost to an old one's key.
 */
async function commitAll(deps: AttemptDeps, updates: readonly { read: BillingRecord; after: BillingRecord }[], creates: readonly BillingRecord[] = []): Promise<BillingRecord[]> {
  const writes: BillingWrite[] = [
    ...updates.map((u): BillingWrite => ({ kind: 'update', read: u.read, record: u.after })),
    ...creates.map((record): BillingWrite => ({ kind: 'create', record, displace: true })),
  ];
  const history: HistoryRow[] = [...updates.map((u) => historyRowOf(u.after)), ...creates.map((r) => historyRowOf(r))];
  await deps.billing.commit({ writes, history });
  return [...updates.map((u) => u.after), ...creates];
}

/**
 * Attempts every due period of the user, oldest first, through the one collection attempt under
 * the lock already held. A period the attempt cannot finish stays due and owed: the collections
 * run keeps trying it on its ladder. Returns the attempts and the user's records as they stand
 * after them, for the change that follows.
 *
 * `read`: the records this event already read under the same lock hold; reused until an attempt
 * runs (only a lock holder creates periods, and every update is fenced on the version it read,
 * so reading them again before anything was written here would return the same decision input).
 * Absent: read first (after this event wrote something itself).
 */
async function collectDue(
  ctx: Ctx,
  processFor: (record: BillingRecord) => Process,
  read?: BillingRecord[],
): Promise<{ attempts: AttemptOutcome[]; records: BillingRecord[] }> {
  const attempts: AttemptOutcome[] = [];
  const tried = new Set<string>();
  let records = read ?? (await recentRecords(ctx.deps, ctx.event.user_id));
  for (let i = 0; i < MAX_CATCH_UP; i += 1) {
    const now = ctx.deps.clock.now();
    const due = records
      .filter((r) => isCollectibleAndDue(r, now) && !tried.has(r.subscription_id))
      .sort((a, b) => (a.billing_date < b.billing_date ? -1 : 1))[0];
    if (!due) break;
    tried.add(due.subscription_id);
    // The lease names the period's work (its due key) before its attempt can reach the processor: a
    // dead holder's next one knows; once this attempt is recorded, the key no longer matches.
    await ctx.lock.declarePurpose(dueKey(due));
    attempts.push(
      await runCollectionAttempt(ctx.deps, {
        key: due,
        process: processFor(due),
        owner: ctx.request.owner,
        heldLock: ctx.lock,
        ...(ctx.request.signal ? { signal: ctx.request.signal } : {}),
      }),
    );
    records = await recentRecords(ctx.deps, ctx.event.user_id);
  }
  return { attempts, records };
}

const scheduledProcess = (r: BillingRecord): Process => (r.billing_status === 'FAILED' ? 'RETRY' : 'SCHEDULED');

async function newMember(ctx: Ctx, records: readonly BillingRecord[], event: Extract<MembershipEvent, { type: 'NEW' }>): Promise<MembershipOutcome> {
  // One billing chain per user (DESIGN 2.9): a second NEW while one is open would bill twice.
  if (hasOpenChain(records)) return { kind: 'ignored', reason: 'already_member', attempts: [] };
  const record = firstBillingRecord(
    {
      user_id: event.user_id,
      amount_cents: event.plan.amount,
      term: event.plan.term,
      tier: event.plan.tier,
      payment_method: event.plan.payment_method,
      account_last_four: event.plan.account_last_four,
      first_billing_date: event.plan.first_billing_date,
      friday_billing: event.plan.friday_billing,
      membership_event: event,
    },
    ctx.deps.clock.now(),
    ctx.deps.ids,
  );
  try {
    return { kind: 'applied', written: await commitAll(ctx.deps, [], [record]), attempts: [] };
  } catch (error) {
    if (!(error instanceof AlreadyExistsError)) throw error;
    const existing = await ctx.deps.billing.get(record);
    if (existing && appliedEventIds(existing).includes(event.event_id)) return { kind: 'duplicate' };
    return { kind: 'ignored', reason: 'period_exists', attempts: [] };
  }
}

/**
 * The period a PAUSE or CANCEL lands after: the newest period of the user's open chain, or the
 * newest period when no chain is open. Never date order across chains: a new chain can start
 * before a closed one's last period.
 */
function chainHead(records: readonly BillingRecord[]): BillingRecord | undefined {
  return records.find((r) => OPEN_CHAIN_STATUSES.has(r.billing_status)) ?? records[0];
}

const notYetDue = (record: BillingRecord, now: Date) => Date.parse(record.billing_date) > now.getTime();

async function pause(ctx: Ctx, read: BillingRecord[], months: number): Promise<MembershipOutcome> {
  const { attempts, records } = await collectDue(ctx, scheduledProcess, read);
  const newest = chainHead(records);
  const now = ctx.deps.clock.now();
  if (!newest) return { kind: 'ignored', reason: 'no_open_period', attempts };
  if (isCancelRequested(newest)) return { kind: 'ignored', reason: 'cancel_requested', attempts };
  if (newest.billing_status === 'PAUSED') return { kind: 'ignored', reason: 'already_paused', attempts };
  if (newest.billing_status === 'PENDING' && !isCollectibleAndDue(newest, now)) {
    const after = changed(ctx, newest, 'PAUSED', 'PAUSED', { paused_months: months });
    return { kind: 'applied', written: await commitAll(ctx.deps, [{ read: newest, after }]), attempts };
  }
  if (hasOpenPeriodWithoutSuccessor(newest, PAUSABLE_HEADS, records)) {
    const chain = successorsUntilNotDue(ctx, newest, (record) =>
      withIntent(record, { ...rememberEvent(record, ctx.event), paused_months: months }, { billing_status: 'PAUSED', updated_event: 'PAUSED' }),
    );
    return { kind: 'applied', written: await commitAll(ctx.deps, [], chain), attempts };
  }
  return { kind: 'ignored', reason: 'no_open_period', attempts };
}

/**
 * The periods after `newest` up to the first one not yet due: those already due are owed and
 * created PENDING (a pause or cancel never erases a due period); `change` lands on the first
 * future one. A user behind by more than MAX_OWED_SUCCESSORS periods is refused.
 */
function successorsUntilNotDue(ctx: Stamping, newest: BillingRecord, change: (record: BillingRecord) => BillingRecord): BillingRecord[] {
  const now = ctx.deps.clock.now();
  const chain: BillingRecord[] = [];
  let current = newest;
  for (let i = 0; i < MAX_OWED_SUCCESSORS; i++) {
    const owed = successorRecord(current, now, ctx.deps.ids, current.last_run_date);
    if (!owed) return chain;
    if (!isCollectibleAndDue(owed, now)) {
      chain.push(change(owed));
      return chain;
    }
    chain.push(owed);
    current = owed;
  }
  throw new UnbilledPeriodError(`user ${newest.user_id} owes more than ${MAX_OWED_SUCCESSORS} periods; bill or waive them first`);
}

/**
 * The newest record is still owed or just collected and no next period exists yet (a due period
 * the attempt could not finish): the change goes on that next period, created now.
 */
function hasOpenPeriodWithoutSuccessor(
  newest: BillingRecord,
  heads: ReadonlySet<BillingRecord['billing_status']>,
  records: readonly BillingRecord[],
): boolean {
  if (!heads.has(newest.billing_status) || isCancelRequested(newest)) return false;
  // The head's next period exists but is not open (cancelled, skipped, collected): nothing is left to change.
  // Only the head's own chain counts: another chain's record on that date is not its next period (chain.ts).
  const next = successorPlan(newest)?.billing_date;
  return next === undefined || chainPeriodAt(records, newest, next) === undefined;
}

const PAUSABLE_HEADS = OWED_OR_PAID_STATUSES;
/** A banned member's cancel still counts: REACTIVATE must not charge what they cancelled. */
const CANCELLABLE_HEADS: ReadonlySet<BillingRecord['billing_status']> = new Set([...OWED_OR_PAID_STATUSES, ...REACTIVATABLE_STATUSES]);

function cancelRequested(ctx: Stamping, record: BillingRecord): BillingRecord {
  return withIntent(record, { ...rememberEvent(record, ctx.event), cancel_requested_at: ctx.event.occurred_at }, { updated_event: 'CANCEL_REQUESTED' });
}

async function cancel(ctx: Ctx, read: BillingRecord[]): Promise<MembershipOutcome> {
  const { attempts, records } = await collectDue(ctx, scheduledProcess, read);
  const newest = chainHead(records);
  const now = ctx.deps.clock.now();
  if (!newest) return { kind: 'ignored', reason: 'no_open_period', attempts };
  if (newest.billing_status === 'PAUSED') {
    // A paused period owes nothing: cancel it now (the pause run would otherwise skip past it).
    const after = changed(ctx, newest, 'CANCEL_COMPLETED', 'CANCEL_COMPLETED', { paused_months: undefined });
    return { kind: 'applied', written: await commitAll(ctx.deps, [{ read: newest, after }]), attempts };
  }
  if (isCancelRequested(newest)) return { kind: 'ignored', reason: 'cancel_requested', attempts };
  if ((newest.billing_status === 'PENDING' || newest.billing_status === 'INACTIVE') && notYetDue(newest, now)) {
    const after = changed(ctx, newest, 'CANCEL_REQUESTED', 'CANCEL_REQUESTED', { cancel_requested_at: ctx.event.occurred_at });
    return { kind: 'applied', written: await commitAll(ctx.deps, [{ read: newest, after }]), attempts };
  }
  if (hasOpenPeriodWithoutSuccessor(newest, CANCELLABLE_HEADS, records)) {
    const chain = successorsUntilNotDue(ctx, newest, (record) => cancelRequested(ctx, record));
    return { kind: 'applied', written: await commitAll(ctx.deps, [], chain), attempts };
  }
  return { kind: 'ignored', reason: 'no_open_period', attempts };
}

async function unpause(ctx: Ctx, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
  const paused = records.filter((r) => r.billing_status === 'PAUSED');
  if (paused.length === 0) return { kind: 'ignored', reason: 'not_paused', attempts: [] };
  const updates = paused.map((read) => ({ read, after: changed(ctx, read, 'UNPAUSED', 'UNPAUSED', { paused_months: undefined }) }));
  return { kind: 'applied', written: await commitAll(ctx.deps, updates), attempts: [] };
}

async function reactivate(ctx: Ctx, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
  // The newest run of INACTIVE records is what the deactivation stopped; older ones were dealt with before.
  const inactive: BillingRecord[] = [];
  for (const r of records) {
    if (r.billing_status !== 'INACTIVE') break;
    inactive.push(r);
  }
  if (inactive.length === 0) return { kind: 'ignored', reason: 'not_inactive', attempts: [] };
  const updates = inactive.map((read) => ({ read, after: changed(ctx, read, reactivationEvent(read), 'REACTIVATED') }));
  const written = await commitAll(ctx.deps, updates);
  const { attempts } = await collectDue(ctx, () => 'REACTIVATION');
  return { kind: 'applied', written, attempts };
}

/**
 * BAN deactivates the user's open periods, except one whose current key the processor may hold (an
 * attempt presented it while the member was active and its outcome is not recorded): that one stays
 * owed, so the ladder's retry resends the same key and records what the processor took (F11); the
 * ban lands on its next period instead (created INACTIVE now, so the retry's next-period create finds
 * it).
 */
async function ban(ctx: Ctx, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
  const open = records.filter((r) => r.billing_status === 'PENDING' || r.billing_status === 'FAILED' || r.billing_status === 'PAUSED');
  if (open.length === 0) return { kind: 'ignored', reason: 'no_open_period', attempts: [] };
  const unresolved = open.filter((r) => mayHoldUnrecordedCharge(r, ctx.lock.takenOver));
  const updates = open.filter((r) => !unresolved.includes(r)).map((read) => ({ read, after: changed(ctx, read, 'USER_NOT_ACTIVE', 'USER_BANNED') }));
  const creates = unresolved.flatMap((held) => {
    if (!hasOpenPeriodWithoutSuccessor(held, PAUSABLE_HEADS, records)) return [];
    const next = successorRecord(held, ctx.deps.clock.now(), ctx.deps.ids, held.last_run_date);
    return next ? [{ ...withIntent(next, rememberEvent(next, ctx.event), { updated_event: 'USER_BANNED' }), billing_status: 'INACTIVE' as const }] : [];
  });
  if (updates.length === 0 && creates.length === 0) return { kind: 'ignored', reason: 'no_open_period', attempts: [] };
  // A dead holder's lease naming the unresolved period is handed back when the lock is left (withUserLock).
  return { kind: 'applied', written: await commitAll(ctx.deps, updates, creates), attempts: [] };
}

/**
 * CLOSEACCOUNT (no lock, DESIGN 2.6): periods that are not yet due and paused periods are
 * cancelled, each write fenced on the version it read. A due period stays owed; if it has no next
 * period yet, that one is created with a cancel request so a later collection does not renew.
 */
async function closeAccount(deps: AttemptDeps, event: Extract<MembershipEvent, { type: 'CLOSEACCOUNT' }>): Promise<MembershipOutcome> {
  const records = await recentRecords(deps, event.user_id);
  const replay = replayOf(records, event);
  if (replay) return replay;
  const now = deps.clock.now();
  const ctx: Stamping = { deps, event };
  const targets = records.filter(
    (r) => r.billing_status === 'PAUSED' || ((r.billing_status === 'PENDING' || r.billing_status === 'INACTIVE') && notYetDue(r, now)),
  );
  const updates = targets.map((read) => ({
    read,
    after: changed(ctx, read, 'ACCOUNT_CLOSED', 'ACCOUNT_CLOSED', { paused_months: undefined }),
  }));
  const newest = chainHead(records);
  const owedHead = newest !== undefined && !notYetDue(newest, now) && hasOpenPeriodWithoutSuccessor(newest, CANCELLABLE_HEADS, records) && newest.billing_status !== 'COMPLETED';
  const creates = owedHead ? successorsUntilNotDue(ctx, newest, (record) => cancelRequested(ctx, record)) : [];
  if (updates.length === 0 && creates.length === 0) return { kind: 'ignored', reason: 'no_open_period', attempts: [] };
  return { kind: 'applied', written: await commitAll(deps, updates, creates), attempts: [] };
}
