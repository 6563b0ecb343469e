import { reactivationEvent } from '../../intent.js';
import type { BillingRecord } from '../../records.js';
import { changed, commitAll, type LockedContext } from './change.js';
import { collectDue } from './collect-due.js';
import type { MembershipOutcome } from './outcome.js';

export async function reactivate(ctx: LockedContext, records: readonly BillingRecord[]): Promise<MembershipOutcome> {
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
