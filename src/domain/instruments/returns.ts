import { HOLD_RULES, holdClassOfReturn } from './holds.js';
import { achAccountOf, type Hold, type InstrumentWrite } from './instrument.js';

/** What an ACH return sets on the instrument its entry debited (DESIGN 4): the class's hold, or nothing. */
export function returnHoldWrite(
  userId: string,
  instrumentId: string | undefined,
  returned: { readonly return_code: string; readonly event_id: string; readonly confirmation_id: string; readonly reference: string },
  since: string,
): InstrumentWrite | undefined {
  const holdClass = holdClassOfReturn(returned.return_code);
  // A record from before instruments names none: its own hold binds it, never copied onto an account.
  if (instrumentId === undefined || holdClass === undefined || holdClass === 'ach_represent') return undefined;
  const rule = HOLD_RULES[holdClass];
  const account = achAccountOf(instrumentId);
  const hold: Hold = {
    code: rule.code,
    class: rule.class,
    rule: rule.decided_by,
    instrument_id: instrumentId,
    ...(account !== undefined ? { account_id: account } : {}),
    since,
    set_by: { kind: 'ach_return', return_code: returned.return_code, event_id: returned.event_id, confirmation_id: returned.confirmation_id, reference: returned.reference },
  };
  return { user_id: userId, holds: [hold] };
}

/** The audit row's note of a hold it set, which publishes `billing.instrument.held` (DESIGN 11). */
export function heldNoteOf(write: InstrumentWrite | undefined): { held_instrument_id?: string; hold_code?: Hold['code']; hold_since?: string } {
  const hold = write?.holds?.[0];
  return hold ? { held_instrument_id: hold.instrument_id, hold_code: hold.code, hold_since: hold.since } : {};
}
