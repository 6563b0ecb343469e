import { cardNetworkOf } from '../declines.js';
import type { CardNetwork } from '../records.js';
import { formatInstant } from '../time.js';
import type { DecidedBy } from './holds.js';
import type { Instrument, InstrumentsItem, Presentment } from './instrument.js';

/**
 * The card networks' reattempt ceilings on one card (DESIGN 3.2, 5b), counted from the declined
 * presentments on the instruments item: subscriptions and loans together, merchant- and
 * customer-initiated apart, as Visa counts them.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
/** The longest window any ceiling looks at: presentments older than this are pruned from the item. */
export const PRESENTMENT_WINDOW_MS = 30 * DAY_MS;

/** The 409 code of a refusal by a ceiling; `decided_by` names which one. */
export const CEILING_CODE = 'network_ceiling';
export const CEILING_MESSAGE = 'this card was declined as often as its card network allows within the window: it is not charged again before the window frees up';

export interface CardCeiling {
  readonly windowMs: number;
  readonly max: number;
  readonly decided_by: DecidedBy;
}

/** A card whose network is not known gets the stricter of both networks' ceilings, named by the rule it borrows. */
export const CARD_CEILINGS: Readonly<Record<CardNetwork, readonly CardCeiling[]>> = {
  visa: [{ windowMs: 30 * DAY_MS, max: 20, decided_by: 'visa.ceiling_30d' }],
  mastercard: [
    { windowMs: DAY_MS, max: 10, decided_by: 'mastercard.ceiling_24h' },
    { windowMs: 30 * DAY_MS, max: 35, decided_by: 'mastercard.ceiling_30d' },
  ],
  other: [
    { windowMs: DAY_MS, max: 10, decided_by: 'mastercard.ceiling_24h' },
    { windowMs: 30 * DAY_MS, max: 20, decided_by: 'visa.ceiling_30d' },
  ],
};

export type Initiated = Presentment['initiated'];

export interface CeilingReached {
  readonly decided_by: DecidedBy;
  readonly instrument_id: string;
  /** The first instant one more presentment of this initiator stays within every ceiling. */
  readonly free_at: string;
}

/**
 * Whether one more presentment of the card by this initiator would pass a ceiling at `now`. A Visa
 * category-1 decline (our `do_not_retry` class) allows none by anyone while it is in the window.
 */
export function cardCeilingReached(item: InstrumentsItem, instrument: Instrument | undefined, initiated: Initiated, now: Date): CeilingReached | undefined {
  if (!instrument || instrument.rail === 'ach') return undefined;
  const at = now.getTime();
  const declines = declinesInWindow(item.presentments[instrument.instrument_id] ?? [], at);
  const network = cardNetworkOf(instrument.brand) ?? 'other';
  const base = { instrument_id: instrument.instrument_id };
  if (network === 'visa') {
    const category1 = declines.filter((d) => d.decline_class === 'do_not_retry');
    if (category1.length > 0) return { ...base, decided_by: 'visa.category1', free_at: formatInstant(new Date(category1[category1.length - 1]!.t + PRESENTMENT_WINDOW_MS)) };
  }
  const own = declines.filter((d) => d.initiated === initiated).map((d) => d.t);
  let reached: { decided_by: DecidedBy; free: number } | undefined;
  for (const ceiling of CARD_CEILINGS[network]) {
    const inWindow = own.filter((t) => t > at - ceiling.windowMs);
    if (inWindow.length < ceiling.max) continue;
    // One more is allowed once fewer than `max` declines lie in the window ending then.
    const free = inWindow[inWindow.length - ceiling.max]! + ceiling.windowMs;
    if (!reached || free > reached.free) reached = { decided_by: ceiling.decided_by, free };
  }
  return reached && { ...base, decided_by: reached.decided_by, free_at: formatInstant(new Date(reached.free)) };
}

function declinesInWindow(list: readonly Presentment[], at: number): { t: number; initiated: Initiated; decline_class: NonNullable<Presentment['decline_class']> }[] {
  return list
    .filter((p): p is Presentment & { decline_class: NonNullable<Presentment['decline_class']> } => p.decline_class !== undefined)
    .map((p) => ({ t: Date.parse(p.at), initiated: p.initiated, decline_class: p.decline_class }))
    .filter((d) => d.t > at - PRESENTMENT_WINDOW_MS && d.t <= at)
    .sort((a, b) => a.t - b.t);
}

/** The presentments still inside the longest window: what a write keeps when it replaces the list. */
export function presentmentsToKeep(list: readonly Presentment[], now: Date): Presentment[] | undefined {
  const from = now.getTime() - PRESENTMENT_WINDOW_MS;
  const kept = list.filter((p) => Date.parse(p.at) > from);
  return kept.length === list.length ? undefined : kept;
}
