import { applyBillingEvent } from '../billing-record.js';
import type { BillingRecord, Process } from '../records.js';
import { heldOnOf, isHoldRefusal } from './attempt.js';
import type { InstrumentRefusal } from './gate.js';

const HOLDS_OFF_SCHEDULE: ReadonlySet<Process> = new Set(['SCHEDULED', 'RETRY']);

/**
 * What a scheduled or retry attempt refused by the instrument writes, once (status kept, still owed, no
 * successor): a hold moves the period to the held index, a ceiling keys it in the due-index when the
 * window frees up. Undefined when nothing is written: another path, or the same refusal already written.
 */
export function refusedPeriod(read: BillingRecord, refusal: InstrumentRefusal, now: Date, process: Process): BillingRecord | undefined {
  if (!HOLDS_OFF_SCHEDULE.has(process) || carriesRefusal(read, refusal)) return undefined;
  if (isHoldRefusal(refusal)) {
    return applyBillingEvent(read, 'INSTRUMENT_HELD', now, { process, set: { held_on: heldOnOf(refusal, now), decided_by: refusal.decided_by } });
  }
  return applyBillingEvent(read, 'CEILING_REACHED', now, { process, set: { ceiling_until: refusal.free_at, decided_by: refusal.decided_by } });
}

/**
 * The period already carries this refusal: it was written before any later holder took the lock (a
 * repair resends, it never writes one), so a dead holder that read it was refused too.
 */
export function carriesRefusal(read: BillingRecord, refusal: InstrumentRefusal): boolean {
  return isHoldRefusal(refusal) ? read.held_on?.code === refusal.code : read.ceiling_until === refusal.free_at;
}
