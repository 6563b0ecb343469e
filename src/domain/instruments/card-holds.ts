import type { PaymentResult } from '../ports/processor.js';
import type { BillingRecord, DeclineClass } from '../records.js';
import { HOLD_RULES } from './holds.js';
import { stripeCardInstrument, type Hold, type Instrument, type InstrumentsItem, type InstrumentWrite, type StripeCard } from './instrument.js';

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

/**
 * The card's part of the attempt's write: a card the processor had to resolve is stored, so the next
 * attempt asks Stripe nothing (in place of a stored customer without a card, else only if a webhook
 * stored none meanwhile); a `do_not_retry` decline holds the card it declined.
 */
export function cardInstrumentWrite(
  read: BillingRecord,
  after: BillingRecord,
  result: PaymentResult,
  instruments: InstrumentsItem | undefined,
  instrument: Instrument | undefined,
): InstrumentWrite | undefined {
  if (result.outcome === 'submitted') return undefined;
  const card = result.resolved_card ?? instruments?.stripe_card;
  // A card the attempt knew is held by the instrument's own decline hold; only a resolved one is held here.
  const hold =
    !instrument && result.outcome === 'declined' && after.decline_class !== undefined
      ? cardNeverHold(card, { decline_code: after.decline_code ?? result.decline_code, decline_class: after.decline_class }, `subscription:${read.subscription_id}`, after.last_run_date)
      : undefined;
  if (!result.resolved_card && !hold) return undefined;
  return {
    user_id: read.user_id,
    ...(result.resolved_card ? { stripe_card: { card: result.resolved_card, replace: instruments?.stripe_card !== undefined } } : {}),
    ...(hold ? { holds: [hold] } : {}),
  };
}
