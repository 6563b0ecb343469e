import { successorRecord } from '../../billing-record.js';
import { chainPeriodAt } from '../../chain.js';
import { isCollectibleAndDue } from '../../collectible.js';
import { UnbilledPeriodError } from '../../errors.js';
import { appliedEventIds, isCancelRequested, successorPlan } from '../../intent.js';
import { OPEN_CHAIN_STATUSES, OWED_OR_PAID_STATUSES, REACTIVATABLE_STATUSES } from '../../statuses.js';
import type { MembershipEvent } from '../../membership-events.js';
import type { BillingRecord } from '../../records.js';
import type { UseCaseDeps } from '../deps.js';
import type { ChangeContext } from './change.js';
import type { MembershipOutcome } from './outcome.js';

/** Records of the user read per event, newest first: covers every period a replay can still touch. */
const RECENT_RECORDS = 24;
/** Periods a user can fall behind by before a pause or cancel is refused rather than chained. */
const MAX_OWED_SUCCESSORS = 24;

export async function recentRecords(deps: UseCaseDeps, userId: string): Promise<BillingRecord[]> {
  return (await deps.billing.listByUser(userId, { limit: RECENT_RECORDS })).items;
}

/** Duplicate (the chain remembers this event) or stale (a newer event was already applied). */
export function replayOf(records: readonly BillingRecord[], event: MembershipEvent): MembershipOutcome | undefined {
  if (records.some((r) => appliedEventIds(r).includes(event.event_id))) return { kind: 'duplicate' };
  const newest = records.reduce<string | undefined>(
    (max, r) => (r.membership_event_at !== undefined && (max === undefined || r.membership_event_at > max) ? r.membership_event_at : max),
    undefined,
  );
  if (newest !== undefined && event.occurred_at < newest) return { kind: 'stale', newer_applied_at: newest };
  return undefined;
}

/** The open chain's newest period, else the newest; not by date: a new chain can start before an old one's end. */
export function chainHead(records: readonly BillingRecord[]): BillingRecord | undefined {
  return records.find((r) => OPEN_CHAIN_STATUSES.has(r.billing_status)) ?? records[0];
}

export const notYetDue = (record: BillingRecord, now: Date) => Date.parse(record.billing_date) > now.getTime();

/**
 * The periods after `newest` up to the first not yet due: the due ones are created owed (a pause or
 * cancel never erases a due period) and `change` lands on the future one.
 */
export function successorsUntilNotDue(ctx: ChangeContext, newest: BillingRecord, change: (record: BillingRecord) => BillingRecord): BillingRecord[] {
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

/** The head is open or just collected and its own chain has no next period yet: the change creates it. */
export function hasOpenPeriodWithoutSuccessor(
  newest: BillingRecord,
  heads: ReadonlySet<BillingRecord['billing_status']>,
  records: readonly BillingRecord[],
): boolean {
  if (!heads.has(newest.billing_status) || isCancelRequested(newest)) return false;
  const next = successorPlan(newest)?.billing_date;
  return next === undefined || chainPeriodAt(records, newest, next) === undefined;
}

export const PAUSABLE_HEADS = OWED_OR_PAID_STATUSES;
/** A banned member's cancel still counts: REACTIVATE must not charge what they cancelled. */
export const CANCELLABLE_HEADS: ReadonlySet<BillingRecord['billing_status']> = new Set([...OWED_OR_PAID_STATUSES, ...REACTIVATABLE_STATUSES]);
