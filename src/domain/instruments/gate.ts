import { MAX_ACH_REPRESENTMENTS, pastRepresentmentWindow } from '../nacha.js';
import type { AccountSnapshot } from '../ports/account-directory.js';
import { CEILING_CODE, CEILING_MESSAGE } from './ceilings.js';
import { HOLD_MESSAGES, ruleOfCode, type DecidedBy, type HoldCode } from './holds.js';
import { achInstrumentId, allHolds, cardInstrumentId, type Hold, type Instrument, type InstrumentRail, type InstrumentsItem } from './instrument.js';

/** Which hold, if any, binds the instrument a payment would use (DESIGN 3.1, 3.2): every path asks this. */

/** A refusal's 409 code: a hold's, or a network ceiling's. */
export type RefusalCode = HoldCode | typeof CEILING_CODE;

export interface InstrumentRefusal {
  readonly code: RefusalCode;
  readonly decided_by: DecidedBy;
  /** The instrument refused; absent when the hold is a record's own, written before instruments. */
  readonly instrument_id?: string;
  readonly since?: string;
  /** A ceiling: when it frees up (a hold has no such instant). */
  readonly free_at?: string;
}

/** The 409's customer-safe text. */
export function refusalMessage(code: RefusalCode): string {
  return code === CEILING_CODE ? CEILING_MESSAGE : HOLD_MESSAGES[code];
}

/** The user's current instrument on a rail, as the account directory names it; undefined when it names none. */
export function currentInstrument(account: Pick<AccountSnapshot, 'instruments'>, rail: InstrumentRail): Instrument | undefined {
  const ach = account.instruments?.ach;
  if (rail === 'ach' && ach) {
    return {
      instrument_id: achInstrumentId(ach.account_id, ach.authorization_id),
      rail: 'ach',
      account_id: ach.account_id,
      authorization_id: ach.authorization_id,
      ...(ach.authorized_at !== undefined ? { authorized_at: ach.authorized_at } : {}),
    };
  }
  const pinless = account.instruments?.pinless;
  if (rail === 'pinless' && pinless) {
    return { instrument_id: cardInstrumentId('pinless', pinless.fingerprint), rail: 'pinless', fingerprint: pinless.fingerprint, ...(pinless.brand !== undefined ? { brand: pinless.brand } : {}) };
  }
  return undefined;
}

/** A hold on this instrument, or on its bank account (an account hold binds every authorization on it). */
export function instrumentHold(item: InstrumentsItem, instrument: Instrument | undefined): InstrumentRefusal | undefined {
  if (!instrument) return undefined;
  const hold = allHolds(item).find((h) => binds(h, instrument));
  return hold && { code: hold.code, decided_by: hold.rule, instrument_id: instrument.instrument_id, since: hold.since };
}

function binds(hold: Hold, instrument: Instrument): boolean {
  if (hold.class === 'ach_represent') return false;
  if (hold.instrument_id === instrument.instrument_id) return true;
  return hold.class === 'ach_account' && instrument.rail === 'ach' && hold.account_id !== undefined && hold.account_id === instrument.account_id;
}

/** A re-presentment of an entry past NACHA's limit, counted on the instruments item (any path, any writer). */
export function entryLimitReached(item: InstrumentsItem, entryId: string, now: Date): InstrumentRefusal | undefined {
  const entry = item.entries[entryId];
  if (!entry || (entry.represented < MAX_ACH_REPRESENTMENTS && !pastRepresentmentWindow(entry.first_entry_at, now))) return undefined;
  return { code: 'ach_representment_limit', decided_by: ruleOfCode('ach_representment_limit').decided_by, instrument_id: entry.instrument_id };
}

/**
 * A hold a record carries from before instruments (or from its own entry): binding while the user's
 * instrument on that rail is the one the record was on, or when the record names none.
 */
export function recordHoldBinds(recordInstrumentId: string | undefined, code: HoldCode, item: InstrumentsItem, current: Instrument | undefined): boolean {
  if (code === 'ach_representment_limit' || recordInstrumentId === undefined || current === undefined) return true;
  if (recordInstrumentId === current.instrument_id) return true;
  // An account hold binds another authorization on the same account.
  return code === 'ach_account_invalid' && item.instruments[recordInstrumentId]?.account_id === current.account_id && current.account_id !== undefined;
}

export function refusalOf(code: HoldCode, instrumentId?: string): InstrumentRefusal {
  return { code, decided_by: ruleOfCode(code).decided_by, ...(instrumentId !== undefined ? { instrument_id: instrumentId } : {}) };
}
