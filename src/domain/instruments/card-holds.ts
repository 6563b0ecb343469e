import type { DeclineClass } from '../records.js';
import { HOLD_RULES } from './holds.js';
import { stripeCardInstrument, type Hold, type StripeCard } from './instrument.js';

/** A hold on a Stripe card the attempt resolved itself (DESIGN 3.2): a stored card is held by the instrument's own decline hold. */

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
