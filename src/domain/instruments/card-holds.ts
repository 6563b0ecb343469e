import type { DeclineClass } from '../records.js';
import { instrumentHold, type InstrumentRefusal } from './gate.js';
import { HOLD_RULES } from './holds.js';
import { stripeCardInstrument, type Hold, type InstrumentsItem, type StripeCard } from './instrument.js';

/** Holds on the user's Stripe card (DESIGN 3.2): they bind every period and path that would charge that card. */

/** A hold on the stored card refuses the charge; a card with an unknown fingerprint is charged (Stripe answers for it). */
export function cardRefusal(item: InstrumentsItem | undefined): InstrumentRefusal | undefined {
  return item ? instrumentHold(item, stripeCardInstrument(item.stripe_card)) : undefined;
}

/** A `do_not_retry` decline holds the card it declined until another card is stored. */
export function cardNeverHold(
  card: StripeCard | undefined,
  decline: { readonly decline_code: string; readonly decline_class: DeclineClass },
  reference: string,
  now: string,
): Hold | undefined {
  const instrument = stripeCardInstrument(card);
  if (!instrument || decline.decline_class !== 'do_not_retry') return undefined;
  const rule = HOLD_RULES.card_never;
  return {
    code: rule.code,
    class: rule.class,
    rule: rule.decided_by,
    instrument_id: instrument.instrument_id,
    since: now,
    set_by: { kind: 'decline', decline_code: decline.decline_code, reference },
  };
}
