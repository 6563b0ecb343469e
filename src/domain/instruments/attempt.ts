import { holdOf } from '../collectible.js';
import type { AccountSnapshot } from '../ports/account-directory.js';
import type { BillingRecord, DeclineClass, HeldOn, Process } from '../records.js';
import { formatInstant } from '../time.js';
import { CEILING_CODE, cardCeilingReached, presentmentsToKeep, type Initiated } from './ceilings.js';
import { HOLD_RULES, type HoldCode } from './holds.js';
import { currentInstrument, entryLimitReached, instrumentHold, recordHoldBinds, refusalOf, type InstrumentRefusal } from './gate.js';
import { entryIdOf, stripeCardInstrument, type Hold, type Instrument, type InstrumentRail, type InstrumentsItem, type InstrumentWrite, type Presentment } from './instrument.js';

export { cardInstrumentWrite, chargedInstrument } from './card-holds.js';

export { combineInstrumentWrites, type Instrument, type InstrumentsItem, type InstrumentWrite } from './instrument.js';
export { heldNoteOf } from './returns.js';
export type { InstrumentRefusal } from './gate.js';

/** What an attempt on a period learns about its instrument once the account is read (DESIGN 3.2). */

export interface InstrumentDecision {
  /** The instrument the payment would use; undefined when the directory names none for the rail. */
  readonly instrument: Instrument | undefined;
  readonly refusal?: InstrumentRefusal;
}

/** The customer asking (a manual pay): counted apart from merchant-initiated attempts, as Visa counts them. */
const CUSTOMER_INITIATED: ReadonlySet<Process> = new Set(['MANUAL']);

export function initiatedBy(process: Process): Initiated {
  return CUSTOMER_INITIATED.has(process) ? 'customer' : 'merchant';
}

/**
 * The hold that binds this period on the instrument it would use (the instrument's own, its
 * account's, the entry's re-presentment limit, or a hold the record carries from before
 * instruments), else a network ceiling the card has reached for this initiator.
 */
export function decideInstrument(read: BillingRecord, item: InstrumentsItem, account: Pick<AccountSnapshot, 'instruments'>, now: Date, process: Process): InstrumentDecision {
  const instrument = railInstrument(read.payment_method, account, item);
  const onInstrument = instrumentHold(item, instrument);
  if (onInstrument) return { instrument, refusal: onInstrument };
  if (read.payment_method === 'ach' && (read.ach_represented ?? 0) > 0) {
    const limit = entryLimitReached(item, entryIdOf({ kind: 'subscription', subscription_id: read.subscription_id }), now);
    if (limit) return { instrument, refusal: limit };
  }
  const recordHold = holdOf(read, now);
  if (recordHold && recordHoldBinds(recordInstrumentOf(read), recordHold, item, instrument)) return { instrument, refusal: refusalOf(recordHold, recordInstrumentOf(read)) };
  const ceiling = cardCeilingReached(item, instrument, initiatedBy(process), now);
  return ceiling ? { instrument, refusal: { code: CEILING_CODE, ...ceiling } } : { instrument };
}

/** A refusal that moves the period to the held index: a hold; a ceiling frees up with time alone. */
export function isHoldRefusal(refusal: InstrumentRefusal): refusal is InstrumentRefusal & { readonly code: HoldCode } {
  return refusal.code !== CEILING_CODE;
}

/** ACH and pinless as the account directory names them; a Stripe card as the instruments item stores it. */
function railInstrument(rail: InstrumentRail, account: Pick<AccountSnapshot, 'instruments'>, item: InstrumentsItem): Instrument | undefined {
  return rail === 'card' ? stripeCardInstrument(item.stripe_card) : currentInstrument(account, rail);
}

/** The instrument a record was on: its last payment's, or the one a hold kept it off. */
export function recordInstrumentOf(record: Pick<BillingRecord, 'instrument_id' | 'held_on'>): string | undefined {
  return record.instrument_id ?? record.held_on?.instrument_id;
}

/** Record holds a change of instrument can lift (the re-presentment limit never lifts). */
const LIFTABLE: ReadonlySet<string> = new Set(['ach_authorization_required', 'ach_account_invalid', 'payment_method_required']);

/**
 * The held index's sort key: a period a hold keeps off the schedule that a release or a change of
 * instrument can bring back, since when; undefined for every other record.
 */
export function heldIndexAt(record: BillingRecord): string | undefined {
  if (record.billing_status !== 'PENDING' && record.billing_status !== 'FAILED') return undefined;
  if (record.held_on) return record.held_on.since;
  const legacy = holdOf(record, new Date(Date.parse(record.last_run_date)));
  return legacy !== undefined && LIFTABLE.has(legacy) && record.payment_method !== 'card' ? record.last_run_date : undefined;
}

/** The period's record holds that a presentment on another instrument has lifted. */
export const LIFTED_RECORD_HOLDS = { ach_unauthorized: undefined, ach_blocked: undefined, held_on: undefined } as const;

/** Whether the presentment lifts the record's own holds (it was allowed on a changed instrument). */
export function liftsRecordHolds(read: BillingRecord): Partial<BillingRecord> {
  return read.ach_unauthorized || read.ach_blocked || read.held_on ? { ...LIFTED_RECORD_HOLDS } : {};
}

/** What a presentment adds to the instruments item: the instrument, its presentment (declined or not), the entry's count. */
export function presentmentWrite(
  read: BillingRecord,
  instrument: Instrument | undefined,
  now: Date,
  process: Process,
  outcome: { readonly decline_class?: DeclineClass | undefined; readonly item?: InstrumentsItem | undefined } = {},
): InstrumentWrite | undefined {
  if (!instrument) return undefined;
  const at = formatInstant(now);
  const entryId = entryIdOf({ kind: 'subscription', subscription_id: read.subscription_id });
  const achEntry = { entry_id: entryId, instrument_id: instrument.instrument_id, first_entry_at: read.ach_original_entry_date ?? at };
  const representing = instrument.rail === 'ach' && (read.ach_represented ?? 0) > 0;
  const presentment: Presentment = { at, initiated: initiatedBy(process), reference: entryId, ...(outcome.decline_class !== undefined ? { decline_class: outcome.decline_class } : {}) };
  return {
    user_id: read.user_id,
    seen: [{ ...instrument, first_seen_at: at }],
    presentments: [presentmentEntry(outcome.item, instrument.instrument_id, presentment, now)],
    ...(instrument.rail === 'ach' ? (representing ? { representments: [achEntry] } : { entries: [achEntry] }) : {}),
  };
}

/** Appended; when the writer read the list and some of it is past the windows, the list is replaced pruned. */
export function presentmentEntry(item: InstrumentsItem | undefined, instrumentId: string, presentment: Presentment, now: Date): NonNullable<InstrumentWrite['presentments']>[number] {
  const kept = item ? presentmentsToKeep(item.presentments[instrumentId] ?? [], now) : undefined;
  return { instrument_id: instrumentId, presentment, ...(kept ? { kept } : {}) };
}

/** A card declined as never to be approved holds the card (a Stripe card the attempt resolved is held in card-holds.ts). */
export function declineHoldWrite(read: BillingRecord, after: BillingRecord, instrument: Instrument | undefined, now: Date): InstrumentWrite | undefined {
  if (!instrument || instrument.rail === 'ach' || after.billing_status !== 'FAILED' || after.decline_class !== 'do_not_retry') return undefined;
  return { user_id: read.user_id, holds: [cardNeverHoldOn(instrument.instrument_id, after.decline_code, `subscription:${read.subscription_id}`, formatInstant(now))] };
}

/** The card's hold after a `do_not_retry` decline, whatever it paid for: a period or a loan payment. */
export function cardNeverHoldOn(instrumentId: string, declineCode: string | undefined, reference: string, since: string): Hold {
  const rule = HOLD_RULES.card_never;
  return {
    code: rule.code,
    class: rule.class,
    rule: rule.decided_by,
    instrument_id: instrumentId,
    since,
    set_by: { kind: 'decline', ...(declineCode !== undefined ? { decline_code: declineCode } : {}), reference },
  };
}

/** The held period's mark: what refused it, on which instrument, since when. */
export function heldOnOf(refusal: InstrumentRefusal & { readonly code: HoldCode }, now: Date): HeldOn {
  return { code: refusal.code, decided_by: refusal.decided_by, ...(refusal.instrument_id !== undefined ? { instrument_id: refusal.instrument_id } : {}), since: formatInstant(now) };
}
