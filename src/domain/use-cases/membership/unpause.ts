import type { BillingRecord } from '../../records.js';
import { changed, commitAll, type LockedContext } from './change.js';
import type { MembershipOutcome } from './outcome.js';

export async function unpause(ctx: LockedContext, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
  const paused = records.filter((r) => r.billing_status === 'PAUSED');
  if (paused.length === 0) return { kind: 'ignored', reason: 'not_paused', attempts: [] };
  const updates = paused.map((read) => ({ read, after: changed(ctx, read, 'UNPAUSED', 'UNPAUSED', { paused_months: undefined }) }));
  return { kind: 'applied', written: await commitAll(ctx.deps, updates), attempts: [] };
}
