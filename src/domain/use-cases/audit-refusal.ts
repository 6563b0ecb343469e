import { freshStamp, historyRowOf } from '../billing-record.js';
import type { InstrumentRefusal } from '../instruments/gate.js';
import type { BillingRecord } from '../records.js';
import type { UseCaseDeps } from './deps.js';
import type { ActorRequest } from './locked-subscription.js';

/**
 * A person's request refused by a hold or a ceiling (409) leaves an audit row naming the rule (DESIGN
 * 3.2): the period itself is not written, so the row is the period as read, stamped now.
 */
export async function auditRefusal(deps: Pick<UseCaseDeps, 'billing' | 'clock'>, read: BillingRecord, refusal: InstrumentRefusal, request: ActorRequest): Promise<void> {
  const row = historyRowOf(
    { ...read, last_run_date: freshStamp(deps.clock.now(), read.last_run_date), decided_by: refusal.decided_by },
    { billing_event: 'PAYMENT_REFUSED', actor: request.actor, reason: request.reason, run_id: request.runId },
  );
  await deps.billing.commit({ writes: [], history: [row] });
}
