import { applyIntentChange, historyRowOf, withIntent } from '../../billing-record.js';
import { rememberEvent, type MembershipIntent } from '../../intent.js';
import type { HeldLock } from '../../lock.js';
import type { MembershipEvent } from '../../membership-events.js';
import type { BillingWrite } from '../../ports/billing-ledger.js';
import type { BillingRecord, HistoryRow, UpdatedEvent } from '../../records.js';
import type { BillingEvent } from '../../transitions.js';
import type { UseCaseDeps } from '../deps.js';
import type { MembershipRequest } from './outcome.js';

/** The event being applied and the ports its writes go through. */
export interface ChangeContext {
  readonly deps: UseCaseDeps;
  readonly event: MembershipEvent;
}

export interface LockedContext extends ChangeContext {
  readonly request: MembershipRequest;
  readonly lock: HeldLock;
}

/** The after-image of a membership change on one record: its intent changed and the event remembered. */
export function changed(
  ctx: ChangeContext,
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

export function cancelRequested(ctx: ChangeContext, record: BillingRecord): BillingRecord {
  return withIntent(record, { ...rememberEvent(record, ctx.event), cancel_requested_at: ctx.event.occurred_at }, { updated_event: 'CANCEL_REQUESTED' });
}

/** One transaction, each write with its audit row; a create on another chain's key takes the next free instant. */
export async function commitAll(deps: UseCaseDeps, updates: readonly { read: BillingRecord; after: BillingRecord }[], creates: readonly BillingRecord[] = []): Promise<BillingRecord[]> {
  const writes: BillingWrite[] = [
    ...updates.map((u): BillingWrite => ({ kind: 'update', read: u.read, record: u.after })),
    ...creates.map((record): BillingWrite => ({ kind: 'create', record, displace: true })),
  ];
  const history: HistoryRow[] = [...updates.map((u) => historyRowOf(u.after)), ...creates.map((r) => historyRowOf(r))];
  await deps.billing.commit({ writes, history });
  return [...updates.map((u) => u.after), ...creates];
}
